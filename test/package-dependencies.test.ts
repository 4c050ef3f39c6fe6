import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};

// The framework or engine an adapter or store plugs into: the application brings it. The MCP
// SDK's server package is the protocol portcullis/mcp serves: one copy, the application's.
const BROUGHT_BY_THE_APPLICATION = new Set([
  "@modelcontextprotocol/server",
  "express",
  "fastify",
  "koa",
  "hono",
  "next",
  "redis",
  "pg",
]);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "testing" ? [] : sources(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

/**
 * Packages the published code loads at run time (type-only imports erased): static imports, and
 * the optional peers loaded when first used (`import("x")`, `createRequire(...)("x")`).
 */
function runtimeImports(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of sources(join(ROOT, "src"))) {
    const text = readFileSync(file, "utf8");
    const specifiers = [
      ...text.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?from\s+"([^"]+)"/gms),
      ...text.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g),
      ...text.matchAll(/createRequire\([^)]*\)\(\s*"([^"]+)"\s*\)/g),
    ];
    for (const match of specifiers) {
      const specifier = match[1] as string;
      if (specifier.startsWith(".") || specifier.startsWith("node:")) continue;
      const name = specifier.startsWith("@")
        ? specifier.split("/").slice(0, 2).join("/")
        : (specifier.split("/")[0] as string);
      found.set(name, file.slice(ROOT.length + 1));
    }
  }
  return found;
}

describe("package.json", () => {
  it("installs every package the code loads, except the framework an adapter plugs into", () => {
    for (const [name, file] of runtimeImports()) {
      if (BROUGHT_BY_THE_APPLICATION.has(name)) {
        expect(pkg.peerDependencies?.[name], `${name} (${file}) as a peer`).toBeDefined();
        expect(pkg.peerDependenciesMeta?.[name]?.optional, `${name} optional`).toBe(true);
      } else {
        expect(
          pkg.dependencies?.[name],
          `${name}, loaded by ${file}, in dependencies`,
        ).toBeDefined();
      }
    }
  });

  it("sees the peers loaded when first used", () => {
    expect(runtimeImports().get("@modelcontextprotocol/server")).toBe("src/mcp/sdk.ts");
    expect(runtimeImports().get("redis")).toBe("src/stores/redis/client.ts");
  });

  it("does not leave an adapter's own helper to an optional peer npm skips", () => {
    expect(pkg.dependencies?.["fastify-plugin"]).toBeDefined();
    expect(pkg.peerDependencies?.["fastify-plugin"]).toBeUndefined();
  });
});
