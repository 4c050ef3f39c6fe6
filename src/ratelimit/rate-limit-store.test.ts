import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "../core/errors.ts";
import type { RateLimitPolicy } from "./algorithms.ts";
import { MemoryRateLimitStore } from "./rate-limit-store.ts";

const policy: RateLimitPolicy = { algorithm: "fixed-window", limit: 2, windowMs: 1000 };

describe("MemoryRateLimitStore", () => {
  it("counts per key", async () => {
    const store = new MemoryRateLimitStore();
    expect((await store.hit("a", policy, 0)).allowed).toBe(true);
    expect((await store.hit("a", policy, 0)).allowed).toBe(true);
    expect((await store.hit("a", policy, 0)).allowed).toBe(false);
    expect((await store.hit("b", policy, 0)).allowed).toBe(true);
    await store.reset("a");
    expect((await store.hit("a", policy, 0)).allowed).toBe(true);
  });

  it("never holds more than maxEntries under a flood of 100k distinct keys", async () => {
    const store = new MemoryRateLimitStore({ maxEntries: 1000 });
    let largest = 0;
    for (let i = 0; i < 100_000; i++) {
      await store.hit(`flood-${i}`, policy, 0);
      largest = Math.max(largest, store.size);
    }
    expect(largest).toBe(1000);
    expect(store.size).toBe(1000);
  });

  it("defaults to 10 000 entries", async () => {
    const store = new MemoryRateLimitStore();
    for (let i = 0; i < 10_050; i++) await store.hit(`k${i}`, policy, 0);
    expect(store.size).toBe(10_000);
  });

  it("keeps a recently used counter and drops the least recent one", async () => {
    const store = new MemoryRateLimitStore({ maxEntries: 3 });
    await store.hit("attacker", policy, 0);
    await store.hit("attacker", policy, 0);
    await store.hit("x", policy, 0);
    await store.hit("y", policy, 0);
    await store.hit("attacker", policy, 1); // denied, but refreshes its recency
    await store.hit("z", policy, 2); // pushes out "x", the least recent
    expect((await store.hit("attacker", policy, 3)).allowed).toBe(false);
    // The trade-off: a dropped counter starts over.
    await store.hit("x", policy, 4);
    expect((await store.hit("x", policy, 4)).allowed).toBe(true);
  });

  it("keeps a counter in use through a flood of new keys many times the bound", async () => {
    const store = new MemoryRateLimitStore({ maxEntries: 100 });
    const strict: RateLimitPolicy = { algorithm: "fixed-window", limit: 5, windowMs: 60_000 };
    for (let i = 0; i < 5; i++) await store.hit("attacker", strict, 0);
    // Between two of its requests, never more new keys than the bound holds.
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 60; i++) await store.hit(`flood-${round}-${i}`, strict, 0);
      expect((await store.hit("attacker", strict, 0)).allowed).toBe(false);
    }
    expect(store.size).toBe(100);
  });

  it("keeps a steady client's counter through a flood of new keys far beyond the bound", async () => {
    const store = new MemoryRateLimitStore({ maxEntries: 1000 });
    const quota: RateLimitPolicy = { algorithm: "fixed-window", limit: 30, windowMs: 120_000 };
    // One request a second from her; between two of them, five times the bound in new addresses.
    const remaining: number[] = [];
    for (let second = 0; second < 30; second++) {
      remaining.push((await store.hit("her", quota, second * 1000)).remaining);
      for (let i = 0; i < 5000; i++) await store.hit(`flood-${second}-${i}`, quota, second * 1000);
    }
    // A key seen once is the flood's to lose: her first counter may go. From her second
    // request on she outranks every address seen once, and her counter never starts over.
    const second = remaining[1] as number;
    expect(remaining.slice(1)).toEqual(Array.from({ length: 29 }, (_, i) => second - i));
    expect(second).toBeGreaterThanOrEqual(28);
    expect(store.size).toBe(1000);
  });

  it("treats an expired counter as fresh and sweeps expired entries", async () => {
    const store = new MemoryRateLimitStore();
    for (let i = 0; i < 100; i++) await store.hit(`old-${i}`, policy, 0);
    await store.hit("old-0", policy, 0);
    expect((await store.hit("old-0", policy, 0)).allowed).toBe(false);
    expect((await store.hit("old-0", policy, 1000)).allowed).toBe(true);
    for (let i = 0; i < 60; i++) await store.hit(`new-${i}`, policy, 1000);
    // Every eighth hit checks sixteen entries at the least recent end, live ones included.
    expect(store.size).toBe(61);
  });

  it("rejects a bad bound", () => {
    expect(() => new MemoryRateLimitStore({ maxEntries: 0 })).toThrow(InvalidOptionsError);
    expect(() => new MemoryRateLimitStore({ maxEntries: 1.5 })).toThrow(InvalidOptionsError);
  });
});
