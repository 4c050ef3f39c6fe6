// Soak: races, faults and floods against real servers on loopback, with figures.
// `npm run soak` (all scenarios, about two minutes), or `npm run soak -- login logout`
// for some of: login, logout, frozen, flood, ratelimit, approvals. Needs Redis on 127.0.0.1:6379
// (the shared scenarios) and redis-server on PATH (the fault scenario starts its own).
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { approvalBudget } from "./approval-budget.ts";
import { faults } from "./session-faults.ts";
import { floodSignIns } from "./session-flood.ts";
import { ROUNDS, raceOn } from "./session-race.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SHARED_REDIS = process.env.SOAK_REDIS_URL ?? "redis://127.0.0.1:6379";
const chosen = new Set(process.argv.slice(2));
const wanted = (name: string) => chosen.size === 0 || chosen.has(name);
const children = new Set<ChildProcess>();

interface Server {
  readonly base: string;
  readonly child: ChildProcess;
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

// Item 2: logout and rotation racing requests of the same session (soak/session-race.ts).
async function logoutRace(): Promise<void> {
  console.log(
    `logout: logout or re-login while 40 requests of the session are in flight (${ROUNDS} rounds each)`,
  );
  for (const [label, store, count] of [
    ["memory, one process", "memory", 1],
    ["redis, one process", "redis", 1],
    ["redis, two processes", "redis", 2],
  ] as const) {
    const { logouts, rotations } = await raceOn(store, count);
    line(
      `${label}: the old cookie still signed in after ${logouts}/${ROUNDS} logouts, ${rotations}/${ROUNDS} rotations`,
    );
  }
}

// Items 3 and 4: a Redis that freezes, then dies, under sessions and the login throttle (soak/session-faults.ts).
async function frozenStore(): Promise<void> {
  console.log(
    "frozen: 100 requests with a session cookie while the stores' Redis is frozen, then killed, then restarted",
  );
  for (const client of ["plain", "helper"] as const) {
    for (const text of await faults(client))
      line(`${client === "plain" ? "a bare node-redis client" : "createRedisClient"}: ${text}`);
  }
}

// Item 7: anonymous visitors flooding GET /csrf while real visitors sign in (soak/session-flood.ts).
async function anonymousFlood(): Promise<void> {
  console.log(
    "flood: 20 000 anonymous GET /csrf while 20 visitors sign in (memory store bound 2000)",
  );
  for (const store of ["memory", "redis"] as const) {
    const r = await floodSignIns({ store, flood: 20_000, visitors: 20 });
    line(
      `${store}: ${r.failedSignIns} of ${r.visitors} sign-ins failed; ${r.held} sessions held${r.longestTtlSeconds === undefined ? "" : `, longest TTL ${r.longestTtlSeconds} s`}`,
    );
  }
}

// Item 8: one steady client's rate-limit counter while many new addresses flood.
async function rateLimitFlood(): Promise<void> {
  console.log(
    "ratelimit: a client at 1 request/s while distinct addresses flood (memory store, 1000 counters)",
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
  const until = performance.now() + 15_000;
  while (performance.now() < until) {
    const r = await call(`${server.base}/soak/ping`, { xff: "10.19.0.1" });
    const remaining = Number(/;r=(\d+)/.exec(r.headers.get("ratelimit") ?? "")?.[1]);
    if (remaining >= last) resets++;
    last = remaining;
    steady++;
    await sleep(1000);
  }
  running = false;
  await Promise.all(flood);
  line(
    `${sent} flood requests in 15 s; the steady client's counter started over ${resets} times in ${steady} requests`,
  );
  stop(server);
}

try {
  if (wanted("login")) await loginRace();
  if (wanted("logout")) await logoutRace();
  if (wanted("frozen")) await frozenStore();
  if (wanted("flood")) await anonymousFlood();
  if (wanted("ratelimit")) await rateLimitFlood();
  if (wanted("approvals")) await approvalBudget();
} finally {
  for (const child of children) child.kill("SIGKILL");
}
