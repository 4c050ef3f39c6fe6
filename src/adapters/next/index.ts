/**
 * Next.js 15 and 16: `nextMiddleware` runs a chain in the proxy (middleware), `routeHandlers`
 * and `withChain` run it again inside route handlers.
 *
 * Needs the optional peer `next` 15 or 16, which a Next.js app has.
 *
 * @module portcullis/adapters/next
 */
import type { NextRequest } from "next/server.js";
import type { Chain } from "../../chain/index.ts";
import { CLIENT_ADDRESS_ADVICE } from "../../core/client-address.ts";
import { bindValue } from "../../core/context.ts";
import { InvalidOptionsError } from "../../core/errors.ts";
import type { Handler, Middleware } from "../../core/handler.ts";
import { checkAdapterOptions, rejectUnknownKeys } from "../../core/options.ts";
import { isPassThrough, passThroughResponse, toMiddleware } from "../../core/pass-through.ts";
import { internalErrorResponse } from "../../core/problem.ts";

/**
 * Options of the Next.js adapter.
 *
 * @example
 * ```ts
 * // middleware.ts (proxy.ts on Next 16)
 * import { nextMiddleware } from "portcullis/adapters/next";
 * import { chain } from "./security";
 *
 * export const middleware = nextMiddleware(chain, {
 *   onError: (error) => reportToMonitoring(error),
 * });
 * ```
 */
export interface NextAdapterOptions {
  /**
   * Told about anything the chain throws; the client gets a bare 500.
   *
   * @default console.error
   */
  readonly onError?: (error: unknown, request: Request) => void;
}

/** A `middleware.ts` / `proxy.ts` function. */
export type NextMiddlewareFunction = (
  request: NextRequest,
  ...rest: unknown[]
) => Promise<Response>;

/** An App Router route handler (`GET`, `POST`, … in `route.ts`). */
// biome-ignore lint/suspicious/noExplicitAny: Next passes `{ params }` typed per route.
export type NextRouteHandler<C = any> = (
  request: NextRequest,
  context: C,
) => Response | Promise<Response>;

// Next hands neither the proxy nor a route handler the socket; the address arrives only in the
// X-Forwarded-For that Next (or the platform in front) writes.
const ADDRESS_ADVICE =
  "on Next.js the chain sees no socket, only X-Forwarded-For: behind a proxy that writes it (Vercel, a load balancer, nginx), set newChain's trustProxy to the number of such proxies (1 for one); next start by itself keeps an X-Forwarded-For the client wrote (it adds the socket's address only when there is none), so put a proxy in front of it";

// Next's middleware protocol: these response headers steer routing (continue,
// rewrite, redirect, request-header overrides). A leg must never set them.
const NEXT_CONTROL = /^x-middleware-/;

/** The chain's own answer, without Next's control headers. */
function asFinal(response: Response): Response {
  let control = false;
  for (const name of response.headers.keys()) if (NEXT_CONTROL.test(name)) control = true;
  if (!control) return response;
  const copy = new Response(response.body, response);
  for (const name of [...copy.headers.keys()])
    if (NEXT_CONTROL.test(name)) copy.headers.delete(name);
  return copy;
}

/**
 * The chain as Next.js middleware (`middleware.ts`) or proxy (`proxy.ts`,
 * Next 16): `export const proxy = nextMiddleware(chain)`. It runs before
 * Next routes anything, pages and unknown paths included.
 *
 * When the chain answers (a denial, a preflight, the login endpoint), that
 * answer goes to the client and Next renders nothing. When it passes, Next
 * goes on (the continue answer `NextResponse.next()` gives) carrying the legs'
 * headers, each `Set-Cookie` on its own; the route's own headers win.
 *
 * Nothing is handed to the route through request headers, so a client cannot
 * forge a principal. A route handler that reads the principal wraps itself in
 * `withChain`, which runs the whole chain again in-process: a request that
 * slips past the middleware (a spoofed `x-middleware-subrequest`,
 * CVE-2025-29927, or a matcher gap) still meets every leg there. Route
 * handlers wrapped with `withChain` can be left out of the matcher, so rate
 * limits count them once.
 */
export function nextMiddleware(
  chain: Middleware | Chain,
  options: NextAdapterOptions = {},
): NextMiddlewareFunction {
  checkAdapterOptions("nextMiddleware", options);
  const mw = toMiddleware(chain);
  return async (request, ...rest) => {
    let passed = false;
    const innermost: Handler = async () => {
      if (passed) throw new Error("portcullis: next was called twice");
      passed = true;
      return passThroughResponse();
    };
    let response: Response;
    try {
      bindValue(request, CLIENT_ADDRESS_ADVICE, ADDRESS_ADVICE);
      response = await mw(innermost)(request, ...rest);
    } catch (error) {
      return internalErrorResponse(options.onError, error, request);
    }
    if (!passed || !isPassThrough(response)) {
      return response instanceof Response
        ? asFinal(response)
        : internalErrorResponse(
            options.onError,
            new TypeError("the chain answered a non-Response"),
            request,
          );
    }
    const headers = new Headers();
    for (const [name, value] of response.headers) {
      if (name !== "set-cookie" && name !== "content-length" && !NEXT_CONTROL.test(name))
        headers.set(name, value);
    }
    for (const cookie of response.headers.getSetCookie()) headers.append("set-cookie", cookie);
    // What NextResponse.next() sends: this adapter imports only types from Next.
    headers.set("x-middleware-next", "1");
    return new Response(null, { headers });
  };
}

/**
 * Wraps an App Router route handler in the whole chain, run in-process on
 * the route's own `Request`:
 * `export const GET = withChain(chain, (request) => Response.json({ name: mustAuthentication(request).name }))`.
 * The handler runs only when every leg passes, receives the request the
 * chain bound the principal to, and its response (streamed as it is) gets the
 * legs' headers and cookies, `session.save()` ones included. Skipping the
 * middleware therefore skips nothing here.
 */
export function withChain<C>(
  chain: Middleware | Chain,
  handler: NextRouteHandler<C>,
  options: NextAdapterOptions = {},
): (request: NextRequest, context: C) => Promise<Response> {
  if (typeof handler !== "function") throw new TypeError("withChain needs a route handler");
  checkAdapterOptions("withChain", options);
  const mw = toMiddleware(chain);
  return async (request, context) => {
    const inner: Handler = async (downstream) => handler(downstream as NextRequest, context);
    try {
      bindValue(request, CLIENT_ADDRESS_ADVICE, ADDRESS_ADVICE);
      const response = await mw(inner)(request, context);
      if (!(response instanceof Response)) throw new TypeError("the chain answered a non-Response");
      return asFinal(response);
    } catch (error) {
      return internalErrorResponse(options.onError, error, request);
    }
  };
}

const ROUTE_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;
type RouteMethod = (typeof ROUTE_METHODS)[number];

/**
 * Every method of one App Router route, each wrapped in the chain with
 * `withChain`, plus an `OPTIONS` that runs the chain too (204 with `Allow`,
 * unless the route gives its own). Next answers an `OPTIONS` a route does
 * not export by itself, before any chain: export them all.
 *
 * `export const { GET, POST, OPTIONS } = routeHandlers(chain, { GET: ..., POST: ... })`
 */
export function routeHandlers<H extends Partial<Record<RouteMethod, NextRouteHandler>>>(
  chain: Middleware | Chain,
  handlers: H,
  options: NextAdapterOptions = {},
): { readonly [M in keyof H | "OPTIONS"]: RouteHandler } {
  if (typeof handlers !== "object" || handlers === null)
    throw new InvalidOptionsError("routeHandlers needs an object of method handlers");
  rejectUnknownKeys("routeHandlers", handlers, ROUTE_METHODS);
  checkAdapterOptions("routeHandlers", options);
  const methods = Object.keys(handlers) as RouteMethod[];
  const allow = [...new Set([...methods, "OPTIONS"])].join(", ");
  const wrapped: Partial<Record<RouteMethod, RouteHandler>> = {};
  for (const method of methods) {
    const handler = handlers[method];
    if (typeof handler !== "function")
      throw new InvalidOptionsError(`routeHandlers: ${method} must be a route handler`);
    wrapped[method] = withChain(chain, handler, options);
  }
  wrapped.OPTIONS ??= withChain(
    chain,
    () => new Response(null, { status: 204, headers: { allow } }),
    options,
  );
  return wrapped as { readonly [M in keyof H | "OPTIONS"]: RouteHandler };
}

// biome-ignore lint/suspicious/noExplicitAny: Next passes each route its own context type.
type RouteHandler = (request: NextRequest, context: any) => Promise<Response>;
