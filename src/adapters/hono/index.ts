/**
 * Hono 4: `honoMiddleware` mounts a chain, a guard or a scoped rule set as Hono middleware;
 * `mustAuthentication(c)` then reads the principal.
 *
 * Needs the optional peer `hono` 4: `npm install hono` (on Node, with `@hono/node-server`).
 *
 * @module portcullis/adapters/hono
 */
import type { Context as HonoContext, MiddlewareHandler } from "hono";
import type { Chain } from "../../chain/index.ts";
import { bindContext, bindValue, contextFrom, createContextKey } from "../../core/context.ts";
import { InvalidOptionsError } from "../../core/errors.ts";
import { forwardedAnswer, settleAnswer } from "../../core/forwarded-answer.ts";
import { composeLegs, type FetchHandler, type Middleware, promising } from "../../core/handler.ts";

/**
 * Runs a Portcullis middleware (a guard, a scoped `authz.routes`, or a whole
 * chain) as Hono middleware. When the middleware answers, Hono's chain stops
 * there; when it calls `next`, the context it built is bound to `c` (so
 * `mustAuthentication(c)` works) and Hono goes on exactly once.
 */
export function honoMiddleware(
  middleware: Middleware | Chain,
  ...none: readonly never[]
): MiddlewareHandler {
  // Options given here would be ignored: failures are the chain's (`newChain({ onError })`).
  if (none.length > 0) {
    const given = typeof none[0] === "object" && none[0] !== null ? Object.keys(none[0]) : [];
    throw new InvalidOptionsError(
      `honoMiddleware takes no options (got ${JSON.stringify(given)}); give onError to newChain({ onError }) instead`,
    );
  }
  const mw: Middleware = typeof middleware === "function" ? middleware : middleware.middleware;
  // Composed once, not per request: the innermost handler finds the request's Hono context
  // through the request's own context, bound before the chain runs.
  const handler = promising(composeLegs([mw], innermost));
  return async (c: HonoContext, next) => {
    const pass = new HonoPass(c, next);
    bindValue(c.req.raw, HONO_PASS, pass);
    const response = settleAnswer(await handler(c.req.raw, c.env, executionContext(c)));
    if (!pass.passed) return response;
    // Legs may have answered with a decorated copy of the downstream response. Assigning over
    // c.res would merge the old response's headers in, its Set-Cookie list replacing the
    // copy's; the chain's answer is complete as it is, so clear c.res first.
    if (response !== c.res) {
      c.res = undefined;
      c.res = response;
    }
    return undefined;
  };
}

/** One request's way on into Hono, and whether the chain took it. */
class HonoPass {
  passed = false;
  constructor(
    readonly c: HonoContext,
    readonly next: () => Promise<void>,
  ) {}
}

const HONO_PASS = createContextKey<HonoPass>("portcullis.honoPass");

/** Goes on into Hono, once, with the context the legs built bound to `c`. */
const innermost: FetchHandler = async (request) => {
  const pass = contextFrom(request).get(HONO_PASS);
  if (pass === undefined)
    throw new Error("portcullis: a leg handed on a request that lost its context");
  if (pass.passed) throw new Error("portcullis: next was called twice");
  pass.passed = true;
  bindContext(pass.c, contextFrom(request));
  await pass.next();
  // The legs edit Hono's answer through a forwarded one: Hono's `Headers` cost far more per call.
  return forwardedAnswer(pass.c.res);
};

// Whether the runtime lets an error skip capturing its stack (V8, JavaScriptCore).
const STACK_LIMIT_WRITABLE =
  typeof Error.stackTraceLimit === "number" &&
  Object.getOwnPropertyDescriptor(Error, "stackTraceLimit")?.writable === true;

function executionContext(c: HonoContext): unknown {
  // @hono/node-server passes its bindings and never an execution context.
  const env = c.env as { incoming?: { socket?: unknown }; outgoing?: unknown } | undefined;
  if (typeof env?.incoming?.socket === "object" && typeof env.outgoing === "object")
    return undefined;
  // Hono throws when the runtime passed none (Bun, Deno), on every request: an error that
  // captures no stack costs a fraction of one that does.
  const limit = Error.stackTraceLimit;
  if (STACK_LIMIT_WRITABLE) Error.stackTraceLimit = 0;
  try {
    return c.executionCtx;
  } catch {
    return undefined;
  } finally {
    if (STACK_LIMIT_WRITABLE) Error.stackTraceLimit = limit;
  }
}
