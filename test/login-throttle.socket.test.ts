/**
 * The sign-in throttle under real concurrency, over real sockets: bursts of
 * guesses all in flight at once (each password check is held at a gate until
 * every request of the burst is either answered or checking), on the memory
 * store, on Redis, across two processes sharing Redis, through form logins and
 * HTTP Basic, and with a Redis that stalls or dies.
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { serve } from "@hono/node-server";
import { MemoryLoginAttemptStore } from "portcullis";
import { RedisLoginAttemptStore } from "portcullis/stores/redis";
import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LIMITS, PASSWORD, throttleApp } from "./fixtures/login-throttle-app.ts";
import { basicHeader } from "./helpers.ts";
import { freePort } from "./next-server.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const REDIS_URL = process.env.PORTCULLIS_REDIS_URL ?? "redis://127.0.0.1:6379";

interface Served {
  readonly base: string;
  close(): Promise<void>;
}

function serveHandler(handler: (request: Request) => Response | Promise<Response>) {
  return new Promise<Served>((resolve) => {
    const server = serve(
      { fetch: handler, port: 0, hostname: "127.0.0.1" },
      (info: AddressInfo) => {
        resolve({
          base: `http://127.0.0.1:${info.port}`,
          close: () =>
            new Promise<void>((done) => {
              (server as { closeAllConnections?: () => void }).closeAllConnections?.();
              server.close(() => done());
            }),
        });
      },
    );
  });
}

interface LoginSession {
  readonly cookie: string;
  readonly token: string;
}

/** A session and its CSRF token: a failed login keeps both, so one serves a whole burst. */
async function sessionAt(base: string): Promise<LoginSession> {
  const response = await fetch(`${base}/csrf`);
  expect(response.status).toBe(200);
  const cookie = (response.headers.getSetCookie()[0] ?? "").split(";")[0] as string;
  const { token } = (await response.json()) as { token: string };
  return { cookie, token };
}

function formLogin(base: string, session: LoginSession, username: string, password: string) {
  return fetch(`${base}/login`, {
    method: "POST",
    headers: {
      cookie: session.cookie,
      "x-csrf-token": session.token,
      "content-type": "application/json",
    },
    body: JSON.stringify({ username, password }),
  });
}

function basicCall(base: string, username: string, password: string) {
  return fetch(`${base}/me`, { headers: { authorization: basicHeader(username, password) } });
}

async function stateAt(base: string): Promise<{ checks: number; pending: number }> {
  return (await (await fetch(`${base}/state`)).json()) as { checks: number; pending: number };
}

async function openGate(base: string): Promise<void> {
  await (await fetch(`${base}/open-gate`)).arrayBuffer();
}

async function waitUntil(condition: () => Promise<boolean>, what: string, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Sends every request of `burst` at once, each to its server, and waits until
 * each is answered or held at its server's gate: no check has ended yet. Then
 * sends `last` (the right password) and waits until it is answered or held too,
 * opens the gates and answers every status, `last`'s at the end.
 */
async function gatedBurst(
  burst: ReadonlyArray<{ base: string; send: () => Promise<Response> }>,
  last?: { base: string; send: () => Promise<Response> },
): Promise<{ statuses: number[]; last: number | undefined; checks: number }> {
  const bases = [...new Set([...burst.map((b) => b.base), ...(last ? [last.base] : [])])];
  let answered = 0;
  const settle = (send: () => Promise<Response>) =>
    send().then(async (response) => {
      await response.arrayBuffer();
      answered++;
      return response.status;
    });
  const pendingAll = async () => {
    let pending = 0;
    for (const base of bases) pending += (await stateAt(base)).pending;
    return pending;
  };
  const statuses = burst.map((b) => settle(b.send));
  await waitUntil(
    async () => answered + (await pendingAll()) === burst.length,
    "every request of the burst answered or checking",
  );
  let lastStatus: Promise<number> | undefined;
  if (last !== undefined) {
    lastStatus = settle(last.send);
    await waitUntil(
      async () => answered + (await pendingAll()) === burst.length + 1,
      "the last request answered or checking",
    );
  }
  for (const base of bases) await openGate(base);
  const all = await Promise.all(statuses);
  const lastAnswer = lastStatus === undefined ? undefined : await lastStatus;
  let checks = 0;
  for (const base of bases) checks += (await stateAt(base)).checks;
  return { statuses: all, last: lastAnswer, checks };
}

const count = (statuses: number[], status: number) => statuses.filter((s) => s === status).length;

const redis = createClient({ url: REDIS_URL });
const PREFIX = `portcullis-test:${crypto.randomUUID()}:`;

beforeAll(async () => {
  redis.on("error", () => {});
  await redis.connect();
});

afterAll(async () => {
  const keys = await redis.keys(`${PREFIX}*`);
  if (keys.length > 0) await redis.del(keys);
  await redis.quit();
});

const stores = [
  ["the memory store", () => new MemoryLoginAttemptStore()],
  [
    "RedisLoginAttemptStore",
    () => new RedisLoginAttemptStore({ client: redis, prefix: `${PREFIX}${crypto.randomUUID()}:` }),
  ],
] as const;

describe.each(stores)("concurrent guesses on %s, one process", (_label, makeStore) => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  async function start() {
    const app = await throttleApp(makeStore());
    served = await serveHandler(app.handler);
    return served.base;
  }

  it("50 concurrent form logins for one username run at most 5 password checks, and the right password sent 50th is refused", async () => {
    const base = await start();
    const session = await sessionAt(base);
    const burst = Array.from({ length: 49 }, (_, i) => ({
      base,
      send: () => formLogin(base, session, "alice", `guess-${i}`),
    }));
    const result = await gatedBurst(burst, {
      base,
      send: () => formLogin(base, session, "alice", PASSWORD),
    });
    expect(result.checks).toBeLessThanOrEqual(LIMITS.maxFailuresPerUser);
    expect(result.last).toBe(429);
    expect(count(result.statuses, 401)).toBe(result.checks);
    expect(count(result.statuses, 429)).toBe(49 - result.checks);
    // Still throttled once every check is over.
    expect((await formLogin(base, session, "alice", PASSWORD)).status).toBe(429);
    expect((await stateAt(base)).checks).toBe(result.checks);
  });

  it("60 concurrent form logins for different usernames from one address run at most 20 checks", async () => {
    const base = await start();
    const session = await sessionAt(base);
    const burst = Array.from({ length: 60 }, (_, i) => ({
      base,
      send: () => formLogin(base, session, `user-${i}`, "Summer2024!"),
    }));
    const result = await gatedBurst(burst);
    expect(result.checks).toBeLessThanOrEqual(LIMITS.maxFailuresPerClient);
    expect(count(result.statuses, 401)).toBe(result.checks);
    expect(count(result.statuses, 429)).toBe(60 - result.checks);
  });

  it("30 concurrent wrong Basic guesses run at most 5 checks; the right one is then refused with 429", async () => {
    const base = await start();
    const burst = Array.from({ length: 30 }, (_, i) => ({
      base,
      send: () => basicCall(base, "alice", `guess-${i}`),
    }));
    const result = await gatedBurst(burst, {
      base,
      send: () => basicCall(base, "alice", PASSWORD),
    });
    expect(result.checks).toBeLessThanOrEqual(LIMITS.maxFailuresPerUser);
    expect(result.last).toBe(429);
    expect(count(result.statuses, 401)).toBe(result.checks);
    const refused = await basicCall(base, "alice", PASSWORD);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });

  it("counts Basic guesses and form logins against one budget", async () => {
    const base = await start();
    await openGate(base);
    const session = await sessionAt(base);
    for (let i = 0; i < 3; i++) {
      expect((await formLogin(base, session, "alice", `form-guess-${i}`)).status).toBe(401);
    }
    for (let i = 0; i < 2; i++) {
      expect((await basicCall(base, "alice", `basic-guess-${i}`)).status).toBe(401);
    }
    expect((await basicCall(base, "alice", PASSWORD)).status).toBe(429);
    expect((await formLogin(base, session, "alice", PASSWORD)).status).toBe(429);
    expect((await stateAt(base)).checks).toBe(5);
  });

  it("lets a client that knows the password send it on many parallel Basic calls", async () => {
    const base = await start();
    await openGate(base);
    const statuses = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const response = await basicCall(base, "alice", PASSWORD);
        await response.arrayBuffer();
        return response.status;
      }),
    );
    expect(statuses).toEqual(Array(40).fill(200));
  });
});

describe("two server processes sharing Redis", () => {
  const children: ChildProcess[] = [];
  const bases: string[] = [];
  const prefix = `${PREFIX}two-processes:`;

  async function startChild(): Promise<string> {
    const child = spawn(
      process.execPath,
      ["--conditions=source", "--import", "tsx", "test/fixtures/login-throttle-server.ts"],
      {
        cwd: ROOT,
        env: { ...process.env, PORTCULLIS_REDIS_URL: REDIS_URL, PORTCULLIS_TEST_PREFIX: prefix },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    children.push(child);
    let output = "";
    const port = await new Promise<string>((resolve, reject) => {
      child.stdout?.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
        const match = /listening (\d+)/.exec(output);
        if (match) resolve(match[1] as string);
      });
      child.stderr?.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
      });
      child.on("exit", (code) => reject(new Error(`server exited (${code}):\n${output}`)));
    });
    return `http://127.0.0.1:${port}`;
  }

  beforeAll(async () => {
    bases.push(...(await Promise.all([startChild(), startChild()])));
  }, 60_000);

  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
  });

  afterEach(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(keys);
    for (const base of bases) await (await fetch(`${base}/reset`)).arrayBuffer();
  });

  it("200 concurrent guesses at one username, split across both, run at most 5 checks in all", async () => {
    const [one, two] = bases as [string, string];
    const sessions = [await sessionAt(one), await sessionAt(two)] as const;
    const burst = Array.from({ length: 200 }, (_, i) => {
      const base = i % 2 === 0 ? one : two;
      const session = sessions[i % 2] as LoginSession;
      return { base, send: () => formLogin(base, session, "alice", `guess-${i}`) };
    });
    const result = await gatedBurst(burst, {
      base: two,
      send: () => formLogin(two, sessions[1], "alice", PASSWORD),
    });
    expect(result.checks).toBeLessThanOrEqual(LIMITS.maxFailuresPerUser);
    expect(result.last).toBe(429);
    expect(count(result.statuses, 401)).toBe(result.checks);
    expect(count(result.statuses, 429)).toBe(200 - result.checks);
  }, 60_000);

  it("200 concurrent guesses at different usernames from one address, split across both, run at most 20 checks in all", async () => {
    const [one, two] = bases as [string, string];
    const sessions = [await sessionAt(one), await sessionAt(two)] as const;
    const burst = Array.from({ length: 200 }, (_, i) => {
      const base = i % 2 === 0 ? one : two;
      const session = sessions[i % 2] as LoginSession;
      return { base, send: () => formLogin(base, session, `user-${i}`, "Summer2024!") };
    });
    const result = await gatedBurst(burst);
    expect(result.checks).toBeLessThanOrEqual(LIMITS.maxFailuresPerClient);
    expect(count(result.statuses, 401)).toBe(result.checks);
    expect(count(result.statuses, 429)).toBe(200 - result.checks);
  }, 60_000);

  it("200 concurrent Basic guesses split across both run at most 5 checks", async () => {
    const [one, two] = bases as [string, string];
    const burst = Array.from({ length: 200 }, (_, i) => {
      const base = i % 2 === 0 ? one : two;
      return { base, send: () => basicCall(base, "alice", `guess-${i}`) };
    });
    const result = await gatedBurst(burst, {
      base: one,
      send: () => basicCall(one, "alice", PASSWORD),
    });
    expect(result.checks).toBeLessThanOrEqual(LIMITS.maxFailuresPerUser);
    expect(result.last).toBe(429);
  }, 60_000);
});

describe("a Redis that stalls or dies", () => {
  let server: ChildProcess | undefined;
  let port = 0;
  let served: Served | undefined;

  function startRedis(): Promise<ChildProcess> {
    return new Promise((resolve, reject) => {
      const child = spawn(
        "redis-server",
        [
          "--port",
          String(port),
          "--bind",
          "127.0.0.1",
          "--save",
          "",
          "--appendonly",
          "no",
          "--daemonize",
          "no",
        ],
        { stdio: ["ignore", "pipe", "pipe"] },
      );
      let output = "";
      child.stdout?.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
        if (output.includes("Ready to accept connections")) resolve(child);
      });
      child.on("exit", (code) => reject(new Error(`redis-server exited (${code}): ${output}`)));
    });
  }

  let faulty: ReturnType<typeof createClient>;
  beforeAll(async () => {
    port = await freePort();
    server = await startRedis();
    faulty = createClient({ url: `redis://127.0.0.1:${port}` });
    // Without a listener a connection error would end the test process.
    faulty.on("error", () => {});
    await faulty.connect();
    const store = new RedisLoginAttemptStore({ client: faulty, timeoutMs: 300 });
    const app = await throttleApp(store);
    served = await serveHandler(app.handler);
    await openGate(served.base);
  }, 30_000);

  afterAll(async () => {
    await served?.close();
    server?.kill("SIGKILL");
    faulty?.destroy();
  });

  /** Rejects when `promise` has not settled within `ms`: a hang fails instead of stalling. */
  function within<T>(promise: Promise<T>, ms: number): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }

  it("answers 503 to login and Basic while Redis is frozen, and signs in again once it is back", async () => {
    const base = (served as Served).base;
    const session = await sessionAt(base);
    expect((await basicCall(base, "alice", PASSWORD)).status).toBe(200);
    server?.kill("SIGSTOP");
    try {
      const login = await within(formLogin(base, session, "alice", PASSWORD), 5000);
      expect(login.status).toBe(503);
      expect(login.headers.get("content-type")).toBe("application/problem+json");
      const basic = await within(basicCall(base, "alice", PASSWORD), 5000);
      expect(basic.status).toBe(503);
    } finally {
      server?.kill("SIGCONT");
    }
    await waitUntil(
      async () => (await basicCall(base, "alice", PASSWORD)).status === 200,
      "Basic sign-in after Redis thawed",
    );
  });

  it("answers 503 while Redis is dead, and recovers by itself when it is restarted", async () => {
    const base = (served as Served).base;
    const exited = new Promise((resolve) => server?.once("exit", resolve));
    server?.kill("SIGKILL");
    await exited;
    const session = await sessionAt(base);
    expect((await within(formLogin(base, session, "alice", PASSWORD), 5000)).status).toBe(503);
    expect((await within(basicCall(base, "alice", PASSWORD), 5000)).status).toBe(503);
    server = await startRedis();
    await waitUntil(
      async () => (await basicCall(base, "alice", PASSWORD)).status === 200,
      "Basic sign-in after Redis restarted",
    );
    expect((await formLogin(base, session, "alice", PASSWORD)).status).toBe(200);
  });
});
