import type { IncomingMessage } from "node:http";
import { isBodyReadError } from "../../../core/errors.ts";

// What readers of a Node request call a client that went away mid-body: Node's own
// "aborted", raw-body's "request aborted", `finished()` on a stream cut short.
const CLIENT_GONE = new Set(["ECONNRESET", "ECONNABORTED", "ERR_STREAM_PREMATURE_CLOSE"]);

/**
 * Whether `error`, thrown by code that read `message`'s body (the chain, or
 * an app reading the request itself), is that body failing: the client broke
 * it off or garbled it. The client's doing, so a 400 or a quiet close, never a
 * reported failure. A request whose body arrived whole never counts.
 */
export function isRequestBodyFailure(message: IncomingMessage, error: unknown): boolean {
  if (isBodyReadError(error)) return true;
  if (message.complete) return false;
  const own = message.errored;
  let cause = error;
  for (let depth = 0; depth < 5 && cause instanceof Error; depth++) {
    if (own !== null && cause === own) return true;
    cause = cause.cause;
  }
  const code = (error as { code?: unknown } | null)?.code;
  return message.destroyed && typeof code === "string" && CLIENT_GONE.has(code);
}
