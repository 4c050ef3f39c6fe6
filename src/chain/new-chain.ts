import { ANONYMOUS, AUTHENTICATION } from "../core/authentication.ts";
import {
  type ClientAddressFunction,
  type ClientAddressOptions,
  checkClientAddressOptions,
  PEER_ADDRESS,
  resolveClientAddress,
} from "../core/client-address.ts";
import { bindValue, contextFrom } from "../core/context.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { FetchHandler, Handler, Middleware } from "../core/handler.ts";
import { matchPath, refusedPathResponse } from "../core/path.ts";
import { internalErrorResponse } from "../core/problem.ts";
import { Chain } from "../middleware/chain.ts";

/**
 * The legs of the security chain, each a `Middleware`, run in this order:
 * headers, CORS, rate limiting, session lookup, further authenticators, CSRF,
 * login, authorization. Only `authorization` is required: without it every
 * request would pass, so the chain refuses to be built.
 */
export interface SecurityOptions {
  /** Leg 1: security headers on every response, denials included. */
  readonly headers?: Middleware;
  /** Leg 2: CORS; answers preflights. */
  readonly cors?: Middleware;
  /** Leg 3: rate limiting. */
  readonly rateLimit?: Middleware;
  /** Leg 4: session lookup; binds the session and its principal. */
  readonly session?: Middleware;
  /** Authenticators that run after the session lookup, such as `basicAuth({ required: false })`. */
  readonly authentication?: Middleware | readonly Middleware[];
  /** Leg 5: CSRF protection. */
  readonly csrf?: Middleware;
  /** Leg 6: the login and logout endpoints; reachable only through the chain. */
  readonly login?: Middleware;
  /** Leg 7 (required): default-deny authorization, usually `authz.routes([...])`. */
  readonly authorization: Middleware;
  /**
   * Called with anything a leg or the wrapped handler throws; the client gets
   * a bare 500 either way. Default: `console.error`.
   */
  readonly onError?: (error: unknown, request: Request) => void;
  /**
   * Reads the socket peer address from what the runtime passes after the
   * request (`bunClientAddress`, `denoClientAddress`, `workersClientAddress`,
   * `nodeServerClientAddress`). Adapters for Node frameworks bind it themselves.
   * Default: none.
   */
  readonly clientAddress?: ClientAddressFunction;
  /**
   * How many forwarding proxies to believe (`X-Forwarded-For`, or `Forwarded`
   * with `forwardedHeader: "forwarded"`), or a predicate on proxy addresses.
   * Default `0`: forwarding headers are ignored.
   */
  readonly trustProxy?: ClientAddressOptions["trustProxy"];
  /** Which forwarding header the trusted proxies write. Default `"x-forwarded-for"`. */
  readonly forwardedHeader?: ClientAddressOptions["forwardedHeader"];
}

const LEG_NAMES = [
  "headers",
  "cors",
  "rateLimit",
  "session",
  "csrf",
  "login",
  "authorization",
] as const;

/** The security chain itself (Go's `securityhttp.New`): mount `chain.middleware` through an adapter. */
export function newChain(options: SecurityOptions): Chain {
  if (typeof options !== "object" || options === null)
    throw new InvalidOptionsError("newChain needs an options object");
  if (options.authorization === undefined) {
    throw new InvalidOptionsError(
      "the security chain needs an `authorization` leg (authz.routes([...])); an empty rule list denies everything",
    );
  }
  if (options.login !== undefined && options.session === undefined) {
    throw new InvalidOptionsError(
      "the login leg needs the session leg: pass `session: sessions({...})`",
    );
  }
  for (const name of LEG_NAMES) {
    const leg = options[name];
    if (leg !== undefined && typeof leg !== "function")
      throw new InvalidOptionsError(`option ${name} must be a middleware`);
  }
  const auth = options.authentication;
  if (auth !== undefined && typeof auth !== "function" && !Array.isArray(auth)) {
    throw new InvalidOptionsError("option authentication takes a middleware or an array of them");
  }
  const authenticators: Middleware[] =
    auth === undefined
      ? []
      : typeof auth === "function"
        ? [auth]
        : [...(auth as readonly Middleware[])];
  for (const leg of authenticators) {
    if (typeof leg !== "function")
      throw new InvalidOptionsError("option authentication takes middleware");
  }
  const onError = options.onError;

  checkClientAddressOptions(options);
  if (options.clientAddress !== undefined && typeof options.clientAddress !== "function") {
    throw new InvalidOptionsError("option clientAddress must be a function");
  }

  // The outer boundary only sees throws from the headers and CORS legs;
  // guardRequest catches everything further in, so those 500s carry both.
  const legs: Middleware[] = options.headers || options.cors ? [errorBoundary(onError)] : [];
  if (options.headers) legs.push(options.headers);
  if (options.cors) legs.push(options.cors);
  legs.push(guardRequest(onError, options));
  if (options.rateLimit) legs.push(options.rateLimit);
  if (options.session) legs.push(options.session);
  legs.push(...authenticators);
  if (options.csrf) legs.push(options.csrf);
  if (options.login) legs.push(options.login);
  legs.push(options.authorization);
  return new Chain(...legs);
}

/**
 * Go's `securityhttp.NewHandler`: one handler that runs the whole chain before
 * `handler` (any Fetch handler, such as Hono's `app.fetch`), so requests the
 * router has no route for are covered too.
 */
export function newHandler(handler: FetchHandler, options: SecurityOptions): Handler {
  if (typeof handler !== "function")
    throw new InvalidOptionsError("newHandler needs a handler function");
  return newChain(options).wrap(handler);
}

/**
 * Runs right after the headers and CORS legs, so its answers carry their headers: refuses
 * ambiguous paths once for every later leg, starts the request as anonymous,
 * and turns anything thrown further in into a bare 500.
 */
function guardRequest(onError: ErrorListener, options: SecurityOptions): Middleware {
  const { clientAddress } = options;
  const resolveAddress = clientAddress !== undefined || options.trustProxy !== undefined;
  return (next: Handler): Handler =>
    async (request, ...rest) => {
      if (matchPath(request) === undefined) {
        return refusedPathResponse();
      }
      if (!contextFrom(request).has(AUTHENTICATION)) bindValue(request, AUTHENTICATION, ANONYMOUS);
      try {
        if (resolveAddress) {
          const peer = clientAddress?.(request, ...rest);
          if (typeof peer === "string" && peer !== "") bindValue(request, PEER_ADDRESS, peer);
          resolveClientAddress(request, options);
        }
        return await next(request, ...rest);
      } catch (error) {
        return internalErrorResponse(onError, error, request);
      }
    };
}

type ErrorListener = SecurityOptions["onError"];

function errorBoundary(onError: ErrorListener): Middleware {
  return (next) =>
    async (request, ...rest) => {
      try {
        return await next(request, ...rest);
      } catch (error) {
        return internalErrorResponse(onError, error, request);
      }
    };
}
