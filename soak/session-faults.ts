/**
 * A server whose sessions, rate limits and login throttle live in a Redis of
 * its own, which is frozen (SIGSTOP) and then killed (SIGKILL) and restarted
 * while requests with a session cookie keep coming. Reports the answers, the
 * slowest one, whether the server lived, and how long it took to serve again.
 *
 *   npx tsx --conditions=source soak/session-faults.ts [plain|helper]
 */
import { fetchWithin, startRedis, startServer } from "../test/processes.ts";

const COOKIE = "portcullis-session";
const REQUESTS = 100;
const HANG = 15_000;

function sessionPair(response: Response): string {
  for (const line of response.headers.getSetCookie()) {
    const pair = line.split(";")[0] ?? "";
    if (pair.startsWith(`${COOKIE}=`) && pair.length > COOKIE.length + 1) return pair;
  }
  throw new Error("no session cookie");
}

async function signIn(base: string): Promise<string> {
  const csrf = await fetch(`${base}/csrf`);
  const { token } = (await csrf.json()) as { token: string };
  const login = await fetch(`${base}/login`, {
    method: "POST",
    headers: {
      cookie: sessionPair(csrf),
      "x-csrf-token": token,
      "content-type": "application/json",
    },
    body: JSON.stringify({ username: "alice", password: "alice-pw" }),
  });
  return sessionPair(login);
}

async function burst(url: string, cookie: string): Promise<string> {
  const results = await Promise.all(
    Array.from({ length: REQUESTS }, () => fetchWithin(url, { headers: { cookie } }, HANG)),
  );
  const counts = new Map<string, number>();
  for (const { status } of results)
    counts.set(String(status), (counts.get(String(status)) ?? 0) + 1);
  const slowest = Math.max(...results.map((r) => r.elapsed));
  const summary = [...counts].map(([status, n]) => `${n}x${status}`).join(", ");
  return `${summary}; slowest ${(slowest / 1000).toFixed(1)} s`;
}

export async function faults(client: "plain" | "helper"): Promise<string[]> {
  const lines: string[] = [];
  const redis = await startRedis();
  const server = await startServer({
    STORE: "redis",
    CLIENT: client,
    REDIS_URL: redis.url,
    THROTTLE_STORE: "redis",
  });
  try {
    const cookie = await signIn(server.base);
    redis.freeze();
    lines.push(`frozen: ${await burst(`${server.base}/me`, cookie)}`);
    redis.thaw();
    await redis.kill();
    await new Promise((resolve) => setTimeout(resolve, 300));
    lines.push(`killed: ${await burst(`${server.base}/me`, cookie)}`);
    lines.push(`server process ${server.alive() ? "alive" : `exited (${await server.exited})`}`);
    if (server.alive()) {
      await redis.restart();
      const started = Date.now();
      let status: number | string = "none";
      while (Date.now() - started < 30_000) {
        status = (await fetchWithin(`${server.base}/public/ping`, {}, 3000)).status;
        if (status === 200) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      lines.push(
        status === 200
          ? `restarted: serving again after ${((Date.now() - started) / 1000).toFixed(1)} s`
          : `restarted: still ${status} after 30 s`,
      );
    }
  } finally {
    await server.stop();
    await redis.kill();
  }
  return lines;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const client = process.argv[2] === "helper" ? "helper" : "plain";
  for (const line of await faults(client)) console.log(`${client} client: ${line}`);
}
