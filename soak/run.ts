// Soak: races, faults and floods against real servers on loopback, with figures.
// `npm run soak` (all scenarios, about two minutes), or `npm run soak -- login logout`
// for some of: login, logout, frozen, flood, ratelimit. Needs Redis on 127.0.0.1:6379
// (the shared scenarios) and redis-server on PATH (the fault scenario starts its own).
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { createClient } from "redis";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SHARED_REDIS = process.env.SOAK_REDIS_URL ?? "redis://127.0.0.1:6379";
const chosen = new Set(process.argv.slice(2));
const wanted = (name: string) => chosen.size === 0 || chosen.has(name);
const children = new Set<ChildProcess>();

interface Server {
  readonly base: string;
  readonly child: ChildProcess;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, "127.0.0.1");
  await once(probe, "listening");
  const { port } = probe.address() as { port: number };
  probe.close();
  return port;
}

async function startServer(env: Record<string, string>): Promise<Server> {
  const child = spawn(
    process.execPath,
    ["--conditions=source", "--import", "tsx", "soak/server.ts"],
    { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  children.add(child);
  child.on("exit", () => children.delete(child));
  let output = "";
  const port = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      const found = /soak-server (\d+)/.exec(output);
      if (found) resolve(found[1] as string);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`soak server exited ${code}:\n${output}`)));
  });
  return { base: `http://127.0.0.1:${port}`, child };
}

function stop(server: Server): void {
  server.child.kill("SIGKILL");
}

interface Reply {
  status: number;
  body: string;
  cookie?: string;
  headers: Headers;
  ms: number;
}

async function call(
  url: string,
  init: {
    method?: string;
    cookie?: string;
    xff?: string;
    headers?: Record<string, string>;
    body?: string;
    timeoutMs?: number;
  } = {},
): Promise<Reply> {
  const started = performance.now();
  const headers: Record<string, string> = { ...init.headers };
  if (init.cookie) headers.cookie = init.cookie;
  if (init.xff) headers["x-forwarded-for"] = init.xff;
  try {
    const response = await fetch(url, {
      method: init.method ?? "GET",
      headers,
      body: init.body,
      signal: AbortSignal.timeout(init.timeoutMs ?? 30_000),
    });
    const body = await response.text();
    const set = response.headers.getSetCookie().find((c) => /session=[^;]/.test(c));
    return {
      status: response.status,
      body,
      cookie: set?.split(";")[0],
      headers: response.headers,
      ms: performance.now() - started,
    };
  } catch {
    return { status: 0, body: "", headers: new Headers(), ms: performance.now() - started };
  }
}

/** A pre-login session: its cookie and a CSRF token for it. */
async function csrf(base: string, cookie?: string, xff?: string) {
  const reply = await call(`${base}/csrf`, { cookie, xff });
  const token = (JSON.parse(reply.body || "{}") as { token?: string }).token ?? "";
  return { cookie: reply.cookie ?? cookie ?? "", token };
}

function signIn(
  base: string,
  who: { cookie: string; token: string },
  username: string,
  password: string,
  xff?: string,
) {
  return call(`${base}/login`, {
    method: "POST",
    cookie: who.cookie,
    xff,
    headers: { "content-type": "application/json", "x-csrf-token": who.token },
    body: JSON.stringify({ username, password }),
  });
}

async function checks(servers: readonly Server[]): Promise<number> {
  let total = 0;
  for (const s of servers)
    total += (JSON.parse((await call(`${s.base}/soak/stats`)).body) as { checks: number }).checks;
  return total;
}

const prefix = () => `soak:${process.pid}:${Math.random().toString(36).slice(2)}:`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const line = (text: string) => console.log(`  ${text}`);

// Item 1: password checks under concurrent guesses.
async function loginRace(): Promise<void> {
  console.log("login: concurrent wrong-password guesses (allowed: 5 per username, 20 per client)");
  {
    const server = await startServer({ SOAK_STORE: "memory" });
    const who = await csrf(server.base, undefined, "10.1.0.1");
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        signIn(server.base, who, "alice", i === 49 ? "right" : `wrong${i}`, "10.1.0.1"),
      ),
    );
    line(
      `memory, one process: 50 guesses ran ${await checks([server])} password checks; the right password as the 50th answered ${replies[49]?.status}`,
    );
    stop(server);
  }
  for (const variant of ["one username", "many usernames"] as const) {
    const p = prefix();
    const a = await startServer({
      SOAK_STORE: "redis",
      SOAK_PREFIX: p,
      SOAK_REDIS_URL: SHARED_REDIS,
    });
    const b = await startServer({
      SOAK_STORE: "redis",
      SOAK_PREFIX: p,
      SOAK_REDIS_URL: SHARED_REDIS,
    });
    const who = await csrf(a.base, undefined, "10.2.0.1");
    const statuses = new Map<number, number>();
    await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const target = i % 2 === 0 ? a : b;
        const user = variant === "one username" ? "alice" : `user${i}`;
        const r = await signIn(target.base, who, user, `wrong${i}`, "10.2.0.1");
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      }),
    );
    line(
      `redis, two processes, ${variant}, one address: 200 guesses ran ${await checks([a, b])} password checks (${[...statuses].map(([s, n]) => `${n}×${s}`).join(", ")})`,
    );
    stop(a);
    stop(b);
  }
}

// Item 2: logout racing concurrent refreshes of the same session.
async function logoutRace(): Promise<void> {
  console.log("logout: POST /logout while 20 requests refresh the same session (touch every 1 ms)");
  for (const kind of ["memory", "redis"] as const) {
    const p = prefix();
    const env = {
      SOAK_STORE: kind,
      SOAK_PREFIX: p,
      SOAK_TOUCH_MS: "1",
      SOAK_REDIS_URL: SHARED_REDIS,
    };
    const a = await startServer(env);
    const b = kind === "redis" ? await startServer(env) : a;
    const trials = 10;
    let survived = 0;
    for (let t = 0; t < trials; t++) {
      const pre = await csrf(a.base);
      const signedIn = await signIn(a.base, pre, "alice", "right");
      const cookie = signedIn.cookie ?? pre.cookie;
      const { token } = await csrf(a.base, cookie);
      let running = true;
      const refreshers = Array.from({ length: 20 }, async () => {
        while (running) await call(`${b.base}/me`, { cookie });
      });
      await sleep(30);
      await call(`${a.base}/logout`, {
        method: "POST",
        cookie,
        headers: { "x-csrf-token": token },
      });
      await sleep(30);
      running = false;
      await Promise.all(refreshers);
      const after = [
        await call(`${a.base}/me`, { cookie }),
        await call(`${b.base}/me`, { cookie }),
      ];
      if (after.some((r) => r.status === 200)) survived++;
    }
    line(
      `${kind}${kind === "redis" ? ", two processes" : ""}: the old cookie still signed in after ${survived} of ${trials} logouts`,
    );
    stop(a);
    if (b !== a) stop(b);
  }
}

async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: "ignore" },
  );
  children.add(child);
  child.on("exit", () => children.delete(child));
  const client = createClient({ url: `redis://127.0.0.1:${port}` });
  client.on("error", () => {});
  for (let i = 0; i < 50; i++) {
    try {
      await client.connect();
      await client.ping();
      await client.quit();
      return child;
    } catch {
      await sleep(100);
    }
  }
  throw new Error("redis-server did not start");
}

// Items 3 and 4: a session store that stalls, then one that dies.
async function frozenStore(): Promise<void> {
  console.log(
    "frozen: 100 requests with a session cookie while the session store's Redis is frozen 10 s, then killed",
  );
  const port = await freePort();
  let redis = await startRedis(port);
  const server = await startServer({
    SOAK_STORE: "redis",
    SOAK_PREFIX: prefix(),
    SOAK_REDIS_URL: `redis://127.0.0.1:${port}`,
  });
  const pre = await csrf(server.base);
  const cookie = (await signIn(server.base, pre, "alice", "right")).cookie ?? pre.cookie;
  redis.kill("SIGSTOP");
  const started = performance.now();
  const pending = Array.from({ length: 100 }, (_, i) =>
    sleep(i * 20).then(() => call(`${server.base}/me`, { cookie, timeoutMs: 30_000 })),
  );
  await sleep(10_000);
  redis.kill("SIGCONT");
  const replies = await Promise.all(pending);
  const statuses = new Map<number, number>();
  for (const r of replies) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
  const slowest = Math.max(...replies.map((r) => r.ms));
  line(
    `frozen 10 s: ${[...statuses].map(([s, n]) => `${n}×${s}`).join(", ")}; slowest answer ${(slowest / 1000).toFixed(1)} s (after ${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );

  redis.kill("SIGKILL");
  await sleep(200);
  const down = await Promise.all(
    Array.from({ length: 20 }, () => call(`${server.base}/me`, { cookie, timeoutMs: 15_000 })),
  );
  const alive = server.child.exitCode === null;
  const downStatuses = new Map<number, number>();
  for (const r of down) downStatuses.set(r.status, (downStatuses.get(r.status) ?? 0) + 1);
  line(
    `killed: ${[...downStatuses].map(([s, n]) => `${n}×${s}`).join(", ")}; server process ${alive ? "still running" : `exited (${server.child.exitCode ?? server.child.signalCode})`}`,
  );
  if (alive) {
    redis = await startRedis(port);
    const restarted = performance.now();
    let status = 0;
    while (performance.now() - restarted < 15_000) {
      status = (await call(`${server.base}/me`, { cookie, timeoutMs: 5000 })).status;
      if (status !== 503 && status !== 0) break;
      await sleep(100);
    }
    line(
      `restarted: first answer other than 503 after ${((performance.now() - restarted) / 1000).toFixed(1)} s (${status}; the session itself died with Redis)`,
    );
  }
  stop(server);
  redis.kill("SIGKILL");
}

// Item 7: anonymous visitors flooding GET /csrf while real visitors sign in.
async function anonymousFlood(): Promise<void> {
  console.log(
    "flood: 20 000 anonymous GET /csrf from distinct addresses while 20 visitors sign in",
  );
  for (const kind of ["memory", "redis"] as const) {
    const p = prefix();
    const server = await startServer({
      SOAK_STORE: kind,
      SOAK_PREFIX: p,
      SOAK_SESSION_MAX: "2000",
      SOAK_REDIS_URL: SHARED_REDIS,
    });
    const visitors = await Promise.all(
      Array.from({ length: 20 }, (_, i) => csrf(server.base, undefined, `10.7.0.${i}`)),
    );
    let sent = 0;
    const flood = Array.from({ length: 64 }, async () => {
      while (sent < 20_000) {
        const n = sent++;
        await call(`${server.base}/csrf`, {
          xff: `10.${8 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`,
        });
      }
    });
    await Promise.all(flood);
    const results = await Promise.all(
      visitors.map((v, i) => signIn(server.base, v, "alice", "right", `10.7.0.${i}`)),
    );
    const failed = results.filter((r) => r.status !== 200).length;
    let stored = "";
    if (kind === "memory") {
      stored = `${(JSON.parse((await call(`${server.base}/soak/stats`)).body) as { sessions?: number }).sessions} sessions held (bound 2000)`;
    } else {
      const client = createClient({ url: SHARED_REDIS });
      await client.connect();
      let keys = 0;
      let ttl = 0;
      for await (const batch of client.scanIterator({ MATCH: `${p}session:*`, COUNT: 1000 })) {
        for (const key of batch) {
          keys++;
          ttl = Math.max(ttl, await client.pTTL(key));
        }
      }
      if (keys > 0) {
        for await (const batch of client.scanIterator({ MATCH: `${p}*`, COUNT: 1000 }))
          if (batch.length) await client.del(batch);
      }
      await client.quit();
      stored = `${keys} session keys in Redis, longest TTL ${Math.round(ttl / 60_000)} min`;
    }
    line(`${kind}: ${failed} of 20 sign-ins failed after the flood; ${stored}`);
    stop(server);
  }
}

// Item 8: one steady client's rate-limit counter while many new addresses flood.
async function rateLimitFlood(): Promise<void> {
  console.log(
    "ratelimit: a client at 10 requests/s while distinct addresses flood (memory store, 1000 counters)",
  );
  const server = await startServer({ SOAK_STORE: "memory", SOAK_RATE_MAX: "1000" });
  let running = true;
  let sent = 0;
  const flood = Array.from({ length: 32 }, async () => {
    while (running) {
      const n = sent++;
      await call(`${server.base}/soak/ping`, {
        xff: `10.${20 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`,
      });
    }
  });
  let last = Number.POSITIVE_INFINITY;
  let resets = 0;
  let steady = 0;
  const until = performance.now() + 10_000;
  while (performance.now() < until) {
    const r = await call(`${server.base}/soak/ping`, { xff: "10.19.0.1" });
    const remaining = Number(/;r=(\d+)/.exec(r.headers.get("ratelimit") ?? "")?.[1]);
    if (remaining > last) resets++;
    last = remaining;
    steady++;
    await sleep(100);
  }
  running = false;
  await Promise.all(flood);
  line(
    `${sent} flood requests in 10 s; the steady client's counter started over ${resets} times in ${steady} requests`,
  );
  stop(server);
}

try {
  if (wanted("login")) await loginRace();
  if (wanted("logout")) await logoutRace();
  if (wanted("frozen")) await frozenStore();
  if (wanted("flood")) await anonymousFlood();
  if (wanted("ratelimit")) await rateLimitFlood();
} finally {
  for (const child of children) child.kill("SIGKILL");
}
