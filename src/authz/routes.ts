import { ANONYMOUS, authenticationFrom } from "../core/authentication.ts";
import { forbiddenResponse, unauthorizedResponse } from "../core/challenge.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Middleware } from "../core/handler.ts";
import { matchPath, refusedPathResponse } from "../core/path.ts";
import { RoleHierarchy, type RoleHierarchyInit } from "./hierarchy.ts";
import type { Rule } from "./rules.ts";

export interface RoutesOptions {
  /** Role hierarchy for `hasRole`/`hasAnyRole`: `"ADMIN > STAFF > USER"`, a record, or a `RoleHierarchy`. Default: none. */
  readonly hierarchy?: RoleHierarchyInit;
}

/**
 * Default-deny authorization: the first rule whose matcher covers the request
 * decides; a request no rule covers is denied. Denials answer 401 (with
 * `WWW-Authenticate`) to anonymous callers and 403 to authenticated ones.
 */
export function routes(rules: readonly Rule[], options: RoutesOptions = {}): Middleware {
  if (!Array.isArray(rules)) throw new InvalidOptionsError("routes needs an array of rules");
  for (const rule of rules) {
    if (typeof rule?.matches !== "function" || typeof rule.check !== "function") {
      throw new InvalidOptionsError("routes takes rules made by match(...) or anyRequest()");
    }
  }
  const list: readonly Rule[] = Object.freeze([...rules]);
  const hierarchy = RoleHierarchy.of(options.hierarchy);

  return (next) =>
    async (request, ...rest) => {
      const path = matchPath(request);
      if (path === undefined) return refusedPathResponse();
      const method = request.method.toUpperCase();
      const auth = authenticationFrom(request) ?? ANONYMOUS;
      for (const rule of list) {
        if (!rule.matches(method, path)) continue;
        if (rule.check(auth, hierarchy)) return next(request, ...rest);
        break;
      }
      return auth.authenticated && !auth.anonymous
        ? forbiddenResponse()
        : unauthorizedResponse(request);
    };
}
