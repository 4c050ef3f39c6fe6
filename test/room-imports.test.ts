import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";

// A room is a folder of src/ with an index.ts: its index is its face to the other rooms. Another
// room imports it only through that index, types included, so what one room uses of another is
// the public, documented surface. core is the shared base: any room may import its files one by
// one. Tests may reach inner files of the room they test.
const SRC = join(import.meta.dirname, "..", "src");
const CHECKED_ROOMS = ["mcp", "agentauth", "oauth2", "jwt"];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [path] : [];
  });
}

/** Every relative import and re-export of `path`, `import type` included. */
function relativeImports(path: string): string[] {
  const text = readFileSync(path, "utf8");
  const statement = /^(?:import|export)\s[^;]*?from\s+["'](\.[^"']+)["']/gms;
  return [...text.matchAll(statement)].map((match) => resolve(dirname(path), match[1] as string));
}

/** The room a file of src/ lives in (its first folder), `undefined` for src/index.ts. */
function roomOf(src: string, path: string): string | undefined {
  const parts = relative(src, path).split(sep);
  return parts.length > 1 ? parts[0] : undefined;
}

/** `from → to` for each import of a checked room that reaches past another room's index. */
function friendImports(rooms: readonly string[] = CHECKED_ROOMS, src = SRC): string[] {
  const found: string[] = [];
  for (const room of rooms) {
    for (const file of sources(join(src, room))) {
      for (const target of relativeImports(file)) {
        const other = roomOf(src, target);
        if (other === undefined || other === room || other === "core") continue;
        if (target === join(src, other, "index.ts")) continue;
        found.push(`${relative(src, file)} → ${relative(src, target)}`);
      }
    }
  }
  return found;
}

describe("imports between rooms", () => {
  it("reads multi-line and type imports", () => {
    const file = join(SRC, "oauth2", "authorization-server.ts");
    expect(relativeImports(file)).toContain(join(SRC, "oauth2", "metadata.ts"));
    expect(relativeImports(file)).toContain(join(SRC, "core", "handler.ts"));
  });

  it("finds an import of another room's inner file, and only that", () => {
    const src = mkdtempSync(join(tmpdir(), "rooms-"));
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(src, path)), { recursive: true });
      writeFileSync(join(src, path), text);
    };
    write("core/digest.ts", "export const d = 1;\n");
    write("jwt/index.ts", 'export { k } from "./keys.ts";\n');
    write("jwt/keys.ts", "export const k = 1;\n");
    write(
      "oauth2/server.ts",
      [
        'import { d } from "../core/digest.ts";',
        'import { k } from "../jwt/index.ts";',
        'import { x } from "./local.ts";',
        "import type {",
        "  K,",
        '} from "../jwt/keys.ts";',
        'export { k as again } from "../jwt/keys.ts";',
      ].join("\n"),
    );
    expect(friendImports(["oauth2"], src)).toEqual([
      "oauth2/server.ts → jwt/keys.ts",
      "oauth2/server.ts → jwt/keys.ts",
    ]);
  });

  it("agentauth, oauth2 and jwt use another room only through its index (core aside)", () => {
    expect(friendImports()).toEqual([]);
  });
});
