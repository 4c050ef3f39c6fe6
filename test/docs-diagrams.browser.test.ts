/**
 * The diagrams of the README and the guides: every ```mermaid block parses and
 * draws. Mermaid, the library GitHub draws them with, needs a DOM, so its own
 * bundle is loaded from node_modules into Debian's Chromium, with every
 * network request refused. The flows the guides describe each have their
 * picture, none grows past what a reader takes in, and every path a diagram
 * names is one the code serves.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "./browser.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const MERMAID = join(ROOT, "node_modules", "mermaid", "dist", "mermaid.min.js");
const DOCUMENTS = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];
// More arrows than this, a diagram is a wall: split it, or leave the detail to the prose.
const MAX_ARROWS = 20;

interface Diagram {
  readonly where: string;
  readonly text: string;
}

const diagrams: Diagram[] = DOCUMENTS.flatMap((document) => {
  const markdown = readFileSync(join(ROOT, document), "utf8");
  return [...markdown.matchAll(/^```mermaid\n([\s\S]*?)^```$/gm)].map((match) => ({
    where: `${document}:${markdown.slice(0, match.index).split("\n").length}`,
    text: match[1] as string,
  }));
});

/** The flows that have a picture, each in the guide that describes it. */
const EXPECTED: readonly (readonly [document: string, kind: string, names: RegExp])[] = [
  ["docs/01-chain.md", "flowchart", /authorization/],
  ["docs/12-agents-reference.md", "sequenceDiagram", /grant_type device_code/],
  ["docs/12-agents-reference.md", "sequenceDiagram", /cnf\.jkt/],
  ["docs/13-mcp.md", "sequenceDiagram", /code_verifier/],
  ["docs/13-mcp.md", "sequenceDiagram", /insufficient_scope/],
];

/** Every .ts file under `dir`: where a path a diagram names must be written. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [path] : [];
  });
}

let browser: Browser;
let page: Page;

beforeAll(async () => {
  browser = await launchChromium();
  const context = await browser.newContext();
  // Nothing leaves the machine: the bundle is injected, and anything it would fetch fails.
  await context.route("**/*", (route) => route.abort());
  page = await context.newPage();
  await page.setContent("<!doctype html><html><body></body></html>");
  await page.addScriptTag({ path: MERMAID });
  await page.evaluate(() => {
    const mermaid = (globalThis as unknown as { mermaid: MermaidApi }).mermaid;
    mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

interface MermaidApi {
  initialize(config: object): void;
  parse(text: string): Promise<{ diagramType: string }>;
  render(id: string, text: string): Promise<{ svg: string }>;
}

/** Parses and draws `text` in the page: the diagram's type and its SVG, or the error. */
function draw(
  text: string,
  id: string,
): Promise<{ type: string; svg: string } | { error: string }> {
  return page.evaluate(
    async ({ text, id }) => {
      const mermaid = (globalThis as unknown as { mermaid: MermaidApi }).mermaid;
      try {
        const { diagramType } = await mermaid.parse(text);
        const { svg } = await mermaid.render(id, text);
        return { type: diagramType, svg };
      } catch (error) {
        return { error: error instanceof Error ? error.message : String(error) };
      }
    },
    { text, id },
  );
}

describe("the guides' diagrams", () => {
  it("are there for every flow the guides describe", () => {
    for (const [document, kind, names] of EXPECTED)
      expect(
        diagrams.some(
          ({ where, text }) =>
            where.startsWith(`${document}:`) &&
            text.trimStart().startsWith(kind) &&
            names.test(text),
        ),
        `a ${kind} naming ${names} in ${document}`,
      ).toBe(true);
  });

  it("catches a diagram that does not parse", async () => {
    const broken = await draw("sequenceDiagram\n    Agent->>: nobody\n", "broken");
    expect(broken).toHaveProperty("error");
  });

  it.each(diagrams.map((diagram, i) => [diagram.where, diagram, i] as const))(
    "%s parses and draws",
    async (_, diagram, i) => {
      const drawn = await draw(diagram.text, `diagram-${i}`);
      if ("error" in drawn) expect.fail(drawn.error);
      expect(drawn.svg).toMatch(/^<svg[\s\S]*<\/svg>$/);
      expect(["sequence", "flowchart-v2", "flowchart"]).toContain(drawn.type);
    },
  );

  it.each(diagrams.map((diagram) => [diagram.where, diagram] as const))(
    "%s stays small enough to read",
    (_, diagram) => {
      const arrows = diagram.text.split("\n").filter((line) => /--|->>|==>/.test(line));
      expect(arrows.length).toBeGreaterThan(0);
      expect(arrows.length).toBeLessThanOrEqual(MAX_ARROWS);
    },
  );

  it("name only paths the code serves", () => {
    const code = [...sources(join(ROOT, "src")), ...sources(join(ROOT, "examples"))]
      .map((path) => readFileSync(path, "utf8"))
      .join("\n");
    const named = diagrams.flatMap(({ where, text }) =>
      [...text.matchAll(/(?<![\w.:/])\/[a-z][\w.-]*(?:\/[\w.-]+)*/g)].map(
        (match) => [where, match[0]] as const,
      ),
    );
    expect(named.length).toBeGreaterThan(5);
    expect(named.filter(([, path]) => !code.includes(`"${path}`))).toEqual([]);
  });
});
