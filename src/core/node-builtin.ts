/**
 * A Node built-in module where the runtime offers one without an import (Node, Bun, Deno), so
 * core code reaches it and still loads on Workers, where it is never used; `undefined` otherwise.
 */
export function nodeBuiltin(id: "node:crypto" | "node:buffer"): unknown {
  const global = globalThis as {
    navigator?: { userAgent?: string };
    process?: { getBuiltinModule?: (id: string) => unknown };
  };
  if (global.navigator?.userAgent === "Cloudflare-Workers") return undefined;
  try {
    return global.process?.getBuiltinModule?.(id);
  } catch {
    return undefined;
  }
}
