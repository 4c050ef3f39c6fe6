import { randomToken } from "./encoding.ts";
import { FieldList } from "./field-list.ts";
import type { Middleware } from "./handler.ts";

// The pass-through protocol between a host adapter and the chain: web-standard only, so the
// Next.js adapter uses it on the edge runtime too.

// Marks the innermost handler's answer. A leg that copies it (`new Response(body, response)`)
// keeps the status text; a leg that answers on its own, even after calling next, does not.
const PASS_THROUGH = `portcullis-pass-${randomToken(12)}`;

const FIELDS = Symbol("portcullis.passThroughFields");

// The runtime's own constructor, captured before anything (such as @hono/node-server's serve())
// puts another one in its place: answers built by either count as Responses.
const RuntimeResponse = globalThis.Response;

/** True for a `Response` of the runtime's constructor or of the current global one. */
export function isResponse(value: unknown): value is Response {
  return value instanceof RuntimeResponse || value instanceof Response;
}

// Its headers are a `FieldList`: the legs' dozen fields per request cost map writes, and the
// adapter copies them onto the native response in one pass over the map.
class PassThroughResponse extends RuntimeResponse {
  readonly [FIELDS] = new FieldList();

  constructor() {
    super(null, { status: 200, statusText: PASS_THROUGH });
  }

  override clone(): Response {
    const copy = new PassThroughResponse();
    for (const [name, value] of this[FIELDS]) copy[FIELDS].append(name, value);
    return copy;
  }
}

Object.defineProperty(PassThroughResponse.prototype, "headers", {
  get(this: PassThroughResponse) {
    return this[FIELDS];
  },
});

/** The empty answer an adapter's innermost handler gives at once, for the legs to decorate. */
export function passThroughResponse(): Response {
  return new PassThroughResponse();
}

/** True for `passThroughResponse()` or a copy of it: the legs handed the pass back. */
export function isPassThrough(response: unknown): response is Response {
  return (
    isResponse(response) &&
    response.status === 200 &&
    response.statusText === PASS_THROUGH &&
    response.body === null
  );
}

/** The middleware of a `Chain`, or the middleware itself. */
export function toMiddleware(
  middleware: Middleware | { readonly middleware: Middleware },
): Middleware {
  if (typeof middleware === "function") return middleware;
  const composed = (middleware as { middleware?: unknown } | undefined)?.middleware;
  if (typeof composed !== "function")
    throw new TypeError("expected a Portcullis middleware or Chain");
  return composed as Middleware;
}
