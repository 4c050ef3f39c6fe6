/**
 * An import path whose optional peer is not installed says so in one line
 * naming the package to install, never with a module-not-found stack: run in
 * a process where Node itself cannot find the package.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

function runWithout(hidden: string, which: string) {
  const run = spawnSync(
    process.execPath,
    [
      "--conditions=source",
      "--require",
      "./test/fixtures/without-package.cjs",
      "--import",
      "tsx",
      "test/fixtures/missing-peer.ts",
      which,
    ],
    { cwd: ROOT, env: { ...process.env, HIDE_PACKAGE: hidden }, encoding: "utf8", timeout: 60_000 },
  );
  const lines = run.stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { status: run.status, lines, stderr: run.stderr };
}

describe("a missing optional peer", () => {
  it("portcullis/mcp: building the endpoint rejects with MissingPeerError naming @modelcontextprotocol/server", () => {
    const run = runWithout("@modelcontextprotocol/server", "mcp");
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toBe("");
    expect(run.lines).toEqual([
      {
        name: "MissingPeerError",
        code: "ERR_MISSING_PEER",
        packageName: "@modelcontextprotocol/server",
        message:
          "portcullis/mcp needs @modelcontextprotocol/server, which is not installed: npm install @modelcontextprotocol/server",
      },
    ]);
  }, 90_000);

  it("portcullis/stores/redis: createRedisClient throws MissingPeerError naming redis", () => {
    const run = runWithout("redis", "redis");
    expect(run.status, run.stderr).toBe(0);
    expect(run.lines).toEqual([
      {
        name: "MissingPeerError",
        code: "ERR_MISSING_PEER",
        packageName: "redis",
        message: "portcullis/stores/redis needs redis, which is not installed: npm install redis",
      },
    ]);
  }, 90_000);

  it("the hiding itself works: the same process without it uses both", () => {
    expect(runWithout("nothing-hidden", "redis").lines).toEqual([{ made: true }]);
    expect(runWithout("nothing-hidden", "mcp").lines).toEqual([{ built: true }]);
  }, 90_000);
});
