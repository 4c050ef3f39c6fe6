/**
 * The authorization code and refresh token stores on a Redis and a
 * PostgreSQL of the test's own (never the shared ones), frozen and killed:
 * every call fails within the store's timeout, as StoreUnavailableError
 * through the store caller the endpoints use, and works again once the
 * store is back.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../src/core/errors.ts";
import { storeCaller } from "../src/core/store-call.ts";
import type {
  AuthorizationCodeRecord,
  AuthorizationCodeStore,
  RefreshTokenRecord,
  RefreshTokenStore,
} from "../src/oauth2/index.ts";
import {
  migrate,
  PostgresAuthorizationCodeStore,
  PostgresRefreshTokenStore,
} from "../src/stores/postgres/index.ts";
import {
  createRedisClient,
  RedisAuthorizationCodeStore,
  RedisRefreshTokenStore,
} from "../src/stores/redis/index.ts";
import { type PostgresProcess, type RedisProcess, startPostgres, startRedis } from "./processes.ts";

const TIMEOUT_MS = 300;
let redis: RedisProcess;
let postgres: PostgresProcess;
let redisClient: ReturnType<typeof createRedisClient>;
let pool: pg.Pool;
const stores = new Map<string, { codes: AuthorizationCodeStore; refresh: RefreshTokenStore }>();
const failures: unknown[] = [];
const call = storeCaller({
  what: "the code store",
  timeoutMs: TIMEOUT_MS,
  report: (error) => failures.push(error),
  timed: true,
});

beforeAll(async () => {
  [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
  redisClient = createRedisClient(redis.url, { onError: () => {} });
  await redisClient.connect();
  pool = new pg.Pool({ connectionString: postgres.url, connectionTimeoutMillis: TIMEOUT_MS });
  pool.on("error", () => {});
  await migrate(pool);
  const options = { client: redisClient, timeoutMs: TIMEOUT_MS };
  stores.set("Redis", {
    codes: new RedisAuthorizationCodeStore(options),
    refresh: new RedisRefreshTokenStore(options),
  });
  stores.set("PostgreSQL", {
    codes: new PostgresAuthorizationCodeStore({ pool, timeoutMs: TIMEOUT_MS }),
    refresh: new PostgresRefreshTokenStore({ pool, timeoutMs: TIMEOUT_MS }),
  });
}, 60_000);

afterAll(async () => {
  redisClient?.destroy();
  await pool?.end().catch(() => {});
  await Promise.allSettled([redis?.kill(), postgres?.kill()]);
});

function code(now: number): AuthorizationCodeRecord {
  return {
    codeHash: `code-${crypto.randomUUID()}`,
    clientId: "https://client.example/meta.json",
    redirectUri: "http://127.0.0.1:33418/callback",
    codeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    resource: "https://api.example.com/mcp",
    scope: ["count"],
    grantId: "g",
    approvedBy: "alice",
    expiresAt: now + 60_000,
  };
}

function token(now: number, familyId = `family-${crypto.randomUUID()}`): RefreshTokenRecord {
  return {
    tokenHash: `rt-${crypto.randomUUID()}`,
    familyId,
    clientId: "https://client.example/meta.json",
    approvedBy: "alice",
    grantId: "g",
    scope: ["count"],
    resource: "https://api.example.com/mcp",
    expiresAt: now + 3_600_000,
  };
}

/** Every operation of both stores, each through the caller: how each one ended, and how long it took. */
async function everyCall(name: string) {
  const { codes, refresh } = stores.get(name) as {
    codes: AuthorizationCodeStore;
    refresh: RefreshTokenStore;
  };
  const now = Date.now();
  const first = token(now);
  const operations: (() => Promise<unknown>)[] = [
    () => codes.create(code(now), now),
    () => codes.redeem("code-x", now),
    () => refresh.create(first, now),
    () => refresh.find(first.tokenHash, now),
    () => refresh.rotate(first.tokenHash, token(now, first.familyId), now),
    () => refresh.revokeFamily(first.familyId),
  ];
  return Promise.all(
    operations.map(async (operation) => {
      const started = performance.now();
      try {
        await call(operation);
        return { error: undefined, elapsed: performance.now() - started };
      } catch (error) {
        return { error, elapsed: performance.now() - started };
      }
    }),
  );
}

async function works(name: string): Promise<void> {
  const { codes, refresh } = stores.get(name) as {
    codes: AuthorizationCodeStore;
    refresh: RefreshTokenStore;
  };
  const now = Date.now();
  const record = code(now);
  await call(() => codes.create(record, now));
  expect((await call(() => codes.redeem(record.codeHash, now))).outcome).toBe("redeemed");
  const first = token(now);
  await call(() => refresh.create(first, now));
  const next = token(now, first.familyId);
  expect((await call(() => refresh.rotate(first.tokenHash, next, now))).outcome).toBe("rotated");
}

async function until(check: () => Promise<void>, ms: number): Promise<void> {
  const started = performance.now();
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (performance.now() - started > ms) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

describe.each(["Redis", "PostgreSQL"])("code stores on a failing %s", (name) => {
  const server = () => (name === "Redis" ? redis : postgres);

  it("fails every call within the timeout while the store accepts connections but never answers", async () => {
    await works(name);
    server().freeze();
    try {
      for (const { error, elapsed } of await everyCall(name)) {
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect(elapsed).toBeLessThan(TIMEOUT_MS + 700);
      }
    } finally {
      server().thaw();
    }
    await until(() => works(name), 10_000);
  });

  it("fails every call within the timeout while the store is down, and works once it is back", async () => {
    await server().kill();
    try {
      for (const { error, elapsed } of await everyCall(name)) {
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect(elapsed).toBeLessThan(TIMEOUT_MS + 700);
      }
    } finally {
      await server().restart();
    }
    await until(() => works(name), 10_000);
  }, 30_000);
});
