import { StoreUnavailableError } from "../core/errors.ts";
import { reportError } from "../core/problem.ts";
import { oauthError } from "./wire.ts";

/**
 * The answer to an endpoint that threw: a failing store is 503
 * `temporarily_unavailable`, anything else 500 `server_error`, reported, its
 * text never sent.
 */
export function failureResponse(
  error: unknown,
  request: Request,
  onError: ((error: unknown, request: Request) => void) | undefined,
): Response {
  if (error instanceof StoreUnavailableError)
    return oauthError("temporarily_unavailable", "try again shortly");
  reportError(onError, error, request);
  return oauthError("server_error", "the server could not complete the request");
}

/** 405 with `Allow`, for a method an endpoint does not serve. */
export function methodNotAllowed(allow: string): Response {
  return new Response(null, { status: 405, headers: { allow, "cache-control": "no-store" } });
}
