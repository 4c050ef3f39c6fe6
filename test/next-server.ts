/**
 * A real `next build` + `next start` for the socket tests: the app is built
 * once, and again only when its sources or src/ changed since the last build.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SRC = fileURLToPath(new URL("../src", import.meta.url));
const NEXT_BIN = createRequire(import.meta.url).resolve("next/dist/bin/next");
const ENV = { ...process.env, NEXT_TELEMETRY_DISABLED: "1" };

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === ".next" || entry.name === "node_modules") continue;
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function run(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [NEXT_BIN, ...args], { env: ENV, stdio: "pipe" });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`next ${args[0]} failed (${code}):\n${output}`)),
    );
  });
}

async function buildIfStale(app: string, sources: readonly string[]): Promise<void> {
  const buildId = join(app, ".next", "BUILD_ID");
  if (existsSync(buildId)) {
    const built = statSync(buildId).mtimeMs;
    if ([app, SRC, ...sources].every((dir) => built > newestMtime(dir))) return;
  }
  await run(["build", app]);
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export interface NextServer {
  readonly base: string;
  stop(): Promise<void>;
}

/**
 * Builds `app` if stale, starts `next start` on a free loopback port and waits
 * until `readyPath` answers 2xx. `sources`: other folders the app compiles in.
 */
export async function startNext(
  app: string,
  readyPath: string,
  sources: readonly string[] = [],
): Promise<NextServer> {
  await buildIfStale(app, sources);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    process.execPath,
    [NEXT_BIN, "start", app, "-p", String(port), "-H", "127.0.0.1"],
    { env: ENV, stdio: "ignore" },
  );
  const stop = async () => {
    if (child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${base}${readyPath}`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`next start ${app} did not come up`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return { base, stop };
}
