/**
 * The public surface, subpath by subpath: every runtime export name is listed
 * in public-api.json, so adding, renaming or removing one is a visible
 * decision in review. After a deliberate change: PORTCULLIS_UPDATE_API=1 npm test.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const ROOT = new URL("..", import.meta.url);
const pkg = JSON.parse(readFileSync(new URL("package.json", ROOT), "utf8")) as {
  exports: Record<string, { source?: string } | string>;
};
const recorded = new URL("public-api.json", import.meta.url);

async function surface(): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const [path, entry] of Object.entries(pkg.exports)) {
    if (typeof entry !== "object" || entry.source === undefined) continue;
    const module = (await import(new URL(entry.source, ROOT).href)) as Record<string, unknown>;
    out[path] = Object.keys(module).sort();
  }
  return out;
}

describe("the public API", () => {
  it("exports exactly the recorded names from every subpath", async () => {
    const current = await surface();
    if (process.env.PORTCULLIS_UPDATE_API === "1")
      writeFileSync(recorded, `${JSON.stringify(current, null, 2)}\n`);
    const expected = JSON.parse(readFileSync(recorded, "utf8")) as Record<string, string[]>;
    expect(current).toEqual(expected);
  });
});

describe("the root entry", () => {
  it("stays the application API: at most 60 runtime names, none of the agent side", async () => {
    const root = Object.keys((await import(new URL("src/index.ts", ROOT).href)) as object);
    expect(root.length).toBeLessThanOrEqual(60);
    // Agent-side errors live on the paths of the modules that throw them.
    for (const name of [
      "ClientMetadataError",
      "DpopNonceRequiredError",
      "DpopProofInvalidError",
      "JwtInvalidError",
    ])
      expect(root).not.toContain(name);
  });
});
