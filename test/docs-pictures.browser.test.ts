/**
 * The pictures of the example app's agent pages in the guides: each is a small
 * PNG under docs/images/, shown by a guide with words for who cannot see it,
 * and the script that takes them (`npm run screenshots`) still plays the
 * example from the agent's link to the connected-agents page. Pixels are not
 * compared: a page may change its look without failing anything here.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { PICTURES, takeScreenshots } from "./support/screenshots.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const IMAGES = join(ROOT, "docs", "images");
const GUIDES = readdirSync(join(ROOT, "docs"))
  .filter((name) => name.endsWith(".md"))
  .map((name) => [name, readFileSync(join(ROOT, "docs", name), "utf8")] as const);
const NAMES = Object.values(PICTURES);
const PNG_SIGNATURE = "89504e470d0a1a0a";
const MAX_BYTES = 120_000;

/** A PNG's width and height, from its IHDR chunk; `undefined` for anything else. */
function pngSize(bytes: Buffer): { width: number; height: number } | undefined {
  if (bytes.subarray(0, 8).toString("hex") !== PNG_SIGNATURE) return undefined;
  if (bytes.subarray(12, 16).toString("latin1") !== "IHDR") return undefined;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe("the pictures of the example's pages", () => {
  it("are every PNG under docs/images/", () => {
    expect(readdirSync(IMAGES).sort()).toEqual([...NAMES].sort());
  });

  it.each(NAMES)("%s is a small PNG of a readable width", (name) => {
    const bytes = readFileSync(join(IMAGES, name));
    const size = pngSize(bytes);
    expect(size, `${name} is a PNG`).toBeDefined();
    expect(size?.width).toBeGreaterThanOrEqual(640);
    expect(size?.width).toBeLessThanOrEqual(1280);
    expect(bytes.length).toBeLessThanOrEqual(MAX_BYTES);
  });

  it.each(NAMES)("%s is shown by a guide, with alt text", (name) => {
    const shown = GUIDES.flatMap(([guide, text]) =>
      [...text.matchAll(/!\[([^\]]*)\]\(images\/([^)\s]+)\)/g)]
        .filter((match) => match[2] === name)
        .map((match) => [guide, match[1] as string] as const),
    );
    expect(shown.length, `${name} in a guide`).toBeGreaterThan(0);
    for (const [guide, alt] of shown)
      expect(alt.trim().split(/\s+/).length, `${guide}: the alt text of ${name}`).toBeGreaterThan(
        4,
      );
  });

  it("are taken again by the script, from the example played end to end", async () => {
    const dir = mkdtempSync(join(tmpdir(), "portcullis-pictures-"));
    scratch.push(dir);
    await takeScreenshots(dir);
    for (const name of NAMES) {
      const size = pngSize(readFileSync(join(dir, name)));
      expect(size?.width, name).toBe(960);
      expect(size?.height, name).toBeGreaterThanOrEqual(300);
    }
  }, 120_000);
});
