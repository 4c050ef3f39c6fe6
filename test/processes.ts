/**
 * Child processes for the tests that need more than one instance or a store
 * they can freeze and kill: servers of test/fixtures/session-server.ts and
 * redis-server on a port of their own.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === "object" && address !== null
          ? resolve(address.port)
          : reject(new Error("no port")),
      );
    });
  });
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly base: string;
  /** Everything the process wrote, stdout and stderr. */
  output(): string;
  /** Resolves with the exit code once the process has exited (`null` when killed by a signal). */
  readonly exited: Promise<number | null>;
  readonly alive: () => boolean;
  stop(): Promise<void>;
}

/** Starts a server fixture (default test/fixtures/session-server.ts) with `env` and waits until it listens. */
export async function startServer(
  env: Record<string, string>,
  fixture = "test/fixtures/session-server.ts",
): Promise<ServerProcess> {
  const child = spawn(process.execPath, ["--conditions=source", "--import", "tsx", fixture], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let alive = true;
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code) => {
      alive = false;
      resolve(code);
    }),
  );
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      const match = /\{"port":(\d+)\}/.exec(output);
      if (match) resolve(Number(match[1]));
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    void exited.then((code) => reject(new Error(`server exited ${code}:\n${output}`)));
  });
  return {
    child,
    base: `http://127.0.0.1:${port}`,
    output: () => output,
    exited,
    alive: () => alive,
    stop: async () => {
      if (!alive) return;
      child.kill("SIGKILL");
      await exited;
    },
  };
}

export interface RedisProcess {
  readonly port: number;
  readonly url: string;
  freeze(): void;
  thaw(): void;
  kill(): Promise<void>;
  /** Starts it again on the same port (after `kill`). */
  restart(): Promise<void>;
}

/** A redis-server of the test's own, with no persistence, on a free port. */
export async function startRedis(): Promise<RedisProcess> {
  const port = await freePort();
  let child: ChildProcess;
  let exited: Promise<void>;
  const launch = async () => {
    child = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
    let output = "";
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
        if (output.includes("Ready to accept connections")) resolve();
      });
      void exited.then(() => reject(new Error(`redis-server exited:\n${output}`)));
    });
  };
  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    freeze: () => child.kill("SIGSTOP"),
    thaw: () => child.kill("SIGCONT"),
    kill: async () => {
      child.kill("SIGCONT");
      child.kill("SIGKILL");
      await exited;
    },
    restart: launch,
  };
}

/** A fetch that never waits longer than `ms`: `"timeout"` instead of a status then. */
export async function fetchWithin(
  url: string,
  init: RequestInit,
  ms: number,
): Promise<{ status: number | "timeout" | "error"; elapsed: number }> {
  const started = performance.now();
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(ms) });
    await response.arrayBuffer();
    return { status: response.status, elapsed: performance.now() - started };
  } catch (error) {
    const name = (error as Error).name;
    return {
      status: name === "TimeoutError" || name === "AbortError" ? "timeout" : "error",
      elapsed: performance.now() - started,
    };
  }
}
