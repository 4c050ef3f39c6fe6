import {
  AUTHORIZATION_VERIFIED,
  authenticationFrom,
  isAuthenticated,
} from "../core/authentication.ts";
import { type ContextSource, contextFrom } from "../core/context.ts";
import {
  AccessDeniedError,
  AuthenticationRequiredError,
  InvalidOptionsError,
  StoreUnavailableError,
} from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { html, htmlResponse } from "../core/html.ts";
import { methodNotAllowed } from "../core/http-method.ts";
import { bodyLimitOption, functionOptions, rejectUnknownKeys } from "../core/options.ts";
import { problemResponse, reportError } from "../core/problem.ts";
import type { UserCodeOutcome } from "./device-authorization.ts";
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
      /**
       * `not_reviewed`: the post carried no proof that the human was shown what
       * the code asks for. `limit_reached`: this human may approve nothing more
       * until they revoke something (nothing was approved).
       */
      readonly outcome: { readonly ok: false; readonly reason: "not_reviewed" | "limit_reached" };
    };

/**
 * Options of `approvalFormHandler`.
 *
 * @example
 * ```ts
 * import { approvalFormHandler, approvalPage, DeviceAuthorizationService } from "portcullis/oauth2";
 *
 * const service = new DeviceAuthorizationService({ verificationUri: "https://print.example/approve" });
 * const approve = approvalFormHandler({
 *   what: "a printer",
 *   respond: (result) =>
 *     approvalPage(result, "Printer approval", {
 *       approve: "The printer is approved.",
 *       deny: "The printer was denied.",
 *       invalid_code: "That code is unknown or has expired.",
 *       invalid_request: "The form was incomplete.",
 *       too_many_attempts: "Too many wrong codes. Wait a while before trying again.",
 *     }),
 *   decide: (request, action, userCode) =>
 *     action === "approve"
 *       ? service.authorize(request, userCode, "printer-7")
 *       : service.deny(request, userCode),
 * });
 * ```
 */
export interface ApprovalFormOptions {
  /** What is approved, for the sign-in prompt: "a device", "an agent". */
  readonly what: string;
  /** Decides a well-formed post for the signed-in human (`approverOf(request)`). */
  readonly decide: (
    request: Request,
    action: DeviceApproveAction,
    userCode: string | undefined,
    form: OAuthParameters,
  ) => Promise<
    UserCodeOutcome | { readonly ok: false; readonly reason: "not_reviewed" | "limit_reached" }
  >;
  /** Builds the page answering the post (`approvalPage` makes a minimal one). */
  readonly respond: (result: DeviceApproveResult, request: Request) => Response | Promise<Response>;
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
 * The approval form's handling, public so that every approval page of the
 * device flow (`deviceApproveHandler` here, `agentApproveHandler` of
 * `portcullis/agentauth`, one of your own) answers alike: `POST` only, a
 * signed-in human (401 otherwise, 403 for a client's own credentials), a form
 * with `action` and `user_code`, then `decide`; a store failure answers 503,
 * anything else unexpected a bare 500. `where` names the caller in option
 * errors.
 */
export function approvalFormHandler(
  options: ApprovalFormOptions,
  where = "approvalFormHandler",
): Handler {
  rejectUnknownKeys(where, options, ["what", "decide", "respond", "maxBodyBytes", "onError"]);
  if (typeof options.what !== "string" || options.what === "")
    throw new InvalidOptionsError(`${where}: what must be a non-empty string`);
  functionOptions(where, options, ["decide", "respond", "onError"], ["decide", "respond"]);
  const setup = {
    ...options,
    maxBodyBytes: bodyLimitOption(where, options.maxBodyBytes, 8192, 512),
  };
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
  /** @default the `invalid_request` message */
  readonly limit_reached?: string;
  readonly too_many_attempts: string;
}

/**
 * A minimal HTML page for an approval outcome, with its status (429 with
 * `Retry-After` when throttled, 403 when the human may approve no more). The
 * title and messages are text: escaped.
 */
export function approvalPage(
  result: DeviceApproveResult,
  title: string,
  messages: ApprovalMessages,
): Response {
  const { outcome } = result;
  const status = outcome.ok
    ? 200
    : outcome.reason === "too_many_attempts"
      ? 429
      : outcome.reason === "limit_reached"
        ? 403
        : 400;
  const message = outcome.ok
    ? messages[result.action as DeviceApproveAction]
    : outcomeMessage(outcome.reason, messages);
  const throttled = !outcome.ok && outcome.reason === "too_many_attempts";
  return htmlResponse(
    html`<!doctype html><meta charset="utf-8"><title>${title}</title><p id="outcome">${message}</p>`,
    {
      status,
      ...(throttled ? { headers: { "retry-after": String(outcome.retryAfterSeconds ?? 60) } } : {}),
    },
  );
}

/** The message for a failed outcome; `unconfirmed` never answers a form post. */
function outcomeMessage(
  reason: Exclude<DeviceApproveResult["outcome"], { ok: true }>["reason"],
  messages: ApprovalMessages,
): string {
  switch (reason) {
    case "expired":
      return messages.expired ?? messages.invalid_code;
    case "not_reviewed":
      return messages.not_reviewed ?? messages.invalid_request;
    case "limit_reached":
      return messages.limit_reached ?? messages.invalid_request;
    case "unconfirmed":
      return messages.invalid_request;
    default:
      return messages[reason];
  }
}

/**
 * The signed-in human approving: throws `AuthenticationRequiredError` without
 * one, `AccessDeniedError` for a client authenticated with its own credentials.
 */
export function approverOf(ctx: ContextSource): string {
  if (!isAuthenticated(ctx))
    throw new AuthenticationRequiredError("approving a device needs an authenticated human");
  // A client that authenticated with its own credentials (an agent's key) is no
  // human: it must never approve a request, least of all its own.
  if (contextFrom(ctx).get(AUTHORIZATION_VERIFIED) === true)
    throw new AccessDeniedError("a client's credentials cannot approve a device");
  return authenticationFrom(ctx)?.name as string;
}
