import { InvalidOptionsError } from "../core/errors.ts";

// RFC 6749 §3.3 scope-token: printable ASCII but space, `"` and `\`.
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/** Which scope names a client may ask for. */
export type ScopePolicy = readonly string[] | ((name: string) => boolean);

export function checkScopePolicy(where: string, policy: unknown): (name: string) => boolean {
  if (typeof policy === "function") return policy as (name: string) => boolean;
  if (
    !Array.isArray(policy) ||
    policy.some((name) => typeof name !== "string" || !SCOPE_TOKEN.test(name))
  )
    throw new InvalidOptionsError(`${where}: scopes must be a list of scope names or a function`);
  const known = new Set<string>(policy);
  return (name) => known.has(name);
}

/**
 * Parses a `scope` parameter into distinct names, in order; `undefined` when it
 * is malformed or names something `allowed` refuses (`invalid_scope`).
 */
export function parseScope(
  value: string | undefined,
  allowed: (name: string) => boolean,
): string[] | undefined {
  if (value === undefined) return [];
  const names: string[] = [];
  for (const name of value.split(" ")) {
    if (name === "") continue;
    if (!SCOPE_TOKEN.test(name) || !allowed(name)) return undefined;
    if (!names.includes(name)) names.push(name);
  }
  return names;
}
