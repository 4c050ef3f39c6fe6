import { randomToken } from "./encoding.ts";
import { FieldList } from "./field-list.ts";
import type { Middleware } from "./handler.ts";

// The pass-through protocol between a host adapter and the chain: web-standard only, so the
// Next.js adapter uses it on the edge runtime too.

// Marks the innermost handler's answer. A leg that copies it (`new Response(body, response)`)
// keeps the status text; a leg that answers on its own, even after calling next, does not.
const PASS_THROUGH = `portcullis-pass-${randomToken(12)}`;

// The runtime's own constructor, captured before anything (such as @hono/node-server's serve())
// puts another one in its place: answers built by either count as Responses.
const RuntimeResponse = globalThis.Response;

/** True for a `Response` of the runtime's constructor or of the current global one. */
export function isResponse(value: unknown): value is Response {
  // The pass-through answer first, by its own field: every direct leg asks this of it, and
  // `instanceof` goes through the runtime's generic check (about 200 instructions) each time.
  return (
    (typeof value === "object" && value !== null && ANSWER_FIELDS in value) ||
    value instanceof RuntimeResponse ||
    value instanceof Response
  );
}

// The innermost answer costs two plain objects: the runtime's constructor (a `Headers`, the
// status checks, on Node a body state) would cost more than several legs' work. It answers the
// Response API itself (status, headers as a `FieldList` the adapter copies in one pass, a null
// body); the body methods, which only a leg of someone else's might call, go to a real empty
// Response made on first use. Nothing reaches the runtime's internal slots, so this holds on
// every runtime.
/** Carried by the answers the library makes for its legs (this one, `forwardedAnswer`): their fields. */
export const ANSWER_FIELDS = Symbol("portcullis.answerFields");
const REAL = Symbol("portcullis.passThroughReal");

interface PassThrough {
  readonly [ANSWER_FIELDS]: FieldList;
  [REAL]: Response | undefined;
}

function fieldsOf(response: unknown): FieldList {
  const fields = (response as Partial<PassThrough>)[ANSWER_FIELDS];
  if (fields === undefined) throw new TypeError("Illegal invocation");
  return fields;
}

function realOf(response: PassThrough): Response {
  response[REAL] ??= new RuntimeResponse(null, {
    status: 200,
    statusText: PASS_THROUGH,
    headers: fieldsOf(response),
  });
  return response[REAL];
}

class PassThroughResponse implements PassThrough {
  readonly [ANSWER_FIELDS] = new FieldList();
  [REAL]: Response | undefined = undefined;
}

const value = (get: (response: PassThrough) => unknown): PropertyDescriptor => ({
  get(this: PassThrough) {
    fieldsOf(this);
    return get(this);
  },
  configurable: true,
});
const bodyMethod = (name: "arrayBuffer" | "blob" | "bytes" | "formData" | "json" | "text") => ({
  value(this: PassThrough) {
    fieldsOf(this);
    return (realOf(this) as unknown as Record<string, () => Promise<unknown>>)[name]?.();
  },
  writable: true,
  configurable: true,
});

Object.setPrototypeOf(
  PassThroughResponse.prototype,
  Object.create(RuntimeResponse.prototype, {
    status: value(() => 200),
    statusText: value(() => PASS_THROUGH),
    ok: value(() => true),
    headers: value((response) => response[ANSWER_FIELDS]),
    body: value(() => null),
    bodyUsed: value(() => false),
    type: value(() => "default"),
    url: value(() => ""),
    redirected: value(() => false),
    ...Object.fromEntries(
      (["arrayBuffer", "blob", "bytes", "formData", "json", "text"] as const)
        .filter((name) => name in RuntimeResponse.prototype)
        .map((name) => [name, bodyMethod(name)]),
    ),
    clone: {
      value(this: PassThrough): Response {
        const copy = new PassThroughResponse();
        for (const [name, value] of fieldsOf(this)) copy[ANSWER_FIELDS].append(name, value);
        return copy as unknown as Response;
      },
      writable: true,
      configurable: true,
    },
  }),
);

/** The empty answer an adapter's innermost handler gives at once, for the legs to decorate. */
export function passThroughResponse(): Response {
  return new PassThroughResponse() as unknown as Response;
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
