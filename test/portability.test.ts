import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = join(import.meta.dirname, "..", "src");
// Node-only code is allowed in the adapters of Node frameworks (their shared engine,
// src/adapters/node/engine, included) and the shared stores; everything else, the Hono and
// Next.js adapters included, must run on Node, Bun, Deno, Workers and the edge alike.
const NODE_ALLOWED = [/^adapters\/(node|express|fastify|koa)\//, /^stores\//];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [path] : [];
  });
}

const core = sources(SRC)
  .map((path) => relative(SRC, path))
  .filter((path) => !NODE_ALLOWED.some((allowed) => allowed.test(path)));

describe("core modules use web-standard APIs only", () => {
  it("finds the core modules", () => {
    expect(core).toContain("core/context.ts");
    expect(core).toContain("core/pass-through.ts");
    expect(core).toContain("adapters/next/index.ts");
    expect(core).toContain("adapters/hono/index.ts");
    expect(core.length).toBeGreaterThan(20);
  });

  it.each(core)("%s imports no node: builtin and uses no Buffer", (path) => {
    const text = readFileSync(join(SRC, path), "utf8");
    expect(text).not.toMatch(/from\s+["']node:/);
    expect(text).not.toMatch(/import\(\s*["']node:/);
    expect(text).not.toMatch(/\bBuffer\./);
    expect(text).not.toMatch(/require\(/);
  });
});
