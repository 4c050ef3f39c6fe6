import { authenticationFrom } from "../core/authentication.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import {
  type ApprovalMessages,
  approvalFormHandler,
  approvalPage,
  type DeviceApproveResult,
} from "./approval-form.ts";
import type { DeviceAuthorizationService } from "./device-authorization.ts";

export type { DeviceApproveAction, DeviceApproveResult } from "./approval-form.ts";

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
  return approvalFormHandler(
    {
      what: "a device",
      respond: options.respond ?? defaultPage,
      ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
      ...(options.onError === undefined ? {} : { onError: options.onError }),
      decide: (request, action, userCode) => {
        // The device is issued to the human who approves it.
        const human = authenticationFrom(request)?.name as string;
        return action === "approve"
          ? service.authorize(request, userCode, human)
          : service.deny(request, userCode);
      },
    },
    "deviceApproveHandler",
  );
}

const DEVICE_MESSAGES: ApprovalMessages = {
  approve: "The device is approved. You can return to it now.",
  deny: "The device was denied.",
  invalid_code: "That code is unknown or has expired. Check it, or ask the device for a new one.",
  expired: "That code has expired. Ask the device for a new one.",
  invalid_request: "The form was incomplete.",
  too_many_attempts: "Too many wrong codes. Wait a while before trying again.",
};

function defaultPage(result: DeviceApproveResult): Response {
  return approvalPage(result, "Device approval", DEVICE_MESSAGES);
}
