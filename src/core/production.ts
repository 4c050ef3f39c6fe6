/**
 * Whether `NODE_ENV` says production, read where the runtime has a
 * `process.env` (Node, Bun, Deno, Next's server and edge runtimes). Pages
 * that explain a set-up mistake to the person who made it do so only
 * outside production; a runtime without `process` counts as not production.
 */
export function inProduction(): boolean {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process
    ?.env;
  return env?.NODE_ENV === "production";
}
