import { InvalidOptionsError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import {
  type ApprovalMessages,
  approvalFormHandler,
  approvalPage,
  type DeviceApproveResult,
} from "../oauth2/device-approve.ts";
import { type DeviceAuthorizationService, userCodeHash } from "../oauth2/device-authorization.ts";
import type { AgentRuntime } from "./runtime.ts";

/** What a human is asked to approve: the agent and the capabilities it wants. */
export interface AgentApprovalRequest {
  readonly principalId: string;
  readonly agentName?: string;
  readonly capabilities: readonly { readonly name: string; readonly description: string }[];
  /** As shown, `XXXX-XXXX`. */
  readonly userCode: string;
  readonly expiresAt: number;
}

export type AgentApprovalLookup =
  | ({ readonly ok: true } & AgentApprovalRequest)
  | {
      readonly ok: false;
      readonly reason: "invalid_code" | "too_many_attempts";
      readonly retryAfterSeconds?: number;
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
 * decides. Wrong codes count against the approver's budget like approvals.
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
  };
}

/**
 * Approves or denies an agent's request: a `POST` form with `user_code` and
 * `action` (`approve` or `deny`) from a signed-in human, behind the chain
 * (session, CSRF, a rule requiring authentication). The human supplies only
 * the user code; the agent is resolved with `getByUserCode` and the device
 * code is approved for the agent's own principal id, so two agents approved
 * by one human get two grants.
 */
export function agentApproveHandler(
  runtime: AgentRuntime,
  service: DeviceAuthorizationService,
  options: AgentApproveOptions = {},
): Handler {
  rejectUnknownKeys("agentApproveHandler", options, ["respond", "maxBodyBytes"]);
  if (options.respond !== undefined && typeof options.respond !== "function")
    throw new InvalidOptionsError("agentApproveHandler: respond must be a function");
  const respond = options.respond ?? defaultPage;
  const maxBodyBytes = options.maxBodyBytes ?? 8192;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 512)
    throw new InvalidOptionsError(
      "agentApproveHandler: maxBodyBytes must be a whole number, 512 or more",
    );
  return approvalFormHandler({
    what: "an agent",
    respond,
    maxBodyBytes,
    onError: runtime.onError,
    decide: async (request, action, userCode) => {
      const hash = await userCodeHash(userCode);
      const pending =
        hash === undefined
          ? undefined
          : await runtime.store(() => runtime.pending.getByUserCode(hash, runtime.now()));
      if (pending === undefined) {
        // Counted as a wrong entry, and answered like one, whatever the device store holds.
        const counted = await service.lookup(request, "");
        return counted.ok ? { ok: false, reason: "invalid_code" } : counted;
      }
      // Approved for the agent's own principal id, never the human's.
      if (action === "approve") return service.authorize(request, userCode, pending.principalId);
      const outcome = await service.deny(request, userCode);
      if (outcome.ok)
        await runtime.store(() =>
          runtime.pending.delete(pending.principalId, pending.userCodeHash),
        );
      return outcome;
    },
  });
}

const AGENT_MESSAGES: ApprovalMessages = {
  approve: "The agent is approved. It can now use the capabilities you granted.",
  deny: "The agent's request was denied.",
  invalid_code: "That code is not valid. Check it and try again.",
  invalid_request: "The form was incomplete.",
  too_many_attempts: "Too many wrong codes. Wait a while before trying again.",
};

function defaultPage(result: DeviceApproveResult): Response {
  return approvalPage(result, "Agent approval", AGENT_MESSAGES);
}
