export { compilePattern, type PathMatcher } from "../core/pattern.ts";
export { type GuardOptions, type GuardSubject, guard } from "./guard.ts";
export { RoleHierarchy, type RoleHierarchyInit } from "./hierarchy.ts";
export { type RoutesOptions, routes } from "./routes.ts";
export { type AccessCheck, anyRequest, match, type Rule, RuleBuilder } from "./rules.ts";
