import { ANONYMOUS, type Authentication, authenticationFrom } from "../core/authentication.ts";
import { forbiddenResponse, unauthorizedResponse } from "../core/challenge.ts";
import { contextFrom } from "../core/context.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { UnreadableForm } from "../core/form.ts";
import { directLeg, type FetchHandler, type Middleware } from "../core/handler.ts";
import { declaredMethods, methodProblem } from "../core/http-method.ts";
import { OVERRIDE_FORM_BYTES, overrideMethodsWithForm } from "../core/method-override.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { matchPath, normalizePath, ROUTED_PATHS, refusedPathResponse } from "../core/path.ts";
import { patternCovers } from "../core/pattern.ts";
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
  /**
   * Methods beyond RFC 9110's and PATCH that rules may name, in upper case
   * (`["PROPFIND", "MKCOL"]`). Any other method a rule names is refused, so a
   * misspelt one (`"DELET"`) cannot leave its requests to a later rule.
   *
   * @default none
   */
  readonly extensionMethods?: readonly string[];
}

/**
 * Default-deny authorization: the first rule whose matcher covers the request
 * decides; a request no rule covers is denied. Denials answer 401 (with
 * `WWW-Authenticate`) to anonymous callers and 403 to authenticated ones.
 */
export function routes(rules: readonly Rule[], options: RoutesOptions = {}): Middleware {
  if (!Array.isArray(rules)) throw new InvalidOptionsError("routes needs an array of rules");
  rejectUnknownKeys("routes", options, ["hierarchy", "extensionMethods"]);
  const declared = declaredMethods("routes", options.extensionMethods);
  const problems: string[] = [];
  rules.forEach((rule: Rule, index) => {
    if (typeof rule?.matches !== "function" || typeof rule.check !== "function") {
      throw new InvalidOptionsError("routes takes rules made by match(...) or anyRequest()");
    }
    for (const method of rule.methods ?? []) {
      const problem = methodProblem(`routes: "${rule.description}"`, method, declared);
      if (problem !== undefined) problems.push(problem);
    }
    // The first covering rule decides, so a rule whose every request an earlier one takes never runs.
    const hiding = rules.slice(0, index).find((earlier) => hides(earlier, rule));
    if (hiding === undefined) return;
    problems.push(
      hiding.coversAll === true
        ? `routes: "${rule.description}" comes after "${hiding.description}" and can never run; put anyRequest() last`
        : `routes: "${rule.description}" can never run: "${hiding.description}" comes before it and matches every request it matches; put the narrower rule first`,
    );
  });
  if (problems.length > 0) throw new InvalidOptionsError(problems.join("\n"));
  const list: readonly Rule[] = Object.freeze([...rules]);
  const hierarchy = RoleHierarchy.of(options.hierarchy);

  const allows = (auth: Authentication, method: string, path: string): boolean => {
    for (const rule of list) {
      if (rule.matches(method, path)) return rule.check(auth, hierarchy);
    }
    return false;
  };

  const denied = (auth: Authentication, request: Request): Response =>
    auth.authenticated && !auth.anonymous ? forbiddenResponse() : unauthorizedResponse(request);

  // Not an async function: a request that passes is handed on with no promise of this leg's
  // own, and one with a body to read for `_method` waits in `decide` below.
  return directLeg((next) => (request, ...rest) => {
    try {
      const path = matchPath(request);
      if (path === undefined) return refusedPathResponse();
      const auth = authenticationFrom(request) ?? ANONYMOUS;
      // Every method the request may be dispatched as must be allowed: a method-override
      // middleware after the chain must not turn an allowed POST into a denied DELETE.
      const method = request.method.toUpperCase();
      if (!allows(auth, method, path)) return denied(auth, request);
      const paths = [path];
      // A rewrite before the chain: the router routes another path, and it must pass too.
      for (const raw of contextFrom(request).get(ROUTED_PATHS) ?? []) {
        const routed = normalizePath(raw);
        if (routed === undefined) return refusedPathResponse();
        if (routed !== path) paths.push(routed);
      }
      const found = overrideMethodsWithForm(request, OVERRIDE_FORM_BYTES);
      if (found instanceof Promise)
        return found.then((overrides) =>
          decide(overrides, auth, method, paths, request, rest, next),
        );
      return decide(found, auth, method, paths, request, rest, next);
    } catch (error) {
      return Promise.reject(error);
    }
  });

  function decide(
    overrides: string[] | UnreadableForm,
    auth: Authentication,
    method: string,
    paths: readonly string[],
    request: Request,
    rest: unknown[],
    next: FetchHandler,
  ): Response | Promise<Response> {
    if (!Array.isArray(overrides)) return unreadableBodyResponse();
    // Routers run a GET route for HEAD: a HEAD must pass as a GET too.
    if (method === "HEAD" && !overrides.includes("GET")) overrides.push("GET");
    // Usually there is nothing more to check: the one path under the one method passed.
    if (paths.length > 1 || overrides.length > 0) {
      const methods = [method, ...overrides];
      if (!paths.every((p) => methods.every((m) => allows(auth, m, p))))
        return denied(auth, request);
    }
    return next(request, ...rest);
  }
}

/** Whether `earlier` matches every request `later` matches (exact for rules made by match() and anyRequest()). */
function hides(earlier: Rule, later: Rule): boolean {
  if (earlier.coversAll === true) return true;
  const pattern = later.coversAll === true ? "/**" : later.pattern;
  if (earlier.pattern === undefined || pattern === undefined) return false;
  if (earlier.methods !== undefined) {
    if (later.methods === undefined || !later.methods.every((m) => earlier.methods?.includes(m)))
      return false;
  }
  return patternCovers(earlier.pattern, pattern);
}
