import { InvalidOptionsError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import {
  type ApprovalFormOptions,
  type ApprovalMessages,
  approvalFormHandler,
  approvalPage,
  approverOf,
  type DeviceApproveResult,
  type DeviceAuthorizationService,
  userCodeHash,
} from "../oauth2/index.ts";
import { approverRoom } from "./grant-approval.ts";
import type { AgentRuntime } from "./runtime.ts";

/** What a human is asked to approve: the agent and the capabilities it wants. */
export interface AgentApprovalRequest {
  readonly principalId: string;
  readonly agentName?: string;
  readonly capabilities: readonly { readonly name: string; readonly description: string }[];
  /** As shown, `XXXX-XXXX`. */
  readonly userCode: string;
  readonly expiresAt: number;
  /**
   * Proof that this human was shown this request: put it in the approval
   * form as the hidden field `review`. An approval without it is refused.
   */
  readonly reviewToken: string;
}

export type AgentApprovalLookup =
  | ({ readonly ok: true } & AgentApprovalRequest)
  | {
      readonly ok: false;
      /**
       * `unconfirmed`: the code came in a link or from another site; show it
       * pre-filled (`userCode`) in a form the human submits. Nothing was
       * looked up or counted.
       */
      readonly reason: "invalid_code" | "expired" | "too_many_attempts" | "unconfirmed";
      readonly retryAfterSeconds?: number;
      readonly userCode?: string;
    };

/**
 * Options of `agentApproveHandler`. With `agentAuth`, set `approvalResponse`
 * there instead: `agents.approve` is this handler.
 *
 * @example
 * ```ts
 * import { agentApproveHandler } from "portcullis/agentauth";
 *
 * // `agents` is what `await agentAuth({...})` returned.
 * const approve = agentApproveHandler(agents.runtime, agents.service, {
 *   respond: (result) =>
 *     result.action === "approve" && result.outcome.ok
 *       ? Response.redirect("https://notes.example.com/agents", 303)
 *       : new Response("The agent was not approved.", { status: 400 }),
 * });
 * ```
 */
export interface AgentApproveOptions {
  /**
   * Builds the page answering the post.
   *
   * @default a minimal HTML page with the right status
   */
  readonly respond?: (
    result: DeviceApproveResult,
    request: Request,
  ) => Response | Promise<Response>;
  /**
   * Largest form body read, in bytes (512 or more).
   *
   * @default 8192
   */
  readonly maxBodyBytes?: number;
}

/**
 * What a user code asks for, for the approval page to show before the human
 * decides, with the review token its approval form must carry. Wrong codes
 * count against the approver's budget like approvals; a GET that is not a
 * same-origin submission answers `unconfirmed` (see
 * `DeviceAuthorizationService.lookup`).
 */
export async function describeAgentRequest(
  runtime: AgentRuntime,
  service: DeviceAuthorizationService,
  ctx: Request,
  userCode: unknown,
): Promise<AgentApprovalLookup> {
  const found = await service.lookup(ctx, userCode);
  if (!found.ok) return found;
  const hash = (await userCodeHash(userCode)) as string;
  const pending = await runtime.store(() => runtime.pending.getByUserCode(hash, runtime.now()));
  if (pending === undefined) return { ok: false, reason: "invalid_code" };
  const reviewToken = await runtime.reviews.issue({
    approver: approverOf(ctx),
    userCodeHash: hash,
    principalId: pending.principalId,
    capabilities: pending.capabilities,
    expiresAt: found.expiresAt,
  });
  return {
    ok: true,
    principalId: pending.principalId,
    ...(pending.agentName === undefined ? {} : { agentName: pending.agentName }),
    capabilities: pending.capabilities.map((name) => ({
      name,
      description: runtime.registry.get(name)?.description ?? "",
    })),
    userCode: found.userCode,
    expiresAt: found.expiresAt,
    reviewToken,
  };
}

/**
 * Approves or denies an agent's request: a `POST` form with `user_code` and
 * `action` (`approve` or `deny`) from a signed-in human, behind the chain
 * (session, CSRF, a rule requiring authentication). The human supplies only
 * the user code; the agent is resolved with `getByUserCode` and the device
 * code is approved for the agent's own principal id, so two agents approved
 * by one human get two grants. An approval must carry the `review` token
 * `describeAgentRequest` gave this human for this code (the review page's
 * form), else it is refused as `not_reviewed` without touching the code:
 * nobody approves an agent whose request they were not shown.
 */
export function agentApproveHandler(
  runtime: AgentRuntime,
  service: DeviceAuthorizationService,
  options: AgentApproveOptions = {},
): Handler {
  rejectUnknownKeys("agentApproveHandler", options, ["respond", "maxBodyBytes"]);
  if (typeof runtime?.reviews?.read !== "function")
    throw new InvalidOptionsError("agentApproveHandler: runtime.reviews is missing");
  return approvalFormHandler(
    {
      what: "an agent",
      respond: options.respond ?? defaultPage,
      ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
      ...(runtime.onError === undefined ? {} : { onError: runtime.onError }),
      decide: agentDecision(runtime, service),
    },
    "agentApproveHandler",
  );
}

/**
 * An agent approval's decision: an approval needs this human's review of this
 * code, and is for the agent's own principal id; a denial forgets the request.
 */
function agentDecision(
  runtime: AgentRuntime,
  service: DeviceAuthorizationService,
): ApprovalFormOptions["decide"] {
  return async (request, action, userCode, form) => {
    const approver = approverOf(request);
    const hash = await userCodeHash(userCode);
    // Checked before the code is looked up: without a review of this code by
    // this human there is nothing to approve, and nothing learnt about the code.
    const reviewed =
      action !== "approve" || hash === undefined
        ? undefined
        : await runtime.reviews.read(form.get("review"), approver, hash);
    if (action === "approve" && reviewed === undefined)
      return { ok: false, reason: "not_reviewed" };
    const pending =
      hash === undefined
        ? undefined
        : await runtime.store(() => runtime.pending.getByUserCode(hash, runtime.now()));
    if (pending === undefined) {
      // Counted as a wrong entry, and answered like one, whatever the device store holds.
      const counted = await service.lookup(request, "");
      return counted.ok ? { ok: false, reason: "invalid_code" } : counted;
    }
    if (reviewed !== undefined) {
      // The request shown must be the request approved.
      if (
        reviewed.principalId !== pending.principalId ||
        !sameSet(reviewed.capabilities, pending.capabilities)
      )
        return { ok: false, reason: "not_reviewed" };
      // Said before the code is approved; the poll's atomic step decides for good.
      if ((await approverRoom(runtime, pending.principalId, approver)) !== undefined)
        return { ok: false, reason: "limit_reached" };
      // Approved for the agent's own principal id, never the human's.
      return service.authorize(request, userCode, pending.principalId);
    }
    const outcome = await service.deny(request, userCode);
    if (outcome.ok)
      await runtime.store(() => runtime.pending.delete(pending.principalId, pending.userCodeHash));
    return outcome;
  };
}

const AGENT_MESSAGES: ApprovalMessages = {
  approve: "The agent is approved. It can now use the capabilities you granted.",
  deny: "The agent's request was denied.",
  invalid_code: "That code is unknown or has expired. Check it, or ask the agent for a new one.",
  expired: "That code has expired. Ask the agent for a new one.",
  invalid_request: "The form was incomplete.",
  not_reviewed: "Open the code's page and check what the agent asks for before approving.",
  limit_reached:
    "You have approved as many agents as allowed. Revoke one you no longer use on the page of agents you approved, then try again.",
  too_many_attempts: "Too many wrong codes. Wait a while before trying again.",
};

function defaultPage(result: DeviceApproveResult): Response {
  return approvalPage(result, "Agent approval", AGENT_MESSAGES);
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name) => b.includes(name));
}
