/**
 * The code blocks of the README and the guides (docs/*.md) marked
 * `<!-- file: path -->` are those files, line for line: a quick start cannot
 * drift from the example that runs and is tested.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const ROOT = new URL("..", import.meta.url);
const documents = [
  "README.md",
  ...readdirSync(new URL("docs/", ROOT))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];
const texts = documents.map(
  (document) => [document, readFileSync(new URL(document, ROOT), "utf8")] as const,
);
const blocks = texts.flatMap(([document, text]) =>
  [...text.matchAll(/<!-- file: (\S+) -->\n```ts\n([\s\S]*?)```\n/g)].map(
    (match) => [match[1] as string, document, match[2] as string] as const,
  ),
);

describe("the README's and the guides' file blocks", () => {
  it("exist for the quick start and every framework example", () => {
    expect(blocks.map(([path]) => path)).toEqual(
      expect.arrayContaining([
        "examples/quickstart/server.ts",
        "examples/express/server.ts",
        "examples/fastify/server.ts",
        "examples/koa/server.ts",
        "examples/node/server.ts",
        "examples/shared/security.ts",
        "examples/shared/accounts.ts",
        "examples/agents-quickstart/server.ts",
        "examples/agents-quickstart/agent.ts",
        "examples/device/device-flow.ts",
        "examples/device/server.ts",
        "examples/stores/redis.ts",
        "examples/stores/agents.ts",
        "examples/recipes/csp.ts",
        "examples/recipes/session-data.ts",
        "examples/recipes/sign-in.ts",
        "examples/recipes/basic-auth.ts",
        "examples/recipes/api-key.ts",
        // The Next.js section: its `chain` is the example's, its matcher the example's.
        "examples/next/proxy.ts",
        "examples/next/lib/security.ts",
        "examples/next/app/api/me/route.ts",
        "examples/next/app/admin/panel/route.ts",
      ]),
    );
  });

  it("are every TypeScript block there is: no fragment that no compiler sees", () => {
    const fragments = texts.flatMap(([document, text]) =>
      [...text.matchAll(/(<!-- file: \S+ -->\n)?```(?:ts|typescript|js|javascript|tsx)\n/g)]
        .filter((match) => match[1] === undefined)
        .map(() => document),
    );
    expect(fragments).toEqual([]);
  });

  it("are the README's quick start", () => {
    expect(blocks.filter(([, document]) => document === "README.md").map(([path]) => path)).toEqual(
      ["examples/quickstart/server.ts"],
    );
  });

  it.each(blocks)("%s (in %s) matches the file line for line", (path, _document, block) => {
    expect(block).toBe(readFileSync(new URL(path, ROOT), "utf8"));
  });
});

/** The packages a file loads: bare specifiers, `portcullis/x` and `@scope/name/x` as their package. */
function packagesOf(code: string): string[] {
  const specifiers = [
    ...code.matchAll(/^\s*(?:import|export)\s+[^;]*?from\s+"([^"]+)"/gms),
    ...code.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g),
  ].map((match) => match[1] as string);
  return (
    specifiers
      // Relative files, Node's builtins and the app's own "@/" alias are no packages.
      .filter((specifier) => !/^(\.|node:|@\/)/.test(specifier))
      .map((specifier) =>
        specifier
          .split("/")
          .slice(0, specifier.startsWith("@") ? 2 : 1)
          .join("/"),
      )
  );
}

/** Every package an `npm install …` line of the document names (dev installs included). */
function installed(text: string): Set<string> {
  const lines = [...text.matchAll(/npm (?:install|i)\b([^`\n]*)/g)].map((m) => m[1] as string);
  return new Set(lines.flatMap((line) => line.split(/\s+/).filter((word) => /^[@a-z]/.test(word))));
}

describe("the guides' install lines", () => {
  const documentsWithFiles = texts.filter(([document]) =>
    blocks.some(([, inDocument]) => inDocument === document),
  );
  it.each(documentsWithFiles)(
    "%s names in an npm install line every package its files import",
    (document, text) => {
      const wanted = new Set(
        blocks
          .filter(([, inDocument]) => inDocument === document)
          .flatMap(([, , code]) => packagesOf(code)),
      );
      const named = installed(text);
      expect([...wanted].filter((name) => !named.has(name))).toEqual([]);
    },
  );
});
