import {
  type Authentication,
  authenticationFrom,
  isAuthenticated,
} from "../core/authentication.ts";
import type { ContextSource } from "../core/context.ts";
import {
  AccessDeniedError,
  AuthenticationRequiredError,
  InvalidOptionsError,
} from "../core/errors.ts";
import { RoleHierarchy, type RoleHierarchyInit } from "./hierarchy.ts";

/** What a guard's decision sees. */
export interface GuardSubject<T> {
  readonly authentication: Authentication;
  readonly target: T;
  /** Role check that honours the guard's hierarchy. */
  hasRole(role: string): boolean;
  /** Literal authority check. */
  hasAuthority(authority: string): boolean;
}

/**
 * Options of `guard`.
 *
 * @example
 * ```ts
 * import { authz } from "portcullis";
 *
 * const canEdit = authz.guard<Invoice>(
 *   ({ authentication, target, hasRole }) =>
 *     hasRole("STAFF") || target.owner === authentication.name,
 *   { hierarchy: "ADMIN > STAFF > USER" }, // an ADMIN passes hasRole("STAFF") too
 * );
 * await canEdit(request, invoice); // rejects with AccessDeniedError when not allowed
 * ```
 */
export interface GuardOptions {
  /**
   * Role hierarchy for `hasRole`: `"ADMIN > STAFF > USER"`, a record, or a `RoleHierarchy`.
   *
   * @default none — `hasRole` compares roles literally
   */
  readonly hierarchy?: RoleHierarchyInit;
}

/**
 * A service-layer check on a domain object: not middleware. The returned
 * function resolves when `decide` allows, and rejects with
 * `AuthenticationRequiredError` for anonymous callers or `AccessDeniedError`
 * otherwise. A `decide` that throws denies.
 */
export function guard<T>(
  decide: (subject: GuardSubject<T>) => boolean | Promise<boolean>,
  options: GuardOptions = {},
): (context: ContextSource, target: T) => Promise<void> {
  if (typeof decide !== "function")
    throw new InvalidOptionsError("guard needs a decision function");
  const hierarchy = RoleHierarchy.of(options.hierarchy);
  return async (context, target) => {
    const auth = authenticationFrom(context);
    if (auth === undefined || !isAuthenticated(auth)) {
      throw new AuthenticationRequiredError("authentication is required");
    }
    const held = hierarchy?.authoritiesOf(auth);
    let allowed: boolean;
    try {
      allowed = await decide({
        authentication: auth,
        target,
        hasRole: (role) => (held ? held.has(role) : auth.authorities.includes(role)),
        hasAuthority: (authority) => auth.authorities.includes(authority),
      });
    } catch (cause) {
      throw new AccessDeniedError("access denied", { cause });
    }
    if (allowed !== true) throw new AccessDeniedError("access denied");
  };
}
