import { describe, expect, it, vi } from "vitest";
import { redisForTests } from "../../../test/support/redis.ts";
import { PASSWORDS, testApp } from "../../../test/support/session-app.ts";
import { InvalidOptionsError } from "../../core/errors.ts";
import { RedisLoginAttemptStore } from "./login-attempt-store.ts";
import type { RedisScriptingClient } from "./script.ts";

const { client, prefix } = redisForTests();

describe("RedisLoginAttemptStore on a real Redis", () => {
  it("counts attempts up to max within a window that starts with the first one, and resets", async () => {
    const store = new RedisLoginAttemptStore({ client, prefix });
    const first = await store.consume("user:alice", 2, 60_000, 1000);
    expect(first.allowed).toBe(true);
    expect(first.resetAt).toBeGreaterThan(1000 + 59_000);
    expect(first.resetAt).toBeLessThanOrEqual(1000 + 60_000);
    await expect(store.consume("user:alice", 2, 60_000, 1000)).resolves.toMatchObject({
      allowed: true,
    });
    // Refused: not counted, and the window is not stretched.
    const ttl = await client.pTTL(`${prefix}user:alice`);
    const refused = await store.consume("user:alice", 2, 60_000, 1000);
    expect(refused.allowed).toBe(false);
    expect(refused.resetAt).toBeGreaterThan(1000);
    expect(await client.get(`${prefix}user:alice`)).toBe("2");
    expect(await client.pTTL(`${prefix}user:alice`)).toBeLessThanOrEqual(ttl);
    await expect(store.consume("user:bob", 2, 60_000, 1000)).resolves.toMatchObject({
      allowed: true,
    });
    await store.reset("user:alice");
    await expect(store.consume("user:alice", 1, 60_000, 1000)).resolves.toMatchObject({
      allowed: true,
    });
    expect(await client.get(`${prefix}user:bob`)).toBe("1");
  });

  it("gives an attempt back on release, never below zero", async () => {
    const store = new RedisLoginAttemptStore({ client, prefix });
    await store.consume("client:a", 2, 60_000, 0);
    await store.consume("client:a", 2, 60_000, 0);
    await store.release("client:a", 0);
    expect(await client.get(`${prefix}client:a`)).toBe("1");
    await store.release("client:a", 0);
    await store.release("client:a", 0);
    await store.release("client:gone", 0);
    expect(await client.exists([`${prefix}client:a`, `${prefix}client:gone`])).toBe(0);
  });

  it("lets exactly max of 200 concurrent attempts through, from two clients", async () => {
    const other = client.duplicate();
    await other.connect();
    try {
      const stores = [client, other].map((c) => new RedisLoginAttemptStore({ client: c, prefix }));
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          (stores[i % 2] as RedisLoginAttemptStore).consume("user:raced", 5, 60_000, 0),
        ),
      );
      expect(answers.filter((a) => a.allowed)).toHaveLength(5);
      expect(await client.get(`${prefix}user:raced`)).toBe("5");
    } finally {
      await other.quit();
    }
  });

  it("forgets a counter when its window is over", async () => {
    const store = new RedisLoginAttemptStore({ client, prefix });
    await store.consume("user:short", 1, 80, 0);
    await expect(store.consume("user:short", 1, 80, 0)).resolves.toMatchObject({ allowed: false });
    await new Promise((resolve) => setTimeout(resolve, 160));
    await expect(store.consume("user:short", 1, 80, 0)).resolves.toMatchObject({ allowed: true });
  });

  it("gives a counter left without expiry a window again", async () => {
    const store = new RedisLoginAttemptStore({ client, prefix });
    await client.set(`${prefix}user:stuck`, "9");
    await expect(store.consume("user:stuck", 5, 60_000, 0)).resolves.toMatchObject({
      allowed: false,
    });
    expect(await client.pTTL(`${prefix}user:stuck`)).toBeGreaterThan(0);
  });

  it("makes two application instances throttle against one count", async () => {
    const store = new RedisLoginAttemptStore({ client, prefix: `${prefix}shared:` });
    const throttle = { store, maxFailuresPerUser: 3 };
    const one = await testApp({ credentials: { throttle } });
    const two = await testApp({ credentials: { throttle } });
    const statuses: number[] = [];
    for (const app of [one, two, one]) {
      statuses.push((await app.client().login("alice", "wrong")).status);
    }
    // The fourth guess is refused on either instance, even with the right password.
    statuses.push((await two.client().login("alice", PASSWORDS.alice)).status);
    statuses.push((await one.client().login("alice", PASSWORDS.alice)).status);
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
  });

  it("answers 503, never 500 and never an unthrottled login, when Redis fails or stalls", async () => {
    const failing: RedisScriptingClient = {
      evalSha: async () => {
        throw new Error("connection lost");
      },
      eval: async () => {
        throw new Error("connection lost");
      },
      del: async () => {
        throw new Error("connection lost");
      },
    };
    const stalled: RedisScriptingClient = {
      evalSha: () => new Promise(() => {}),
      eval: () => new Promise(() => {}),
      del: () => new Promise(() => {}),
    };
    for (const broken of [failing, stalled]) {
      const onStoreError = vi.fn();
      const store = new RedisLoginAttemptStore({ client: broken, timeoutMs: 50 });
      const app = await testApp({ credentials: { throttle: { store, onStoreError } } });
      const response = await app.client().login("alice", PASSWORDS.alice);
      expect(response.status).toBe(503);
      expect(await response.text()).not.toContain("connection lost");
      expect(onStoreError).toHaveBeenCalledTimes(1);
    }
  });

  it("validates its options", () => {
    const bad = [
      undefined,
      {},
      { client: {} },
      { client, prefix: 1 },
      { client, timeoutMs: 0 },
      { client, timeoutMs: 1.5 },
      { client, prefx: "x:" },
    ];
    for (const options of bad) {
      expect(
        () =>
          new RedisLoginAttemptStore(
            options as unknown as ConstructorParameters<typeof RedisLoginAttemptStore>[0],
          ),
      ).toThrow(InvalidOptionsError);
    }
  });
});
