import { ANONYMOUS, type Authentication, authenticationFrom } from "../core/authentication.ts";
import { forbiddenResponse, unauthorizedResponse } from "../core/challenge.ts";
import { contextFrom } from "../core/context.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Middleware } from "../core/handler.ts";
import { OVERRIDE_FORM_BYTES, overrideMethodsWithForm } from "../core/method-override.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { matchPath, normalizePath, ROUTED_PATHS, refusedPathResponse } from "../core/path.ts";
import { unreadableBodyResponse } from "../core/problem.ts";
import { RoleHierarchy, type RoleHierarchyInit } from "./hierarchy.ts";
import type { Rule } from "./rules.ts";

/**
 * Options of `routes`.
 *
 * @example
 * ```ts
 * import { authz } from "portcullis";
 *
 * const { anyRequest, match, routes } = authz;
 * const authorization = routes(
 *   [
 *     match("GET", "/public/**").permitAll(),
 *     match("/admin/**").hasRole("ADMIN"),
 *     match("/staff/**").hasRole("STAFF"), // ADMIN passes too, through the hierarchy
 *     anyRequest().authenticated(),
 *   ],
 *   { hierarchy: "ADMIN > STAFF > USER" },
 * );
 * ```
 */
export interface RoutesOptions {
  /**
   * Role hierarchy for `hasRole`/`hasAnyRole`: `"ADMIN > STAFF > USER"`, a record, or a `RoleHierarchy`.
   *
   * @default none — roles are compared literally
   */
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

  const allows = (auth: Authentication, method: string, path: string): boolean => {
    for (const rule of list) {
      if (rule.matches(method, path)) return rule.check(auth, hierarchy);
    }
    return false;
  };

  return (next) =>
    async (request, ...rest) => {
      const path = matchPath(request);
      if (path === undefined) return refusedPathResponse();
      const auth = authenticationFrom(request) ?? ANONYMOUS;
      // Every method the request may be dispatched as must be allowed: a method-override
      // middleware after the chain must not turn an allowed POST into a denied DELETE.
      const method = request.method.toUpperCase();
      let allowed = allows(auth, method, path);
      if (allowed) {
        const paths = [path];
        // A rewrite before the chain: the router routes another path, and it must pass too.
        for (const raw of contextFrom(request).get(ROUTED_PATHS) ?? []) {
          const routed = normalizePath(raw);
          if (routed === undefined) return refusedPathResponse();
          if (routed !== path) paths.push(routed);
        }
        const found = overrideMethodsWithForm(request, OVERRIDE_FORM_BYTES);
        const overrides = found instanceof Promise ? await found : found;
        if (!Array.isArray(overrides)) return unreadableBodyResponse();
        // Routers run a GET route for HEAD: a HEAD must pass as a GET too.
        if (method === "HEAD" && !overrides.includes("GET")) overrides.push("GET");
        // Usually there is nothing more to check: the one path under the one method passed.
        if (paths.length > 1 || overrides.length > 0) {
          const methods = [method, ...overrides];
          allowed = paths.every((p) => methods.every((m) => allows(auth, m, p)));
        }
      }
      if (allowed) return next(request, ...rest);
      return auth.authenticated && !auth.anonymous
        ? forbiddenResponse()
        : unauthorizedResponse(request);
    };
}
