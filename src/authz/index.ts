/**
 * Default-deny authorization: `routes` with `match` rules and role hierarchies, and `guard` for
 * decisions in the service layer. The same functions as `authz` of `portcullis`.
 *
 * @module portcullis/authz
 */
export { compilePattern, type PathMatcher } from "../core/pattern.ts";
export { type GuardOptions, type GuardSubject, guard } from "./guard.ts";
export { RoleHierarchy, type RoleHierarchyInit } from "./hierarchy.ts";
export { type RoutesOptions, routes } from "./routes.ts";
export { type AccessCheck, anyRequest, match, type Rule, RuleBuilder } from "./rules.ts";
