/**
 * The Next.js example runs its chain once per request: the proxy's matcher
 * leaves out every route handler that runs the chain itself, and covers
 * everything else (pages without a route included).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { config } from "../examples/next/proxy.ts";

const APP = fileURLToPath(new URL("../examples/next/app", import.meta.url));

function routeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? routeFiles(join(dir, entry.name))
      : entry.name === "route.ts"
        ? [join(dir, entry.name)]
        : [],
  );
}

// Each matcher is a path-to-regexp source made of one group: read as a whole-path regular expression.
const matchers = config.matcher.map((source) => new RegExp(`^${source}$`));
const proxied = (path: string) => matchers.some((matcher) => matcher.test(path));

describe("the Next.js example's proxy matcher", () => {
  const routes = routeFiles(APP).map((file) => ({
    path: `/${relative(APP, file).replace(/\/?route\.ts$/, "")}`.replace(/\/$/, "") || "/",
    chained: /routeHandlers|withChain/.test(readFileSync(file, "utf8")),
  }));

  it("finds the example's routes, chained and not", () => {
    expect(routes.filter((r) => r.chained).map((r) => r.path)).toEqual(
      expect.arrayContaining(["/", "/api/me", "/admin/panel"]),
    );
    expect(routes.some((r) => !r.chained)).toBe(true);
  });

  it("skips every route that runs the chain itself, so no request is checked twice", () => {
    for (const route of routes.filter((r) => r.chained))
      expect(proxied(route.path), route.path).toBe(false);
  });

  it("covers every other route and paths without a route", () => {
    for (const route of routes.filter((r) => !r.chained))
      expect(proxied(route.path), route.path).toBe(true);
    for (const path of ["/nothing/here", "/admin/panel/deeper", "/admin", "/apix"])
      expect(proxied(path), path).toBe(true);
  });
});
