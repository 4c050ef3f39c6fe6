/**
 * Anonymous visitors flood `GET /csrf` while real visitors fetch a token, wait
 * as a person filling in a form would, and sign in. Reports how many sign-ins
 * failed and what the flood left in the session store, on the memory store
 * (bounded, as in production) and on Redis. Loopback only, bounded in time.
 *
 *   npx tsx --conditions=source soak/session-flood.ts [flood=20000] [visitors=20]
 */
import { createClient } from "redis";
import { startServer } from "../test/processes.ts";

export interface FloodResult {
  readonly store: "memory" | "redis";
  readonly flood: number;
  readonly visitors: number;
  readonly failedSignIns: number;
  /** Sessions held once the flood is over: the memory store's size, or the Redis keys. */
  readonly held: number;
  /** Longest TTL left on a Redis session key, in seconds (Redis only). */
  readonly longestTtlSeconds?: number;
}

const COOKIE = "portcullis-session";

function sessionPair(response: Response): string | undefined {
  for (const line of response.headers.getSetCookie()) {
    const pair = line.split(";")[0] ?? "";
    if (pair.startsWith(`${COOKIE}=`) && pair.length > COOKIE.length + 1) return pair;
  }
  return undefined;
}

async function visitor(base: string, thinkMs: number): Promise<boolean> {
  const csrf = await fetch(`${base}/csrf`);
  const { token } = (await csrf.json()) as { token: string };
  const cookie = sessionPair(csrf);
  await new Promise((resolve) => setTimeout(resolve, thinkMs));
  const login = await fetch(`${base}/login`, {
    method: "POST",
    headers: {
      ...(cookie === undefined ? {} : { cookie }),
      "x-csrf-token": token,
      "content-type": "application/json",
    },
    body: JSON.stringify({ username: "alice", password: "alice-pw" }),
  });
  await login.arrayBuffer();
  return login.status === 200;
}

export async function floodSignIns(options: {
  store: "memory" | "redis";
  flood: number;
  visitors: number;
  /** Memory store bound. Default 2000. */
  maxEntries?: number;
  concurrency?: number;
  /** How long a visitor waits between fetching the token and posting. Default 2000 ms. */
  thinkMs?: number;
}): Promise<FloodResult> {
  const { store, flood, visitors } = options;
  const prefix = `portcullis-soak:${crypto.randomUUID()}:`;
  const server = await startServer({
    STORE: store,
    PREFIX: prefix,
    MAX_ENTRIES: String(options.maxEntries ?? 2000),
  });
  try {
    let sent = 0;
    const flooder = async () => {
      while (sent < flood) {
        sent++;
        const response = await fetch(`${server.base}/csrf`);
        await response.arrayBuffer();
      }
    };
    const floodDone = Promise.all(Array.from({ length: options.concurrency ?? 32 }, flooder));
    // Visitors arrive while the flood runs, and take their time before posting.
    const outcomes = await Promise.all(
      Array.from({ length: visitors }, async (_, i) => {
        await new Promise((resolve) => setTimeout(resolve, 50 * i));
        return visitor(server.base, options.thinkMs ?? 2000);
      }),
    );
    await floodDone;
    const failedSignIns = outcomes.filter((ok) => !ok).length;
    if (store === "memory") {
      const stats = (await (await fetch(`${server.base}/public/stats`)).json()) as {
        size: number;
      };
      return { store, flood, visitors, failedSignIns, held: stats.size };
    }
    const redis = await createClient({ url: "redis://127.0.0.1:6379" }).connect();
    try {
      const keys = await redis.keys(`${prefix}session:*`);
      let longest = 0;
      for (const key of keys) longest = Math.max(longest, await redis.pTTL(key));
      const all = await redis.keys(`${prefix}*`);
      if (all.length > 0) await redis.del(all);
      return {
        store,
        flood,
        visitors,
        failedSignIns,
        held: keys.length,
        longestTtlSeconds: Math.round(longest / 1000),
      };
    } finally {
      await redis.quit();
    }
  } finally {
    await server.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const flood = Number(process.argv[2] ?? 20_000);
  const visitors = Number(process.argv[3] ?? 20);
  for (const store of ["memory", "redis"] as const) {
    const result = await floodSignIns({ store, flood, visitors });
    const ttl =
      result.longestTtlSeconds === undefined ? "" : `, longest TTL ${result.longestTtlSeconds} s`;
    console.log(
      `${store}: ${result.flood} anonymous GET /csrf; ${result.failedSignIns}/${result.visitors} sign-ins failed; ${result.held} sessions held${ttl}`,
    );
  }
}
