/**
 * Every relative link of the README and the guides (docs/*.md) leads
 * somewhere: the file exists, and a `#fragment` names a heading of the page it
 * points to, by GitHub's rule for heading anchors. The guides' index lists
 * every guide, so none is left off the map.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const GUIDES = readdirSync(join(ROOT, "docs"))
  .filter((name) => name.endsWith(".md"))
  .map((name) => join("docs", name));
const DOCUMENTS = ["README.md", ...GUIDES];

/** The text outside fenced code blocks, where links and headings are. */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```[^\n]*$/gm, "");
}

/** GitHub's anchor for a heading: the rendered text, lower-cased, punctuation dropped. */
function slug(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1") // a link's text
    .replace(/[`*]/g, "");
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a page, repeated headings numbered as GitHub numbers them. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  for (const match of prose(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const base = slug(match[1] as string);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    found.add(count === 0 ? base : `${base}-${count}`);
  }
  return found;
}

/** The targets of a page's inline links, inline code left out. */
function links(markdown: string): string[] {
  const text = prose(markdown).replace(/`[^`\n]*`/g, "");
  return [...text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1] as string);
}

const relative = DOCUMENTS.flatMap((document) =>
  links(readFileSync(join(ROOT, document), "utf8"))
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
    .map((target) => [document, target] as const),
);

describe("links between the README and the guides", () => {
  it("slugs headings as GitHub does", () => {
    expect(slug("Next.js 15 / 16")).toBe("nextjs-15--16");
    expect(slug("node:http")).toBe("nodehttp");
    expect(slug("The examples' chain")).toBe("the-examples-chain");
    expect(slug("`serveFetch` options")).toBe("servefetch-options");
    expect(slug("A [linked](x.md) heading")).toBe("a-linked-heading");
    expect([...anchors("# A\n## A\n```\n# not a heading\n```\n")]).toEqual(["a", "a-1"]);
  });

  it("are found", () => {
    expect(relative.length).toBeGreaterThan(20);
    expect(relative.map(([document]) => document)).toEqual(
      expect.arrayContaining(["README.md", "docs/README.md"]),
    );
  });

  it.each(relative)("%s → %s leads to a file and a heading", (document, target) => {
    const [path = "", fragment] = target.split("#", 2);
    const file = path === "" ? document : normalize(join(dirname(document), path));
    expect(file.startsWith(".."), `${target} leaves the repository`).toBe(false);
    expect(existsSync(join(ROOT, file)), `${file} exists`).toBe(true);
    if (fragment !== undefined) {
      expect(file.endsWith(".md"), `${target}: a fragment only on a page`).toBe(true);
      expect([...anchors(readFileSync(join(ROOT, file), "utf8"))]).toContain(fragment);
    }
  });

  it("include every guide in the index and in the README", () => {
    const listed = (document: string) =>
      new Set(
        relative
          .filter(([from]) => from === document)
          .map(([from, target]) => normalize(join(dirname(from), target.split("#")[0] ?? ""))),
      );
    const guides = GUIDES.filter((guide) => guide !== join("docs", "README.md"));
    expect(guides.filter((guide) => !listed(join("docs", "README.md")).has(guide))).toEqual([]);
    expect(guides.filter((guide) => !listed("README.md").has(guide))).toEqual([]);
  });

  it.each([
    ["docs/README.md", readFileSync(join(ROOT, "docs", "README.md"), "utf8")],
    ["README.md", guideList(readFileSync(join(ROOT, "README.md"), "utf8"))],
  ])("%s lists the guides in the order of their files, each under its file's number", (_, text) => {
    const items = [...text.matchAll(/^ *(\d+)\. \[[^\]]+\]\((?:docs\/)?((\d\d)-[^)#]+\.md)/gm)];
    const files = items.map((item) => item[2] as string);
    expect(files).toEqual(
      GUIDES.map((guide) => guide.slice("docs/".length))
        .filter((name) => name !== "README.md")
        .sort(),
    );
    for (const item of items) expect(Number(item[1]), item[2]).toBe(Number(item[3]));
  });
});

/** The README's "Guides" section: its numbered list is the guides' index. */
function guideList(readme: string): string {
  const start = readme.indexOf("\n## Guides\n");
  expect(start).toBeGreaterThan(0);
  const end = readme.indexOf("\n## ", start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}
