/**
 * The authorization code and refresh token stores on a Redis and a
 * PostgreSQL of the test's own (never the shared ones), frozen and killed:
 * every call fails within the store's timeout, as StoreUnavailableError
 * through the store caller the endpoints use, and works again once the
 * store is back.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
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

// `works` probes the stores as a person of its own: a new code of the same client and person
// replaces the earlier one, and new refresh families end the oldest, which would take what a
// test keeps for its retry.
function code(now: number, approvedBy = "alice"): AuthorizationCodeRecord {
  return {
    codeHash: `code-${crypto.randomUUID()}`,
    clientId: "https://client.example/meta.json",
    redirectUri: "http://127.0.0.1:33418/callback",
    codeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    resource: "https://api.example.com/mcp",
    scope: ["count"],
    grantId: "g",
    approvedBy,
    expiresAt: now + 60_000,
  };
}

function token(
  now: number,
  familyId = `family-${crypto.randomUUID()}`,
  approvedBy = "alice",
): RefreshTokenRecord {
  return {
    tokenHash: `rt-${crypto.randomUUID()}`,
    familyId,
    clientId: "https://client.example/meta.json",
    approvedBy,
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
  const record = code(now, "store-probe");
  await call(() => codes.create(record, now));
  expect((await call(() => codes.redeem(record.codeHash, now))).outcome).toBe("redeemed");
  const first = token(now, undefined, "store-probe");
  await call(() => refresh.create(first, now));
  const next = token(now, first.familyId, "store-probe");
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

/** How many calls the private Redis refused as begun after their caller had given up. */
async function lateRefusals(): Promise<number> {
  const info = await redisClient.info("errorstats");
  return Number(/errorstat_PORTCULLIS_LATE:count=(\d+)/.exec(info)?.[1] ?? 0);
}

describe.each([
  ["Redis", TIMEOUT_MS],
  ["PostgreSQL", TIMEOUT_MS],
  // The caller's deadline, not the store's longer limit, is the one the server keeps.
  ["Redis", 10_000],
  ["PostgreSQL", 10_000],
])("a %s call its caller gave up on (store limit %i ms)", (name, storeTimeoutMs) => {
  const server = () => (name === "Redis" ? redis : postgres);
  let codes: AuthorizationCodeStore;
  let refresh: RefreshTokenStore;
  beforeAll(() => {
    if (name === "Redis") {
      const options = { client: redisClient, timeoutMs: storeTimeoutMs };
      codes = new RedisAuthorizationCodeStore(options);
      refresh = new RedisRefreshTokenStore(options);
    } else {
      codes = new PostgresAuthorizationCodeStore({ pool, timeoutMs: storeTimeoutMs });
      refresh = new PostgresRefreshTokenStore({ pool, timeoutMs: storeTimeoutMs });
    }
  });

  /**
   * `work` through the caller while the server is frozen: it fails at the caller's timeout.
   * Then the server thaws and runs what it was sent meanwhile, before anything sent later.
   */
  async function givenUp(work: () => Promise<unknown>): Promise<void> {
    const refusedBefore = name === "Redis" ? await lateRefusals() : 0;
    server().freeze();
    try {
      await expect(call(work)).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      server().thaw();
    }
    await until(() => works(name), 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Redis did run the call, and refused it.
    if (name === "Redis") expect(await lateRefusals()).toBeGreaterThan(refusedBefore);
  }

  it("leaves the code unspent: the client's retry is the first redemption", async () => {
    const now = Date.now();
    const record = code(now);
    await call(() => codes.create(record, now));
    await givenUp(() => codes.redeem(record.codeHash, Date.now()));
    expect((await call(() => codes.redeem(record.codeHash, Date.now()))).outcome).toBe("redeemed");
  });

  it("leaves the refresh token current: the client's retry is the first rotation", async () => {
    const now = Date.now();
    const first = token(now);
    await call(() => refresh.create(first, now));
    await givenUp(() => refresh.rotate(first.tokenHash, token(now, first.familyId), Date.now()));
    const next = token(now, first.familyId);
    expect((await call(() => refresh.rotate(first.tokenHash, next, Date.now()))).outcome).toBe(
      "rotated",
    );
    expect((await call(() => refresh.find(next.tokenHash, Date.now())))?.tokenHash).toBe(
      next.tokenHash,
    );
  });

  it("stores no code and no refresh family that nobody was given", async () => {
    const now = Date.now();
    const record = code(now);
    const first = token(now);
    await givenUp(() => codes.create(record, now));
    await givenUp(() => refresh.create(first, now));
    expect((await call(() => codes.redeem(record.codeHash, Date.now()))).outcome).toBe("unknown");
    expect(await call(() => refresh.find(first.tokenHash, Date.now()))).toBeUndefined();
  });

  it("keeps serving calls that are in time", async () => {
    for (let i = 0; i < 20; i++) {
      const now = Date.now();
      const record = code(now);
      await call(() => codes.create(record, now));
      expect((await call(() => codes.redeem(record.codeHash, now))).outcome).toBe("redeemed");
    }
  });
});

describe.each([
  ["ahead of", 600_000],
  ["behind", -600_000],
])("Redis's clock ten minutes %s this process's", (_label, skew) => {
  let codes: RedisAuthorizationCodeStore;
  beforeAll(() => {
    // A client of its own: the store reads Redis's clock afresh, under the skewed clock below.
    const client = {
      evalSha: redisClient.evalSha.bind(redisClient),
      eval: redisClient.eval.bind(redisClient),
      del: redisClient.del.bind(redisClient),
    };
    codes = new RedisAuthorizationCodeStore({ client, timeoutMs: TIMEOUT_MS });
  });
  // The deadline travels on performance.now(); shifting it is as if Redis's clock were off.
  const skewed = <T>(work: () => Promise<T>): Promise<T> => {
    const real = performance.now.bind(performance);
    const spy = vi.spyOn(performance, "now").mockImplementation(() => real() - skew);
    return work().finally(() => spy.mockRestore());
  };

  it("serves every call in time, and still refuses the one its caller gave up on", async () => {
    await skewed(async () => {
      for (let i = 0; i < 20; i++) {
        const now = Date.now();
        const record = code(now);
        await call(() => codes.create(record, now));
        expect((await call(() => codes.redeem(record.codeHash, now))).outcome).toBe("redeemed");
      }
      const now = Date.now();
      const record = code(now);
      await call(() => codes.create(record, now));
      const refusedBefore = await lateRefusals();
      redis.freeze();
      try {
        await expect(call(() => codes.redeem(record.codeHash, now))).rejects.toBeInstanceOf(
          StoreUnavailableError,
        );
      } finally {
        redis.thaw();
      }
      await until(async () => expect(await lateRefusals()).toBeGreaterThan(refusedBefore), 10_000);
      expect((await call(() => codes.redeem(record.codeHash, now))).outcome).toBe("redeemed");
    });
  });
});

describe("a step of Redis's clock after it was read", () => {
  it("refuses calls only until the store reads Redis's clock again", async () => {
    const client = {
      evalSha: redisClient.evalSha.bind(redisClient),
      eval: redisClient.eval.bind(redisClient),
      del: redisClient.del.bind(redisClient),
    };
    const codes = new RedisAuthorizationCodeStore({ client, timeoutMs: TIMEOUT_MS });
    const attempt = async () => {
      const now = Date.now();
      const record = code(now);
      await call(() => codes.create(record, now));
    };
    await attempt();
    // Redis's clock jumps an hour ahead of the reading the store holds.
    const real = performance.now.bind(performance);
    const spy = vi.spyOn(performance, "now").mockImplementation(() => real() - 3_600_000);
    try {
      const outcomes: string[] = [];
      for (let i = 0; i < 5; i++)
        outcomes.push(
          await attempt().then(
            () => "served",
            () => "refused",
          ),
        );
      expect(outcomes[0]).toBe("refused");
      expect(outcomes.slice(-2)).toEqual(["served", "served"]);
    } finally {
      spy.mockRestore();
    }
  });
});
