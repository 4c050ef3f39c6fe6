import type { Authentication } from "../core/authentication.ts";
import { isAuthenticated } from "../core/authentication.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { isMethodToken } from "../core/http-method.ts";
import { compilePattern, type PathMatcher } from "../core/pattern.ts";
import type { RoleHierarchy } from "./hierarchy.ts";

/** Decides whether a principal may pass; `hierarchy` expands roles when the rule set has one. */
export type AccessCheck = (auth: Authentication, hierarchy: RoleHierarchy | undefined) => boolean;

/** One authorization rule: which requests it covers and who may pass. */
export interface Rule {
  readonly description: string;
  /** `method` is upper-cased, `path` normalized (see `normalizePath`). */
  readonly matches: (method: string, path: string) => boolean;
  readonly check: AccessCheck;
  /** Covers every request (`anyRequest()`): no rule after it can ever run. */
  readonly coversAll?: boolean;
  /** The path pattern of a `match()` rule, as written. */
  readonly pattern?: string;
  /** The methods of a `match(method, ...)` rule, as written; absent: every method. */
  readonly methods?: readonly string[];
}

/** What a `match()` rule covers, kept so that `routes` can tell which rules hide others. */
interface Scope {
  readonly pattern: string;
  readonly methods: readonly string[] | undefined;
}

/** Chooses who may pass the requests a matcher covers. */
export class RuleBuilder {
  readonly #description: string;
  readonly #matches: (method: string, path: string) => boolean;
  readonly #coversAll: boolean;
  readonly #scope: Scope | undefined;

  /** @internal use `match()` or `anyRequest()` */
  constructor(
    description: string,
    matches: (method: string, path: string) => boolean,
    coversAll = false,
    scope?: Scope,
  ) {
    this.#description = description;
    this.#matches = matches;
    this.#coversAll = coversAll;
    this.#scope = scope;
  }

  #rule(access: string, check: AccessCheck): Rule {
    const scope = this.#scope;
    return Object.freeze({
      description: `${this.#description} ${access}`,
      matches: this.#matches,
      check,
      coversAll: this.#coversAll,
      ...(scope === undefined ? {} : { pattern: scope.pattern }),
      ...(scope?.methods === undefined ? {} : { methods: scope.methods }),
    });
  }

  /** Anyone, anonymous included. */
  permitAll(): Rule {
    return this.#rule("permitAll", () => true);
  }

  /** Nobody. */
  denyAll(): Rule {
    return this.#rule("denyAll", () => false);
  }

  /** Any authenticated, non-anonymous principal. */
  authenticated(): Rule {
    return this.#rule("authenticated", (auth) => isAuthenticated(auth));
  }

  /** Principals holding `role`, directly or through the rule set's hierarchy. */
  hasRole(role: string): Rule {
    return this.hasAnyRole(role);
  }

  /** Principals holding one of `roles`, directly or through the hierarchy. */
  hasAnyRole(...roles: string[]): Rule {
    const wanted = names("hasAnyRole", roles);
    return this.#rule(`hasAnyRole(${wanted.join(",")})`, (auth, hierarchy) => {
      if (!isAuthenticated(auth)) return false;
      if (hierarchy === undefined) return wanted.some((r) => auth.authorities.includes(r));
      const held = hierarchy.authoritiesOf(auth);
      return wanted.some((r) => held.has(r));
    });
  }

  /** Principals holding `authority` literally; the hierarchy is not consulted. */
  hasAuthority(authority: string): Rule {
    return this.hasAnyAuthority(authority);
  }

  /** Principals holding one of `authorities` literally. */
  hasAnyAuthority(...authorities: string[]): Rule {
    const wanted = names("hasAnyAuthority", authorities);
    return this.#rule(
      `hasAnyAuthority(${wanted.join(",")})`,
      (auth) => isAuthenticated(auth) && wanted.some((a) => auth.authorities.includes(a)),
    );
  }

  /** A custom decision; only authenticated principals reach `check`, anonymous callers are refused with 401. */
  access(check: (auth: Authentication) => boolean): Rule {
    if (typeof check !== "function") throw new InvalidOptionsError("access needs a function");
    return this.#rule("access(custom)", (auth) => isAuthenticated(auth) && check(auth) === true);
  }
}

function names(rule: string, values: readonly string[]): string[] {
  if (values.length === 0 || values.some((v) => typeof v !== "string" || v.trim() === "")) {
    throw new InvalidOptionsError(`${rule} needs one or more non-empty names`);
  }
  return [...values];
}

/**
 * Covers requests whose path matches `pattern` (see `compilePattern`), with
 * any method, or only with the given method(s): `match("GET", "/reports/**")`.
 * Methods are written in upper case; `routes` refuses any but those of RFC
 * 9110 and PATCH unless declared in its `extensionMethods` option.
 */
export function match(pattern: string): RuleBuilder;
export function match(method: string | readonly string[], pattern: string): RuleBuilder;
export function match(first: string | readonly string[], second?: string): RuleBuilder {
  const pattern = second ?? (first as string);
  const path: PathMatcher = compilePattern(pattern);
  if (second === undefined) {
    return new RuleBuilder(`match(${pattern})`, (_m, p) => path(p), false, {
      pattern,
      methods: undefined,
    });
  }
  const methods = Object.freeze(typeof first === "string" ? [first] : [...first]);
  for (const m of methods) {
    if (!isMethodToken(m))
      throw new InvalidOptionsError(`not an HTTP method: ${JSON.stringify(m)}`);
  }
  if (methods.length === 0) throw new InvalidOptionsError("match needs at least one method");
  return new RuleBuilder(
    `match(${methods.join(",")} ${pattern})`,
    (m, p) => methods.includes(m) && path(p),
    false,
    { pattern, methods },
  );
}

/** Covers every request that reaches the rule set (the last rule of a chain, or a route group's only rule). */
export function anyRequest(): RuleBuilder {
  return new RuleBuilder("anyRequest", () => true, true);
}
