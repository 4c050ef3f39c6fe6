import { describe, expect, it } from "vitest";
import { type RateLimitPolicy, type RateLimitState, step } from "./algorithms.ts";

/** Runs `step` like a store would, keeping the state between calls. */
function counter(policy: RateLimitPolicy) {
  let state: RateLimitState | undefined;
  let expiresAt = Number.NEGATIVE_INFINITY;
  return (now: number) => {
    const result = step(expiresAt > now ? state : undefined, policy, now);
    state = result.state;
    expiresAt = result.expiresAt;
    return result.decision;
  };
}

describe("fixed window", () => {
  const policy: RateLimitPolicy = { algorithm: "fixed-window", limit: 3, windowMs: 1000 };

  it("allows limit requests per aligned window and resets at its end", () => {
    const hit = counter(policy);
    expect(hit(10_000).remaining).toBe(2);
    expect(hit(10_100).remaining).toBe(1);
    expect(hit(10_200)).toEqual({ allowed: true, remaining: 0, resetAt: 11_000, retryAt: 10_200 });
    expect(hit(10_999)).toEqual({ allowed: false, remaining: 0, resetAt: 11_000, retryAt: 11_000 });
    expect(hit(11_000)).toMatchObject({ allowed: true, remaining: 2, resetAt: 12_000 });
  });

  it("does not count denied requests", () => {
    const hit = counter(policy);
    for (let i = 0; i < 10; i++) hit(10_000 + i);
    const state = step(undefined, policy, 10_000);
    expect(state.state).toEqual({ kind: "fixed-window", start: 10_000, count: 1 });
    expect(hit(11_000).remaining).toBe(2);
  });

  it("keeps counting when the clock steps back", () => {
    const hit = counter(policy);
    hit(11_500);
    hit(11_600);
    hit(11_700);
    expect(hit(10_900).allowed).toBe(false);
  });
});

describe("sliding window", () => {
  const policy: RateLimitPolicy = { algorithm: "sliding-window", limit: 10, windowMs: 1000 };

  it("weights the previous window by its remaining overlap", () => {
    const hit = counter(policy);
    for (let i = 0; i < 10; i++) expect(hit(10_000 + i * 10).allowed).toBe(true);
    expect(hit(10_500).allowed).toBe(false);
    // 25% into the next window the previous 10 still weigh 7.5: two more fit (7.5 + 2 <= 10).
    expect(hit(11_250)).toMatchObject({ allowed: true, remaining: 1 });
    expect(hit(11_250)).toMatchObject({ allowed: true, remaining: 0 });
    const denied = hit(11_250);
    expect(denied.allowed).toBe(false);
    // The previous window must decay to 10 - 2 - 1 = 7 of 10, i.e. 30% in: at 11 300.
    expect(denied.retryAt).toBe(11_300);
    expect(hit(11_299).allowed).toBe(false);
    expect(hit(11_300).allowed).toBe(true);
  });

  it("forgets a window two windows back", () => {
    const hit = counter(policy);
    for (let i = 0; i < 10; i++) hit(10_000);
    expect(hit(12_000)).toMatchObject({ allowed: true, remaining: 9 });
  });

  it("has no boundary burst, unlike a fixed window", () => {
    const sliding = counter(policy);
    const fixed = counter({ ...policy, algorithm: "fixed-window" });
    let slidingAllowed = 0;
    let fixedAllowed = 0;
    for (let i = 0; i < 10; i++) {
      if (sliding(10_990).allowed) slidingAllowed++;
      if (fixed(10_990).allowed) fixedAllowed++;
    }
    for (let i = 0; i < 10; i++) {
      if (sliding(11_010).allowed) slidingAllowed++;
      if (fixed(11_010).allowed) fixedAllowed++;
    }
    expect(fixedAllowed).toBe(20);
    expect(slidingAllowed).toBe(10);
  });

  it("points a client over its whole limit into the next window", () => {
    const hit = counter({ ...policy, limit: 4 });
    for (let i = 0; i < 4; i++) hit(10_000);
    const denied = hit(10_000);
    // Next window: 4 * (1 - f) + 1 <= 4 needs f >= 0.25.
    expect(denied.retryAt).toBe(11_250);
    expect(hit(11_249).allowed).toBe(false);
    expect(hit(11_250).allowed).toBe(true);
  });

  it("with limit 1 waits out the next window", () => {
    const hit = counter({ ...policy, limit: 1 });
    hit(10_000);
    expect(hit(10_500).retryAt).toBe(12_000);
    expect(hit(11_999).allowed).toBe(false);
    expect(hit(12_000).allowed).toBe(true);
  });
});

describe("token bucket", () => {
  const policy: RateLimitPolicy = { algorithm: "token-bucket", limit: 4, windowMs: 1000 };

  it("allows a burst of limit, then refills limit per window", () => {
    const hit = counter(policy);
    for (let i = 3; i >= 0; i--) expect(hit(10_000).remaining).toBe(i);
    const denied = hit(10_000);
    expect(denied).toMatchObject({ allowed: false, retryAt: 10_250, resetAt: 11_000 });
    expect(hit(10_249).allowed).toBe(false);
    expect(hit(10_250)).toMatchObject({ allowed: true, remaining: 0 });
    expect(hit(11_250)).toMatchObject({ allowed: true, remaining: 3 });
  });
});
