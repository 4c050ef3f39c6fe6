import { authenticationFrom, isAuthenticated } from "../core/authentication.ts";
import { AccessDeniedError, InvalidOptionsError, StoreUnavailableError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { methodNotAllowed } from "../core/http-method.ts";
import { bodyLimitOption, rejectUnknownKeys } from "../core/options.ts";
import { problemResponse, reportError } from "../core/problem.ts";
import type { DeviceAuthorizationService, UserCodeOutcome } from "./device-authorization.ts";
import { isFailure, type OAuthParameters, readOAuthParameters } from "./parameters.ts";

export type DeviceApproveAction = "approve" | "deny";

/** What an approval form post came to, for `respond`. */
export type DeviceApproveResult =
  | { readonly action: DeviceApproveAction; readonly outcome: UserCodeOutcome }
  | {
      readonly action: undefined;
      readonly outcome: { readonly ok: false; readonly reason: "invalid_request" };
    }
  | {
      readonly action: "approve";
      /** The post carried no proof that the human was shown what the code asks for. */
      readonly outcome: { readonly ok: false; readonly reason: "not_reviewed" };
    };

/**
 * Options of `deviceApproveHandler`.
 *
 * @example
 * ```ts
 * import { deviceApproveHandler } from "portcullis/oauth2";
 *
 * const approve = deviceApproveHandler({
 *   service, // the DeviceAuthorizationService the authorization server uses
 *   respond: ({ action, outcome }) =>
 *     outcome.ok
 *       ? new Response(action === "approve" ? "Your TV is signed in." : "Denied.")
 *       : new Response("That code did not work.", { status: 400 }),
 * });
 * ```
 */
export interface DeviceApproveOptions {
  readonly service: DeviceAuthorizationService;
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
  /**
   * Told about unexpected failures (answered 500).
   *
   * @default console.error
   */
  readonly onError?: (error: unknown, request: Request) => void;
}

/**
 * Approves or denies a device for the signed-in human: a `POST` form with
 * `user_code` and `action` (`approve` or `deny`), behind the chain (session,
 * CSRF, an authorization rule that requires authentication).
 *
 * The device's token is issued to the approving human: the human's name is
 * bound as the subject. That is right for a human's own devices (a TV, a CLI)
 * and wrong for agents: every agent one human approved would share one
 * identity and one grant. Agents are approved by `agentApproveHandler` of
 * `portcullis/agentauth`, which binds the agent's own principal id.
 */
export function deviceApproveHandler(options: DeviceApproveOptions): Handler {
  rejectUnknownKeys("deviceApproveHandler", options, [
    "service",
    "respond",
    "maxBodyBytes",
    "onError",
  ]);
  const service = options.service;
  if (typeof service?.authorize !== "function" || typeof service.deny !== "function")
    throw new InvalidOptionsError(
      "deviceApproveHandler: service must be a DeviceAuthorizationService",
    );
  if (options.respond !== undefined && typeof options.respond !== "function")
    throw new InvalidOptionsError("deviceApproveHandler: respond must be a function");
  const respond = options.respond ?? defaultPage;
  const maxBodyBytes = bodyLimitOption("deviceApproveHandler", options.maxBodyBytes, 8192, 512);

  return approvalFormHandler({
    what: "a device",
    respond,
    maxBodyBytes,
    onError: options.onError,
    decide: (request, action, userCode) => {
      // The device is issued to the human who approves it.
      const human = authenticationFrom(request)?.name as string;
      return action === "approve"
        ? service.authorize(request, userCode, human)
        : service.deny(request, userCode);
    },
  });
}

/**
 * The approval form's handling, shared by the device and agent handlers:
 * POST only, a signed-in human, a form with `action` and `user_code`; a store
 * failure answers 503, anything else unexpected a bare 500.
 */
export function approvalFormHandler(setup: {
  readonly what: string;
  readonly respond: (result: DeviceApproveResult, request: Request) => Response | Promise<Response>;
  readonly maxBodyBytes: number;
  readonly onError: ((error: unknown, request: Request) => void) | undefined;
  readonly decide: (
    request: Request,
    action: DeviceApproveAction,
    userCode: string | undefined,
    form: OAuthParameters,
  ) => Promise<UserCodeOutcome | { readonly ok: false; readonly reason: "not_reviewed" }>;
}): Handler {
  const { respond } = setup;
  return async (request) => {
    if (request.method !== "POST") return methodNotAllowed("POST");
    if (!isAuthenticated(request))
      return problemResponse(401, { detail: `Sign in to approve ${setup.what}.` });
    try {
      const params = await readOAuthParameters(request, setup.maxBodyBytes);
      const action = isFailure(params) ? undefined : params.get("action");
      if (isFailure(params) || (action !== "approve" && action !== "deny"))
        return await respond(
          { action: undefined, outcome: { ok: false, reason: "invalid_request" } },
          request,
        );
      const outcome = await setup.decide(request, action, params.get("user_code"), params);
      return await respond({ action, outcome } as DeviceApproveResult, request);
    } catch (error) {
      if (error instanceof AccessDeniedError)
        return problemResponse(403, { detail: "Only a signed-in person may approve." });
      if (error instanceof StoreUnavailableError)
        return problemResponse(503, {
          detail: "Try again shortly.",
          headers: { "retry-after": "1" },
        });
      reportError(setup.onError, error, request);
      return problemResponse(500);
    }
  };
}

/** What the default approval pages say for each outcome. */
export interface ApprovalMessages {
  readonly approve: string;
  readonly deny: string;
  readonly invalid_code: string;
  /** @default the `invalid_code` message */
  readonly expired?: string;
  readonly invalid_request: string;
  /** @default the `invalid_request` message */
  readonly not_reviewed?: string;
  readonly too_many_attempts: string;
}

const DEVICE_MESSAGES: ApprovalMessages = {
  approve: "The device is approved. You can return to it now.",
  deny: "The device was denied.",
  invalid_code: "That code is unknown or has expired. Check it, or ask the device for a new one.",
  expired: "That code has expired. Ask the device for a new one.",
  invalid_request: "The form was incomplete.",
  too_many_attempts: "Too many wrong codes. Wait a while before trying again.",
};

/** A minimal HTML page for an approval outcome, with its status (429 with `Retry-After` when throttled). */
export function approvalPage(
  result: DeviceApproveResult,
  title: string,
  messages: ApprovalMessages,
): Response {
  const { outcome } = result;
  const status = outcome.ok ? 200 : outcome.reason === "too_many_attempts" ? 429 : 400;
  const message = outcome.ok
    ? messages[result.action as DeviceApproveAction]
    : outcomeMessage(outcome.reason, messages);
  const headers = new Headers({
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
  });
  if (!outcome.ok && outcome.reason === "too_many_attempts")
    headers.set("retry-after", String(outcome.retryAfterSeconds ?? 60));
  const page = `<!doctype html><meta charset="utf-8"><title>${title}</title><p id="outcome">${message}</p>`;
  return new Response(page, { status, headers });
}

/** The message for a failed outcome; `unconfirmed` never answers a form post. */
export function outcomeMessage(
  reason: Exclude<DeviceApproveResult["outcome"], { ok: true }>["reason"],
  messages: ApprovalMessages,
): string {
  switch (reason) {
    case "expired":
      return messages.expired ?? messages.invalid_code;
    case "not_reviewed":
      return messages.not_reviewed ?? messages.invalid_request;
    case "unconfirmed":
      return messages.invalid_request;
    default:
      return messages[reason];
  }
}

function defaultPage(result: DeviceApproveResult): Response {
  return approvalPage(result, "Device approval", DEVICE_MESSAGES);
}
