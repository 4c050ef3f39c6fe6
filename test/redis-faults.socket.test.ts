/**
 * A server whose Redis freezes (SIGSTOP) or dies (SIGKILL) while it serves:
 * requests that need the store answer 503 in bounded time, never 500 and
 * never a hang, the process lives on, and service comes back by itself once
 * Redis does. The server is a child process with a redis-server of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../src/core/errors.ts";
import { storeCaller } from "../src/core/store-call.ts";
import { createRedisClient, RedisSessionStore } from "../src/stores/redis/index.ts";
import {
  fetchWithin,
  type RedisProcess,
  type ServerProcess,
  startRedis,
  startServer,
} from "./processes.ts";

const COOKIE = "portcullis-session";
const IN_FLIGHT = 40;
// A generous ceiling: a request still unanswered after this long is a hang.
const HANG = 8000;

function sessionPair(response: Response): string | undefined {
  for (const line of response.headers.getSetCookie()) {
    const pair = line.split(";")[0] ?? "";
    if (pair.startsWith(`${COOKIE}=`) && pair.length > COOKIE.length + 1) return pair;
  }
  return undefined;
}

async function signIn(base: string): Promise<string> {
  const csrf = await fetch(`${base}/csrf`);
  const { token } = (await csrf.json()) as { token: string };
  const response = await fetch(`${base}/login`, {
    method: "POST",
    headers: {
      cookie: sessionPair(csrf) as string,
      "x-csrf-token": token,
      "content-type": "application/json",
    },
    body: JSON.stringify({ username: "alice", password: "alice-pw" }),
  });
  expect(response.status).toBe(200);
  return sessionPair(response) as string;
}

/** `count` requests at once; the statuses, `"timeout"` for those unanswered after HANG ms. */
async function burst(url: string, cookie: string | undefined, count = IN_FLIGHT) {
  const results = await Promise.all(
    Array.from({ length: count }, () =>
      fetchWithin(url, cookie === undefined ? {} : { headers: { cookie } }, HANG),
    ),
  );
  return results.map((result) => result.status);
}

/** Polls until `url` answers `status`, for at most `ms`. */
async function until(url: string, init: RequestInit, status: number, ms = 20_000) {
  const deadline = Date.now() + ms;
  let last: number | string = "none";
  while (Date.now() < deadline) {
    last = (await fetchWithin(url, init, 3000)).status;
    if (last === status) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${url} still answers ${last} after ${ms} ms`);
}

describe.each([
  ["a bare createClient() with no error listener", "plain"],
  ["createRedisClient()", "helper"],
])("Redis stores on %s", (_label, clientKind) => {
  let redis: RedisProcess;
  let server: ServerProcess;

  beforeAll(async () => {
    redis = await startRedis();
    server = await startServer({
      STORE: "redis",
      CLIENT: clientKind,
      REDIS_URL: redis.url,
      THROTTLE_STORE: "redis",
    });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    await redis?.kill();
  });

  it("answers 503 while Redis is frozen, never 500 or a hang, and serves again once it thaws", async () => {
    const cookie = await signIn(server.base);
    expect((await fetch(`${server.base}/me`, { headers: { cookie } })).status).toBe(200);
    redis.freeze();
    try {
      const statuses = await burst(`${server.base}/me`, cookie);
      expect(new Set(statuses)).toEqual(new Set([503]));
      // Sign-in needs the session store too.
      const login = await fetchWithin(
        `${server.base}/login`,
        {
          method: "POST",
          headers: { cookie, "content-type": "application/json", "x-csrf-token": "x.y" },
          body: "{}",
        },
        HANG,
      );
      expect(login.status).toBe(503);
    } finally {
      redis.thaw();
    }
    await until(`${server.base}/me`, { headers: { cookie } }, 200);
    expect(server.alive()).toBe(true);
    expect(server.output()).not.toContain("handler error");
  }, 60_000);

  it("survives Redis being killed: 503 while it is down, never 500, and recovers by itself after a restart", async () => {
    const cookie = await signIn(server.base);
    await redis.kill();
    // The client notices the dead connection; give it a moment to report.
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const path of ["/me", "/visit"]) {
      const statuses = await burst(`${server.base}${path}`, cookie);
      expect(new Set(statuses)).toEqual(new Set([503]));
    }
    // The rate limiter's Redis store fails closed the same way.
    expect(new Set(await burst(`${server.base}/public/ping`, undefined, 10))).toEqual(
      new Set([503]),
    );
    expect(server.alive()).toBe(true);

    await redis.restart();
    await until(`${server.base}/public/ping`, {}, 200);
    // The restarted Redis kept nothing: the old cookie is anonymous, a new sign-in works.
    expect((await fetch(`${server.base}/me`, { headers: { cookie } })).status).toBe(401);
    const fresh = await signIn(server.base);
    expect((await fetch(`${server.base}/me`, { headers: { cookie: fresh } })).status).toBe(200);
    expect(server.alive()).toBe(true);
    expect(server.output()).not.toContain("handler error");
  }, 60_000);
});

describe("a session write the caller gave up on while Redis was frozen", () => {
  const call = storeCaller({
    what: "the session store",
    timeoutMs: 300,
    report: () => {},
    timed: true,
  });
  let redis: RedisProcess;
  let client: ReturnType<typeof createRedisClient>;
  let store: RedisSessionStore;
  beforeAll(async () => {
    redis = await startRedis();
    client = createRedisClient(redis.url, { onError: () => {} });
    await client.connect();
    store = new RedisSessionStore({ client });
  }, 60_000);
  afterAll(async () => {
    client?.destroy();
    await redis?.kill();
  });

  async function givenUp(work: () => Promise<unknown>): Promise<void> {
    redis.freeze();
    try {
      await expect(call(work)).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      redis.thaw();
    }
    // Redis runs what it was sent while frozen before the reads that follow.
    await new Promise((resolve) => setTimeout(resolve, 300));
  }

  it("changes nothing once Redis resumes: no sign-in, no new data, no logout", async () => {
    const id = crypto.randomUUID();
    const now = Date.now();
    const anonymous = { data: { cart: 1 }, createdAt: now, lastAccessAt: now };
    expect(await call(() => store.create(id, anonymous, 60_000))).toBe(true);
    const signedIn = { ...anonymous, principal: { name: "alice", authorities: ["ADMIN"] } };
    await givenUp(() => store.update(id, signedIn, 60_000));
    expect(await call(() => store.get(id))).toEqual(anonymous);
    await givenUp(() => store.delete(id));
    expect(await call(() => store.get(id))).toEqual(anonymous);
    const other = crypto.randomUUID();
    await givenUp(() => store.create(other, signedIn, 60_000));
    expect(await call(() => store.get(other))).toBeUndefined();
  });
});
