/**
 * Express 5: `expressMiddleware` mounts a chain, a guard or a scoped rule set as Express
 * middleware.
 *
 * Needs the optional peer `express` 5: `npm install express` (and `@types/express` for
 * TypeScript).
 *
 * @module portcullis/adapters/express
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Chain } from "../../chain/index.ts";
import type { Middleware } from "../../core/handler.ts";
import { checkAdapterOptions } from "../../core/options.ts";
import { reportError } from "../../core/problem.ts";
import {
  type AdapterOptions,
  type ChainOutcome,
  chainDecider,
} from "../node/engine/chain-runner.ts";
import { applyHeaders, writeResponse } from "../node/engine/response.ts";
import { warnIfRoutesBefore } from "./route-order.ts";

export type { AdapterOptions } from "../node/engine/chain-runner.ts";

/**
 * Runs a Portcullis chain (or a single guard, or a scoped `authz.routes`) as
 * Express 5 middleware. Mount the whole chain first, before routers and body
 * parsers: `app.use(expressMiddleware(chain))`, so it covers every path,
 * unmatched ones included.
 *
 * When the chain answers (a denial, a preflight, the login endpoint, a 500),
 * that answer is written and `next` is never called. When it passes, the legs'
 * headers are set on `res` (each `Set-Cookie` on its own) before the route
 * runs, so the route has the last word on any header; the context is bound to
 * `req`, so `mustAuthentication(req)` returns the principal; any body bytes the
 * chain read are put back for `express.json()` and friends; and `next()` is
 * called exactly once. The chain decides on `req.originalUrl`, the raw path the
 * router routes on.
 *
 * Express runs its stack in registration order: a route or router registered
 * before this middleware answers without it. The first request that reaches
 * it looks at the stack it sits in and warns once
 * (`PORTCULLIS_ROUTE_BEFORE_CHAIN`) if anything would.
 */
export function expressMiddleware(
  chain: Middleware | Chain,
  options: AdapterOptions = {},
): RequestHandler {
  checkAdapterOptions("expressMiddleware", options);
  const decide = chainDecider(chain, options);
  let looked = false;
  const middleware = (req: Request, res: Response, next: NextFunction): void => {
    if (!looked) {
      looked = true;
      warnIfRoutesBefore(req, middleware);
    }
    // Express announces itself on every answer unless told not to: a fingerprint for
    // attackers, off here for denials and passed requests alike (a route may set it again).
    if (!res.headersSent) res.removeHeader("x-powered-by");
    const original = req.originalUrl ?? req.url;
    // Middleware before the chain may have rewritten req.url: the router routes that one.
    const routed = `${req.baseUrl ?? ""}${req.url}`;
    const proceed = (outcome: ChainOutcome) => {
      if (!outcome.passed) {
        writeResponse(res, outcome.response, req.method).catch(() => res.destroy());
        return;
      }
      // Someone else answered while the chain ran (a timeout middleware, say): the
      // response is theirs, and the route must not run. Never a throw here: it would
      // escape to the process.
      if (res.headersSent) return;
      try {
        applyHeaders(res, outcome.headers);
      } catch (error) {
        reportError(options.onError, error, outcome.request);
        res.status(500).end();
        return;
      }
      next();
    };
    // The decider catches everything; should it still fail, answer without going on.
    const failed = () => {
      if (res.headersSent) res.destroy();
      else res.status(500).end();
    };
    let outcome: ChainOutcome | Promise<ChainOutcome>;
    try {
      outcome = decide(
        req,
        res,
        original,
        [],
        Boolean(req.app?.get("trust proxy")),
        routed === original ? undefined : routed,
      );
    } catch {
      failed();
      return;
    }
    // Within the call when the chain answered within it: the route runs with no promise between.
    if (outcome instanceof Promise) outcome.then(proceed, failed);
    else proceed(outcome);
  };
  return middleware;
}
