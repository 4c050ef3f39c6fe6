import { isBodyReadError } from "./errors.ts";

const titles: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

export interface ProblemInit {
  /**
   * Short, generic, never containing secrets or input echoes.
   *
   * @default the status text
   */
  readonly title?: string;
  readonly detail?: string;
  /** @default about:blank (RFC 9457 §4.2.1) */
  readonly type?: string;
  /** Extension members the problem type defines; they never override the standard ones. */
  readonly extensions?: Readonly<Record<string, unknown>>;
  /** Anything `new Headers()` takes (spelt so Node's types alone compile it, without the DOM lib). */
  readonly headers?: ConstructorParameters<typeof Headers>[0];
}

/** An RFC 9457 problem-details response. */
export function problemResponse(status: number, init: ProblemInit = {}): Response {
  const body: Record<string, unknown> = {
    ...init.extensions,
    type: init.type ?? "about:blank",
    title: init.title ?? titles[status] ?? "Error",
    status,
  };
  if (init.detail !== undefined) body.detail = init.detail;
  const headers = new Headers(init.headers);
  headers.set("content-type", "application/problem+json");
  if (!headers.has("cache-control")) headers.set("cache-control", "no-store");
  return new Response(JSON.stringify(body), { status, headers });
}

/**
 * Tells `listener` (default: `console.error`) about an error the client only
 * sees as a bare 500. A listener that throws changes nothing: logging must
 * never turn a 500 into a crash or an unhandled rejection.
 */
export function reportError<R>(
  listener: ((error: unknown, request: R) => void) | undefined,
  error: unknown,
  request: R,
): void {
  try {
    if (listener === undefined) console.error("portcullis: request failed", error);
    else listener(error, request);
  } catch {
    // Deliberately ignored, see above.
  }
}

/**
 * `reportError`, then a bare 500 problem response (no message, no stack); a
 * body the client broke off or garbled answers 400 and is not reported.
 */
export function internalErrorResponse<R>(
  listener: ((error: unknown, request: R) => void) | undefined,
  error: unknown,
  request: R,
): Response {
  if (isBodyReadError(error)) return unreadableBodyResponse();
  reportError(listener, error, request);
  return problemResponse(500);
}

/** The chain's answer to a body the client broke off or garbled: its doing, so 400. */
export function unreadableBodyResponse(): Response {
  return problemResponse(400, { detail: "The request body could not be read." });
}
