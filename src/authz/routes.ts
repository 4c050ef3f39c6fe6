import { ANONYMOUS, authenticationFrom } from "../core/authentication.ts";
import { forbiddenResponse, unauthorizedResponse } from "../core/challenge.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Middleware } from "../core/handler.ts";
import { rejectUnknownKeys } from "../core/options.ts";
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
  rejectUnknownKeys("routes", options, ["hierarchy"]);
  rules.forEach((rule: Rule, index) => {
    if (typeof rule?.matches !== "function" || typeof rule.check !== "function") {
      throw new InvalidOptionsError("routes takes rules made by match(...) or anyRequest()");
    }
    // The first covering rule decides, so nothing after a catch-all can ever run.
    if (rule.coversAll === true && index < rules.length - 1) {
      throw new InvalidOptionsError(
        `routes: "${(rules[index + 1] as Rule).description}" comes after "${rule.description}" and can never run; put anyRequest() last`,
      );
    }
  });
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
