/**
 * Koa 3: `koaMiddleware` mounts a chain, a guard or a scoped rule set as Koa middleware.
 *
 * Needs the optional peer `koa` 3: `npm install koa` (and `@types/koa` for TypeScript).
 *
 * @module portcullis/adapters/koa
 */
import type { ServerResponse } from "node:http";
import type { Context, Middleware as KoaMiddleware, Next } from "koa";
import type { Chain } from "../../chain/index.ts";
import type { Middleware } from "../../core/handler.ts";
import { checkAdapterOptions } from "../../core/options.ts";
import { type AdapterOptions, chainDecider } from "../node/engine/chain-runner.ts";
import { applyHeaders } from "../node/engine/response.ts";

export type { AdapterOptions } from "../node/engine/chain-runner.ts";

/**
 * Runs a Portcullis chain (or a guard, or a scoped `authz.routes`) as Koa 3
 * middleware. Mount the whole chain first: `app.use(koaMiddleware(chain))`.
 *
 * When the chain answers, its status, headers and streamed body become Koa's
 * response and `next` is never called. When it passes, the legs' headers are
 * set on `ctx.res` before the downstream runs (so it has the last word), the
 * context is bound to `ctx`, `ctx.request` and `ctx.req`
 * (`mustAuthentication(ctx)` works), body bytes the chain read are put back
 * for whatever reads `ctx.req`, and `next` runs exactly once. Koa clears every
 * header when a downstream middleware throws; the legs' headers are put back
 * when its error answer's head is written (the error's own headers win), and
 * the thrown error is left as it was: an app may throw one shared object. The
 * chain decides on `ctx.originalUrl`, the raw path the routers route on.
 */
export function koaMiddleware(
  chain: Middleware | Chain,
  options: AdapterOptions = {},
): KoaMiddleware {
  checkAdapterOptions("koaMiddleware", options);
  const decide = chainDecider(chain, options);
  return async (ctx: Context, next: Next) => {
    const decided = decide(
      ctx.req,
      ctx.res,
      ctx.originalUrl ?? ctx.req.url ?? "",
      [ctx, ctx.request],
      ctx.app?.proxy === true,
      // Middleware before the chain may have rewritten the path: the router routes that one.
      ctx.url !== ctx.originalUrl ? ctx.url : undefined,
    );
    const outcome = decided instanceof Promise ? await decided : decided;
    if (!outcome.passed) {
      respond(ctx, outcome.response);
      return;
    }
    applyHeaders(ctx.res, outcome.headers);
    try {
      await next();
    } catch (error) {
      restoreOnHead(ctx.res, outcome.headers);
      throw error;
    }
  };
}

function respond(ctx: Context, response: Response): void {
  // Body first: Koa turns a null body into 204 unless a status is set afterwards.
  if (response.body === null || ctx.method === "HEAD") {
    if (response.body !== null) response.body.cancel().catch(() => {});
    ctx.body = null;
  } else {
    ctx.body = response.body;
  }
  ctx.status = response.status;
  // Koa's body setter guesses a content type; the chain's own headers win.
  for (const [name, value] of response.headers) {
    if (name !== "set-cookie") ctx.res.setHeader(name, value);
  }
  for (const cookie of response.headers.getSetCookie()) ctx.res.appendHeader("set-cookie", cookie);
}

/**
 * Puts the legs' headers back, where absent, when the error answer's head is
 * written: Koa removes every header before it sets the error's own.
 */
function restoreOnHead(res: ServerResponse, headers: Headers): void {
  if (res.headersSent) return;
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    res.writeHead = writeHead;
    if (!res.headersSent) {
      const present = new Set(res.getHeaderNames());
      applyHeaders(res, headers, (name) => present.has(name));
    }
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as typeof res.writeHead;
}
