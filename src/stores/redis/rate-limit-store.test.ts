import { randomUUID } from "node:crypto";
import { createClient } from "redis";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { PEER_ADDRESS } from "../../core/client-address.ts";
import { bindValue } from "../../core/context.ts";
import { InvalidOptionsError } from "../../core/errors.ts";
import {
  type RateLimitAlgorithm,
  type RateLimitPolicy,
  type RateLimitState,
  step,
} from "../../ratelimit/algorithms.ts";
import { rateLimit } from "../../ratelimit/rate-limit.ts";
import { RedisRateLimitStore, type RedisScriptingClient } from "./rate-limit-store.ts";

// The real server the suite needs (scripts/ensure-services.sh starts it); unreachable means failure.
const REDIS_URL = process.env.PORTCULLIS_REDIS_URL ?? "redis://127.0.0.1:6379";
const prefix = `portcullis-test:${randomUUID()}:`;
const client = createClient({
  url: REDIS_URL,
  socket: { connectTimeout: 3000, reconnectStrategy: false },
});

// Connected before each test rather than once, so an unreachable Redis fails every test instead of skipping them.
let connecting: Promise<unknown> | undefined;
beforeEach(async () => {
  connecting ??= client.connect();
  await connecting;
});

afterAll(async () => {
  if (!client.isOpen) return;
  for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
    if (keys.length > 0) await client.del(keys);
  }
  client.destroy();
});

let counter = 0;
const freshKey = () => `k${counter++}`;
const store = () => new RedisRateLimitStore({ client, prefix });

describe("RedisRateLimitStore", () => {
  it("fixed window: limit per window, denial until its end, then a fresh window", async () => {
    const s = store();
    const key = freshKey();
    const policy: RateLimitPolicy = { algorithm: "fixed-window", limit: 3, windowMs: 60_000 };
    const t = 6_000_030_000;
    for (let i = 2; i >= 0; i--) {
      expect(await s.hit(key, policy, t)).toEqual({
        allowed: true,
        remaining: i,
        resetAt: 6_000_060_000,
        retryAt: t,
      });
    }
    expect(await s.hit(key, policy, t + 1)).toEqual({
      allowed: false,
      remaining: 0,
      resetAt: 6_000_060_000,
      retryAt: 6_000_060_000,
    });
    expect((await s.hit(key, policy, 6_000_060_000)).allowed).toBe(true);
  });

  it("sliding window weights the previous window", async () => {
    const s = store();
    const key = freshKey();
    const policy: RateLimitPolicy = { algorithm: "sliding-window", limit: 10, windowMs: 1000 };
    for (let i = 0; i < 10; i++) expect((await s.hit(key, policy, 5_000_000)).allowed).toBe(true);
    expect((await s.hit(key, policy, 5_000_500)).allowed).toBe(false);
    expect(await s.hit(key, policy, 5_001_250)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await s.hit(key, policy, 5_001_250)).toMatchObject({ allowed: true, remaining: 0 });
    expect(await s.hit(key, policy, 5_001_250)).toMatchObject({
      allowed: false,
      retryAt: 5_001_300,
    });
    expect((await s.hit(key, policy, 5_001_300)).allowed).toBe(true);
  });

  it.each(["fixed-window", "sliding-window", "token-bucket"] as const)(
    "%s answers exactly like the in-process algorithm",
    async (algorithm: RateLimitAlgorithm) => {
      const s = store();
      const key = freshKey();
      const policy: RateLimitPolicy = { algorithm, limit: 7, windowMs: 900 };
      let state: RateLimitState | undefined;
      let expiresAt = 0;
      let now = 7_000_000_123;
      // A fixed pseudo-random walk: bursts, pauses and gaps past a whole window.
      let seed = 42;
      for (let i = 0; i < 300; i++) {
        seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
        now += [0, 0, 0, 3, 17, 60, 150, 450, 1100][seed % 9] as number;
        const expected = step(expiresAt > now ? state : undefined, policy, now);
        state = expected.state;
        expiresAt = expected.expiresAt;
        expect(await s.hit(key, policy, now), `hit ${i} at ${now}`).toEqual(expected.decision);
      }
    },
  );

  it("is atomic under concurrent hits", async () => {
    const s = store();
    const key = freshKey();
    const policy: RateLimitPolicy = { algorithm: "sliding-window", limit: 10, windowMs: 60_000 };
    const results = await Promise.all(
      Array.from({ length: 50 }, () => s.hit(key, policy, 8_000_000_000)),
    );
    expect(results.filter((r) => r.allowed)).toHaveLength(10);
  });

  it("prefixes its keys and lets them expire", async () => {
    const s = store();
    const key = freshKey();
    const now = Date.now();
    await s.hit(key, { algorithm: "fixed-window", limit: 5, windowMs: 10_000 }, now);
    const ttl = await client.pTTL(`${prefix}${key}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(10_000);
    expect(await client.exists(key)).toBe(0);
    const slidingKey = freshKey();
    await s.hit(slidingKey, { algorithm: "sliding-window", limit: 5, windowMs: 10_000 }, now);
    // The previous window still counts during the next one.
    expect(await client.pTTL(`${prefix}${slidingKey}`)).toBeGreaterThan(10_000);
  });

  it("reset forgets a counter", async () => {
    const s = store();
    const key = freshKey();
    const policy: RateLimitPolicy = { algorithm: "token-bucket", limit: 1, windowMs: 60_000 };
    expect((await s.hit(key, policy, 9_000_000_000)).allowed).toBe(true);
    expect((await s.hit(key, policy, 9_000_000_000)).allowed).toBe(false);
    await s.reset(key);
    expect(await client.exists(`${prefix}${key}`)).toBe(0);
    expect((await s.hit(key, policy, 9_000_000_000)).allowed).toBe(true);
  });

  it("sends the script again when Redis has forgotten it (NOSCRIPT)", async () => {
    let evalShaCalls = 0;
    let evalCalls = 0;
    const forgetful: RedisScriptingClient = {
      evalSha: async () => {
        evalShaCalls++;
        throw new Error("NOSCRIPT No matching script. Please use EVAL.");
      },
      eval: (script, options) => {
        evalCalls++;
        return client.eval(script, options);
      },
      del: (keys) => client.del(keys),
    };
    const s = new RedisRateLimitStore({ client: forgetful, prefix });
    const decision = await s.hit(
      freshKey(),
      { algorithm: "fixed-window", limit: 2, windowMs: 1000 },
      Date.now(),
    );
    expect(decision.allowed).toBe(true);
    // One each for the script and for the first reading of Redis's clock, sent the same way.
    expect([evalShaCalls, evalCalls]).toEqual([2, 2]);
  });

  it("passes other errors on, and times out when Redis does not answer", async () => {
    const failing = new RedisRateLimitStore({
      prefix,
      client: {
        evalSha: async () => {
          throw new Error("ERR something else");
        },
        eval: async () => 0,
        del: async () => 0,
      },
    });
    const policy: RateLimitPolicy = { algorithm: "fixed-window", limit: 1, windowMs: 1000 };
    await expect(failing.hit("x", policy, 0)).rejects.toThrow("ERR something else");
    const hanging = new RedisRateLimitStore({
      prefix,
      timeoutMs: 50,
      client: {
        evalSha: () => new Promise(() => {}),
        eval: () => new Promise(() => {}),
        del: () => new Promise(() => {}),
      },
    });
    await expect(hanging.hit("x", policy, 0)).rejects.toThrow(/did not answer/);
  });

  it("validates its options", () => {
    expect(() => new RedisRateLimitStore({} as never)).toThrow(InvalidOptionsError);
    expect(() => new RedisRateLimitStore({ client, timeoutMs: 0 })).toThrow(InvalidOptionsError);
    expect(() => new RedisRateLimitStore({ client, prefix: 5 as never })).toThrow(
      InvalidOptionsError,
    );
  });

  it("lets several application instances share one quota", async () => {
    const rules = [{ name: `shared${counter++}`, limit: 3, windowMs: 60_000 }];
    const instanceA = rateLimit({ store: store(), rules })(async () => new Response("a"));
    const instanceB = rateLimit({ store: store(), rules })(async () => new Response("b"));
    const statuses: number[] = [];
    for (const instance of [instanceA, instanceB, instanceA, instanceB, instanceA]) {
      const request = new Request("https://example.test/");
      bindValue(request, PEER_ADDRESS, "203.0.113.5");
      statuses.push((await instance(request)).status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
  });

  it("a store whose Redis is down fails the middleware closed", async () => {
    const down = createClient({
      url: "redis://127.0.0.1:1",
      socket: { connectTimeout: 200, reconnectStrategy: false },
    });
    down.on("error", () => {});
    const handler = rateLimit({
      store: new RedisRateLimitStore({ client: down, prefix, timeoutMs: 200 }),
      onStoreError: () => {},
      rules: [{ limit: 10, windowMs: 1000 }],
    })(async () => new Response("never"));
    const request = new Request("https://example.test/");
    bindValue(request, PEER_ADDRESS, "203.0.113.5");
    expect((await handler(request)).status).toBe(503);
  });
});
