import { describe, expect, it, vi } from "vitest";
import { InvalidOptionsError } from "../../core/errors.ts";
import { PASSWORDS, testApp } from "../../testing/session-app.ts";
import { RedisLoginAttemptStore } from "./login-attempt-store.ts";
import type { RedisScriptingClient } from "./script.ts";
import { redisForTests } from "./testing/redis.ts";

const { client, prefix } = redisForTests();

describe("RedisLoginAttemptStore on a real Redis", () => {
  it("counts failures per key within a window that starts with the first one, and resets", async () => {
    const store = new RedisLoginAttemptStore({ client, prefix });
    await expect(store.failures("user:alice", 1000)).resolves.toEqual({ count: 0, resetAt: 1000 });
    await store.fail("user:alice", 60_000, 1000);
    await store.fail("user:alice", 60_000, 1000);
    await store.fail("user:bob", 60_000, 1000);
    const alice = await store.failures("user:alice", 1000);
    expect(alice.count).toBe(2);
    expect(alice.resetAt).toBeGreaterThan(1000 + 59_000);
    expect(alice.resetAt).toBeLessThanOrEqual(1000 + 60_000);
    expect((await store.failures("user:bob", 1000)).count).toBe(1);
    // Later failures do not stretch the window.
    const ttl = await client.pTTL(`${prefix}user:alice`);
    await store.fail("user:alice", 60_000, 1000);
    expect(await client.pTTL(`${prefix}user:alice`)).toBeLessThanOrEqual(ttl);
    await store.reset("user:alice");
    expect((await store.failures("user:alice", 1000)).count).toBe(0);
    expect((await store.failures("user:bob", 1000)).count).toBe(1);
  });

  it("forgets a counter when its window is over", async () => {
    const store = new RedisLoginAttemptStore({ client, prefix });
    await store.fail("user:short", 80, 0);
    expect((await store.failures("user:short", 0)).count).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 160));
    expect((await store.failures("user:short", 0)).count).toBe(0);
  });

  it("makes two application instances throttle against one count", async () => {
    const store = new RedisLoginAttemptStore({ client, prefix: `${prefix}shared:` });
    const throttle = { store, maxFailuresPerUser: 3 };
    const one = await testApp({ login: { throttle } });
    const two = await testApp({ login: { throttle } });
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
      const app = await testApp({ login: { throttle: { store, onStoreError } } });
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
