import { bindValue, type ContextSource, contextFrom, createContextKey } from "./context.ts";
import { NoAuthenticationError } from "./errors.ts";
import type { Middleware } from "./handler.ts";

/** The principal the chain resolved for a request. */
export interface Authentication {
  /** The principal's name: a username, an API key id, an OAuth2 client id. */
  readonly name: string;
  /** Roles and other authorities, compared literally by the guards. */
  readonly authorities: readonly string[];
  /** True once credentials were verified; false for the anonymous principal. */
  readonly authenticated: boolean;
  /** True only for the anonymous principal the chain binds when nobody signed in. */
  readonly anonymous: boolean;
  /** Whatever the authenticator wants to carry along (a user record, a grant). */
  readonly details?: unknown;
}

/** The principal of a request that presented no credentials. */
export const ANONYMOUS: Authentication = Object.freeze({
  name: "anonymous",
  authorities: Object.freeze([]) as readonly string[],
  authenticated: false,
  anonymous: true,
});

/** An authenticated, non-anonymous principal. */
export function createAuthentication(
  name: string,
  authorities: Iterable<string> = [],
  details?: unknown,
): Authentication {
  const auth: Authentication =
    details === undefined
      ? { name, authorities: distinct(authorities), authenticated: true, anonymous: false }
      : {
          name,
          authorities: distinct(authorities),
          authenticated: true,
          anonymous: false,
          details,
        };
  return Object.freeze(auth);
}

/** `authorities` without repeats, in first-seen order, frozen. */
function distinct(authorities: Iterable<string>): readonly string[] {
  // A short array (a principal's roles) is copied with a scan; a Set costs more for a few.
  if (Array.isArray(authorities) && authorities.length <= 16) {
    const list: string[] = [];
    for (const authority of authorities as readonly string[])
      if (!list.includes(authority)) list.push(authority);
    return Object.freeze(list);
  }
  return Object.freeze([...new Set(authorities)]);
}

/** Where the chain keeps the principal. */
export const AUTHENTICATION = createContextKey<Authentication>("portcullis.authentication");

/** Binds `authentication` as the principal of `request` (used by authenticators). */
export function bindAuthentication(request: object, authentication: Authentication): void {
  bindValue(request, AUTHENTICATION, authentication);
}

/** The principal bound to `source`, or `undefined` when the chain did not run. */
export function authenticationFrom(source: ContextSource): Authentication | undefined {
  return contextFrom(source).get(AUTHENTICATION);
}

/**
 * The principal bound to `source`. Throws `NoAuthenticationError` when nothing
 * is bound: code that reads a principal the chain never resolved fails closed.
 */
export function mustAuthentication(source: ContextSource): Authentication {
  const auth = authenticationFrom(source);
  if (auth === undefined) {
    throw new NoAuthenticationError(
      "no authentication is bound to this request; is the security chain in front of this code?",
    );
  }
  return auth;
}

/** True only for an authenticated, non-anonymous principal. */
export function isAuthenticated(source: ContextSource | Authentication | undefined): boolean {
  if (source === undefined) return false;
  const auth = isAuthentication(source) ? source : authenticationFrom(source);
  return auth?.authenticated === true && !auth.anonymous;
}

function isAuthentication(value: object): value is Authentication {
  return (
    typeof (value as Authentication).name === "string" &&
    Array.isArray((value as Authentication).authorities) &&
    typeof (value as Authentication).authenticated === "boolean"
  );
}

/**
 * Set by an authenticator that verified the `Authorization` header itself
 * (an agent's client credentials), so later authenticators leave it alone.
 */
export const AUTHORIZATION_VERIFIED = createContextKey<true>("portcullis.authorization-verified");

/**
 * Set by the chain, before any authenticator runs, on a request to an endpoint
 * that authenticates its callers itself and answers in its own protocol (the
 * OAuth and agent endpoints). Its `Authorization` header is the endpoint's:
 * authenticators neither verify it nor answer for it, so a failure is never
 * answered in the chain's shape, and a client id never reaches a password check.
 */
export const ENDPOINT_AUTHENTICATES = createContextKey<true>("portcullis.endpoint-authenticates");

/** Which requests go to an endpoint that authenticates its callers itself. */
export type EndpointMatcher = (request: Request) => boolean;

const endpointMatchers = new WeakMap<Middleware, EndpointMatcher>();

/**
 * Attaches to an authenticator the endpoints that authenticate themselves
 * (`agents.authenticator` carries the agent and OAuth endpoints): a chain
 * holding it marks their requests with `ENDPOINT_AUTHENTICATES`.
 */
export function withEndpoints(authenticator: Middleware, endpoints: EndpointMatcher): Middleware {
  endpointMatchers.set(authenticator, endpoints);
  return authenticator;
}

/** The endpoints an authenticator declared with `withEndpoints`, if any. */
export function endpointsOf(authenticator: Middleware): EndpointMatcher | undefined {
  return endpointMatchers.get(authenticator);
}

/** Whether the chain marked `source` as going to an endpoint that authenticates itself. */
export function endpointAuthenticates(source: ContextSource): boolean {
  return contextFrom(source).get(ENDPOINT_AUTHENTICATES) === true;
}
