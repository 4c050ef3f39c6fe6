/**
 * The README's code blocks marked `<!-- file: path -->` are those files, line
 * for line: a quick start cannot drift from the example that runs and is tested.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const ROOT = new URL("..", import.meta.url);
const readme = readFileSync(new URL("README.md", ROOT), "utf8");
const blocks = [...readme.matchAll(/<!-- file: (\S+) -->\n```ts\n([\s\S]*?)```\n/g)].map(
  (match) => [match[1] as string, match[2] as string] as const,
);

describe("the README's file blocks", () => {
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
        // The Next.js section: its `chain` is the example's, its matcher the example's.
        "examples/next/proxy.ts",
        "examples/next/app/api/me/route.ts",
        "examples/next/app/admin/panel/route.ts",
      ]),
    );
  });

  it.each(blocks)("%s matches the file line for line", (path, block) => {
    expect(block).toBe(readFileSync(new URL(path, ROOT), "utf8"));
  });
});
