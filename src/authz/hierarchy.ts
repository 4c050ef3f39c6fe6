import type { Authentication } from "../core/authentication.ts";
import { InvalidOptionsError } from "../core/errors.ts";

/**
 * Which roles a role implies, transitively: under `ADMIN > STAFF > USER` an
 * ADMIN also holds STAFF and USER for hierarchy-aware rules.
 */
export class RoleHierarchy {
  readonly #reachable: ReadonlyMap<string, ReadonlySet<string>>;
  // Principals are immutable, so their expanded authorities can be cached per object.
  readonly #cache = new WeakMap<Authentication, ReadonlySet<string>>();

  private constructor(reachable: ReadonlyMap<string, ReadonlySet<string>>) {
    this.#reachable = reachable;
  }

  /**
   * Parses `"ADMIN > STAFF > USER"`; several chains may be separated by new
   * lines or commas. A cycle (`A > B > A`) is a configuration error.
   */
  static parse(text: string): RoleHierarchy {
    if (typeof text !== "string")
      throw new InvalidOptionsError("a role hierarchy must be a string or a record");
    const edges: Record<string, string[]> = {};
    for (const line of text.split(/[\n,]/)) {
      if (line.trim() === "") continue;
      const roles = line.split(">").map((role) => role.trim());
      if (roles.length < 2 || roles.some((role) => role === "" || /\s/.test(role))) {
        throw new InvalidOptionsError(
          `malformed role hierarchy line: ${JSON.stringify(line.trim())}`,
        );
      }
      for (let i = 0; i + 1 < roles.length; i++) {
        const parent = roles[i] as string;
        edges[parent] = [...(edges[parent] ?? []), roles[i + 1] as string];
      }
    }
    return RoleHierarchy.from(edges);
  }

  /** Builds from `{ ADMIN: ["STAFF"], STAFF: ["USER"] }`. */
  static from(edges: Readonly<Record<string, readonly string[]>>): RoleHierarchy {
    const reachable = new Map<string, ReadonlySet<string>>();
    const visit = (role: string, path: string[]): Set<string> => {
      if (path.includes(role)) {
        throw new InvalidOptionsError(`role hierarchy has a cycle: ${[...path, role].join(" > ")}`);
      }
      const known = reachable.get(role);
      if (known !== undefined) return new Set(known);
      const out = new Set<string>([role]);
      const children = edges[role] ?? [];
      if (!Array.isArray(children)) {
        throw new InvalidOptionsError(`role hierarchy: ${role} must map to an array of roles`);
      }
      for (const child of children) {
        if (typeof child !== "string" || child === "")
          throw new InvalidOptionsError("role names must be non-empty strings");
        for (const r of visit(child, [...path, role])) out.add(r);
      }
      reachable.set(role, out);
      return out;
    };
    for (const role of Object.keys(edges)) visit(role, []);
    return new RoleHierarchy(reachable);
  }

  /** Normalizes the forms `routes` and `guard` accept. */
  static of(hierarchy: RoleHierarchyInit | undefined): RoleHierarchy | undefined {
    if (hierarchy === undefined || hierarchy instanceof RoleHierarchy) return hierarchy;
    if (typeof hierarchy === "string") return RoleHierarchy.parse(hierarchy);
    if (typeof hierarchy === "object" && hierarchy !== null) return RoleHierarchy.from(hierarchy);
    throw new InvalidOptionsError("a role hierarchy must be a string, a record or a RoleHierarchy");
  }

  /** Every authority `auth` holds directly or through the hierarchy. */
  authoritiesOf(auth: Authentication): ReadonlySet<string> {
    let out = this.#cache.get(auth);
    if (out === undefined) {
      const all = new Set<string>();
      for (const held of auth.authorities) {
        for (const r of this.#reachable.get(held) ?? [held]) all.add(r);
      }
      out = all;
      this.#cache.set(auth, out);
    }
    return out;
  }
}

export type RoleHierarchyInit =
  | string
  | Readonly<Record<string, readonly string[]>>
  | RoleHierarchy;
