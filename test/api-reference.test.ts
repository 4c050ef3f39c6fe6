/**
 * The API reference (`npm run docs`, TypeDoc) documents every import path the
 * package exports: its entry points are the `source` files of package.json's
 * `exports`, so a new subpath cannot be left out of it. CI builds it with
 * warnings as errors; the build's output stays out of git.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const ROOT = new URL("..", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), "utf8");

const pkg = JSON.parse(read("package.json")) as {
  exports: Record<string, { source?: string } | string>;
  scripts: Record<string, string>;
};
const typedoc = JSON.parse(read("typedoc.json")) as {
  entryPoints: string[];
  out: string;
  treatWarningsAsErrors?: boolean;
};

/** A path as the repository spells it: no leading "./". */
const plain = (path: string) => path.replace(/^\.\//, "");

describe("the API reference", () => {
  it("has an entry point for every subpath of package.json exports, and no other", () => {
    const exported = Object.values(pkg.exports)
      .filter((entry) => typeof entry === "object")
      .map((entry) => entry.source)
      .filter((source) => source !== undefined)
      .map(plain);
    expect(exported.length).toBeGreaterThan(20);
    expect([...typedoc.entryPoints].map(plain).sort()).toEqual([...exported].sort());
  });

  it("is built by npm run docs and CI, with warnings as errors, outside git", () => {
    expect(pkg.scripts.docs).toBe("typedoc");
    expect(typedoc.treatWarningsAsErrors).toBe(true);
    expect(read(".ci/run")).toMatch(/^npm run docs$/m);
    const ignored = read(".gitignore").split("\n");
    expect(ignored).toContain(`${plain(typedoc.out)}/`);
  });
});
