/**
 * Child processes for the tests that need more than one instance or a store
 * they can freeze and kill: servers of test/fixtures/session-server.ts and
 * redis-server on a port of their own.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);

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

/** Spawns a server and resolves once it prints `ready`; rejects with its output if it exits first. */
async function spawnUntilReady(
  command: string,
  args: string[],
  ready: string,
): Promise<{ child: ChildProcess; exited: Promise<void> }> {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      if (output.includes(ready)) resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    void exited.then(() => reject(new Error(`${command} exited:\n${output}`)));
  });
  return { child, exited };
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
    ({ child, exited } = await spawnUntilReady(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      "Ready to accept connections",
    ));
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

export interface PostgresProcess {
  readonly port: number;
  readonly url: string;
  /** Stops every process of the server (postmaster and backends) without closing a socket. */
  freeze(): void;
  thaw(): void;
  kill(): Promise<void>;
  /** Starts it again on the same port and data (after `kill`). */
  restart(): Promise<void>;
}

/**
 * A PostgreSQL server of the test's own, on a free port, in a fresh data
 * directory (initdb, trust authentication on loopback), run as the `postgres`
 * user when the tests run as root. Never the shared server on 5432.
 */
export async function startPostgres(): Promise<PostgresProcess> {
  const { mkdtempSync } = await import("node:fs");
  const { execFileSync } = await import("node:child_process");
  const bin = "/usr/lib/postgresql/15/bin";
  const dir = mkdtempSync("/tmp/portcullis-pg-");
  const asPostgres = process.getuid?.() === 0;
  const run = (command: string, args: string[]): [string, string[]] =>
    asPostgres ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
  if (asPostgres) execFileSync("chown", ["postgres", dir]);
  const [initCommand, initArgs] = run(`${bin}/initdb`, [
    "-D",
    `${dir}/data`,
    "-U",
    "postgres",
    "--auth=trust",
    "-N",
  ]);
  execFileSync(initCommand, initArgs, { stdio: "ignore" });
  const port = await freePort();
  let child: ChildProcess;
  let exited: Promise<void>;
  const launch = async () => {
    const [command, args] = run(`${bin}/postgres`, [
      "-D",
      `${dir}/data`,
      "-p",
      String(port),
      "-k",
      dir,
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "fsync=off",
    ]);
    ({ child, exited } = await spawnUntilReady(command, args, "ready to accept connections"));
  };
  await launch();
  // The postmaster (its pid heads postmaster.pid) and its backends, whoever spawned them.
  const group = (signal: NodeJS.Signals) => {
    const { readFileSync } = require("node:fs") as typeof import("node:fs");
    let postmaster: number;
    try {
      postmaster = Number(readFileSync(`${dir}/data/postmaster.pid`, "utf8").split("\n")[0]);
    } catch {
      return;
    }
    let children: number[] = [];
    try {
      children = execFileSync("pgrep", ["-P", String(postmaster)])
        .toString()
        .split("\n")
        .filter(Boolean)
        .map(Number);
    } catch {
      // No backends.
    }
    for (const pid of [postmaster, ...children]) {
      try {
        process.kill(pid, signal);
      } catch {
        // Already gone.
      }
    }
  };
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    freeze: () => group("SIGSTOP"),
    thaw: () => group("SIGCONT"),
    kill: async () => {
      group("SIGCONT");
      group("SIGKILL");
      child.kill("SIGKILL");
      await exited;
      // A killed postmaster leaves its pid file; the next start must not mistake it for a live one.
      const { rmSync } = await import("node:fs");
      for (const leftover of [
        `${dir}/data/postmaster.pid`,
        `${dir}/.s.PGSQL.${port}.lock`,
        `${dir}/.s.PGSQL.${port}`,
      ])
        rmSync(leftover, { force: true });
    },
    restart: launch,
  };
}
