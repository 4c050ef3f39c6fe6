import {
  ANONYMOUS,
  AUTHENTICATION,
  ENDPOINT_AUTHENTICATES,
  type EndpointMatcher,
  endpointsOf,
} from "../core/authentication.ts";
import {
  type ClientAddressFunction,
  type ClientAddressOptions,
  checkClientAddressOptions,
  FRAMEWORK_TRUSTS_PROXY,
  PEER_ADDRESS,
  resolveClientAddress,
} from "../core/client-address.ts";
import { bindValue, contextFrom } from "../core/context.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import {
  directLeg,
  type FetchHandler,
  type Handler,
  type Middleware,
  onAnswer,
} from "../core/handler.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { matchPath, refusedPathResponse } from "../core/path.ts";
import { internalErrorResponse } from "../core/problem.ts";
import { warnOnce } from "../core/warning.ts";
import { csrf } from "../csrf/index.ts";
import { securityHeaders } from "../headers/index.ts";
import { type LoginEndpoint, loginMiddleware } from "../login/endpoint.ts";
import type { RateLimitLeg } from "../ratelimit/index.ts";
import { sessions } from "../session/index.ts";
import { type BrowserDenialOptions, browserDenials } from "./browser-denials.ts";
import { Chain } from "./chain.ts";

/**
 * The legs of the security chain, each a `Middleware`, run in this order:
 * headers, CORS, rate limiting, session lookup, further authenticators, CSRF,
 * login, authorization. `authorization` is required: without it every request
 * would pass, so the chain refuses to be built. Security headers, sessions and
 * CSRF protection are on unless turned off with `false`; CORS and rate limiting
 * need the application's origins and quotas, so they run when given.
 *
 * @example
 * ```ts
 * import { authz, basicAuth, cors, newHandler, rateLimit, sessions } from "portcullis";
 *
 * const handler = newHandler(app.fetch, {
 *   cors: cors({ origin: "https://app.example.com", credentials: true }),
 *   rateLimit: rateLimit({ rules: [{ limit: 300, windowMs: 60_000 }] }),
 *   session: sessions({ secure: process.env.NODE_ENV === "production" }),
 *   authentication: basicAuth({ credentials, required: false }),
 *   authorization: authz.routes([
 *     authz.match("GET", "/public/**").permitAll(),
 *     authz.anyRequest().authenticated(),
 *   ]),
 *   trustProxy: 1, // one reverse proxy in front, appending to X-Forwarded-For
 * });
 * ```
 */
export interface SecurityOptions {
  /**
   * Leg 1: security headers on every response, denials included; `false` for none.
   *
   * @default securityHeaders()
   */
  readonly headers?: Middleware | false | undefined;
  /**
   * Leg 2: CORS; answers preflights.
   *
   * @default none — no cross-origin reads beyond what browsers allow anyway, and preflights go on to authorization
   */
  readonly cors?: Middleware | false | undefined;
  /**
   * Leg 3: rate limiting. Rules keyed on `"principal"` are counted after the
   * session lookup and the authenticators, the others here.
   *
   * @default none — nothing is rate limited
   */
  readonly rateLimit?: Middleware | false | undefined;
  /**
   * Leg 4: session lookup; binds the session and its principal. `false` for a
   * chain without sessions, such as a bearer-token API.
   *
   * @default sessions() (memory store, nothing written until `save()`)
   */
  readonly session?: Middleware | false | undefined;
  /**
   * Authenticators that run after the session lookup, such as `basicAuth({ required: false })`.
   * Endpoints an authenticator declares as authenticating their own callers
   * (`agents.authenticator` declares the agent and OAuth endpoints) are left
   * to answer for themselves by every authenticator, whatever the order.
   *
   * @default none — only the session can sign a request in
   */
  readonly authentication?: Middleware | readonly Middleware[] | undefined;
  /**
   * Leg 5: CSRF protection; `false` turns it off (never with `login`).
   * Without sessions it still refuses cross-site browser requests, which
   * matters for credentials browsers send by themselves, such as Basic. A
   * front end on another origin (see `cors`) needs `csrf({ trustedOrigins })`.
   *
   * @default csrf()
   */
  readonly csrf?: Middleware | false | undefined;
  /**
   * Leg 6: the login and logout endpoints, `login({...})`; only mountable here.
   *
   * @default none — no login or logout endpoint
   */
  readonly login?: LoginEndpoint | undefined;
  /**
   * For browser page loads only: send a visitor who is not signed in to
   * `signInPath` (303, with `next` back to the page) and answer a 403 with an
   * HTML page. API clients keep the 401/403 problem JSON.
   *
   * @default off — browsers get the same 401/403 problem JSON as API clients
   */
  readonly browserDenials?: BrowserDenialOptions | false | undefined;
  /** Leg 7 (required): default-deny authorization, usually `authz.routes([...])`. */
  readonly authorization: Middleware;
  /**
   * Called with anything a leg or the wrapped handler throws; the client gets
   * a bare 500 either way.
   *
   * @default console.error
   */
  readonly onError?: ((error: unknown, request: Request) => void) | undefined;
  /**
   * Reads the socket peer address from what the runtime passes after the
   * request (`bunClientAddress`, `denoClientAddress`, `workersClientAddress`,
   * `nodeServerClientAddress`). Adapters for Node frameworks bind it themselves.
   *
   * @default none — the address is what an adapter bound, else unknown
   */
  readonly clientAddress?: ClientAddressFunction | undefined;
  /**
   * How many forwarding proxies to believe (`X-Forwarded-For`, or `Forwarded`
   * with `forwardedHeader: "forwarded"`), or a predicate on proxy addresses.
   *
   * @default 0 (forwarding headers are ignored)
   */
  readonly trustProxy?: ClientAddressOptions["trustProxy"] | undefined;
  /**
   * Which forwarding header the trusted proxies write.
   *
   * @default "x-forwarded-for"
   */
  readonly forwardedHeader?: ClientAddressOptions["forwardedHeader"] | undefined;
}

/** The security chain itself (Go's `securityhttp.New`): mount `chain.middleware` through an adapter. */
export function newChain(options: SecurityOptions): Chain {
  if (typeof options !== "object" || options === null)
    throw new InvalidOptionsError("newChain needs an options object");
  rejectUnknownKeys("newChain", options, [
    "headers",
    "cors",
    "rateLimit",
    "session",
    "authentication",
    "browserDenials",
    "csrf",
    "login",
    "authorization",
    "onError",
    "clientAddress",
    "trustProxy",
    "forwardedHeader",
  ]);
  if (options.authorization === undefined) {
    throw new InvalidOptionsError(
      "the security chain needs an `authorization` leg (authz.routes([...])); an empty rule list denies everything",
    );
  }
  const headers = leg("headers", options.headers, securityHeaders);
  const cors = leg("cors", options.cors);
  const rateLimitLeg = leg("rateLimit", options.rateLimit);
  const session = leg("session", options.session, sessions);
  const csrfLeg = leg("csrf", options.csrf, csrf);
  const authorization = options.authorization;
  if (typeof authorization !== "function")
    throw new InvalidOptionsError("option authorization must be a middleware");
  let loginLeg: Middleware | undefined;
  if (options.login !== undefined) {
    loginLeg = loginMiddleware(options.login);
    if (loginLeg === undefined)
      throw new InvalidOptionsError("option login takes what login({...}) returns");
    if (session === undefined || csrfLeg === undefined) {
      throw new InvalidOptionsError(
        "the login leg needs the session and CSRF legs: without them another site could sign a visitor in",
      );
    }
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
  const browser =
    options.browserDenials === undefined || options.browserDenials === false
      ? undefined
      : browserDenials(options.browserDenials);

  checkClientAddressOptions(options);
  if (options.clientAddress !== undefined && typeof options.clientAddress !== "function") {
    throw new InvalidOptionsError("option clientAddress must be a function");
  }

  // The outer boundary only sees throws from the headers and CORS legs;
  // guardRequest catches everything further in, so those 500s carry both.
  const legs: Middleware[] = headers || cors ? [errorBoundary(onError)] : [];
  if (headers) legs.push(headers);
  if (cors) legs.push(cors);
  legs.push(guardRequest(onError, options));
  if (browser) legs.push(browser);
  // Rules keyed on the principal are counted once the session and authenticators have run.
  const split = rateLimitLeg ? (rateLimitLeg as RateLimitLeg).placement : undefined;
  if (split) {
    if (split.beforeSession) legs.push(split.beforeSession);
  } else if (rateLimitLeg) legs.push(rateLimitLeg);
  if (session) legs.push(session);
  const endpoints = authenticators.flatMap((leg) => endpointsOf(leg) ?? []);
  if (endpoints.length > 0) legs.push(markEndpoints(endpoints));
  legs.push(...authenticators);
  if (split) legs.push(split.afterAuthentication);
  if (csrfLeg) legs.push(csrfLeg);
  if (loginLeg) legs.push(loginLeg);
  legs.push(authorization);
  return new Chain(...legs);
}

/** The leg under `name`: the one given, the default when none is, `undefined` when off. */
function leg(
  name: string,
  value: Middleware | false | undefined,
  byDefault?: () => Middleware,
): Middleware | undefined {
  if (value === false) return undefined;
  if (value === undefined) return byDefault?.();
  if (typeof value !== "function")
    throw new InvalidOptionsError(`option ${name} must be a middleware or false`);
  return value;
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
  const trustsNoProxy = options.trustProxy === undefined || options.trustProxy === 0;
  const forwardedHeader = options.forwardedHeader ?? "x-forwarded-for";
  // The answer further in is handed back as it is, with a handler for its rejection, rather
  // than awaited in a promise of this leg's own.
  return directLeg((next) => (request, ...rest) => {
    try {
      if (matchPath(request) === undefined) return refusedPathResponse();
      const context = contextFrom(request);
      if (!context.has(AUTHENTICATION)) bindValue(request, AUTHENTICATION, ANONYMOUS);
      if (
        trustsNoProxy &&
        context.get(FRAMEWORK_TRUSTS_PROXY) === true &&
        request.headers.has(forwardedHeader)
      )
        warnOnce(
          "PORTCULLIS_FORWARDED_HEADER_IGNORED",
          `the framework trusts forwarding proxies but the chain does not, so ${forwardedHeader} is ignored and every client behind the proxy shares its address; set newChain's trustProxy to the number of proxies, as the framework's own setting does`,
        );
    } catch (error) {
      return Promise.reject(error);
    }
    try {
      if (resolveAddress) {
        const peer = clientAddress?.(request, ...rest);
        if (typeof peer === "string" && peer !== "") bindValue(request, PEER_ADDRESS, peer);
        resolveClientAddress(request, options);
      }
      return caught(next(request, ...rest), onError, request);
    } catch (error) {
      return internalErrorResponse(onError, error, request);
    }
  });
}

/** The answer, or a bare 500 for its rejection. */
function caught(
  answer: Response | Promise<Response>,
  onError: ErrorListener,
  request: Request,
): Response | Promise<Response> {
  return onAnswer(
    answer,
    (response) => response,
    (error: unknown) => internalErrorResponse(onError, error, request),
  );
}

/**
 * The one place that decides, for every authenticator whatever their order,
 * that a request to an endpoint authenticating its own callers (declared by an
 * authenticator, as `agents.authenticator` does) is that endpoint's to answer.
 */
function markEndpoints(endpoints: readonly EndpointMatcher[]): Middleware {
  return directLeg((next) => (request, ...rest) => {
    if (endpoints.some((matches) => matches(request)))
      bindValue(request, ENDPOINT_AUTHENTICATES, true);
    return next(request, ...rest);
  });
}

type ErrorListener = SecurityOptions["onError"];

function errorBoundary(onError: ErrorListener): Middleware {
  return directLeg((next) => (request, ...rest) => {
    try {
      return caught(next(request, ...rest), onError, request);
    } catch (error) {
      return internalErrorResponse(onError, error, request);
    }
  });
}
