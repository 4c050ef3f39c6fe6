import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// The rooms depend on each other in one direction (core ← legs ← chain ← adapters): no module
// reaches back, at run time, into one that imports it.
const SRC = join(import.meta.dirname, "..", "src");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [path] : [];
  });
}

/** Relative imports that exist at run time (`import type` and `export type` are erased). */
function runtimeImports(path: string): string[] {
  const text = readFileSync(path, "utf8");
  const found: string[] = [];
  const statement = /^(?:import|export)\s+(type\s+)?[^;]*?from\s+["'](\.[^"']+)["']/gms;
  for (const match of text.matchAll(statement)) {
    if (match[1] === undefined) found.push(resolve(dirname(path), match[2] as string));
  }
  return found;
}

function cycles(): string[][] {
  const graph = new Map(sources(SRC).map((path) => [path, runtimeImports(path)]));
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (node: string): void => {
    state.set(node, "open");
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open")
        found.push(stack.slice(stack.indexOf(next)).map((p) => relative(SRC, p)));
      else if (state.get(next) === undefined) visit(next);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const node of graph.keys()) if (state.get(node) === undefined) visit(node);
  return found;
}

describe("module graph", () => {
  it("reads the imports", () => {
    const runner = join(SRC, "adapters", "node", "engine", "chain-runner.ts");
    expect(runtimeImports(runner)).toContain(join(SRC, "core", "pass-through.ts"));
  });

  it("has no import cycle", () => {
    expect(cycles()).toEqual([]);
  });
});
