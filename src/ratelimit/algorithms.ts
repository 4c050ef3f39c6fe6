/**
 * How a rule counts:
 * - `"fixed-window"`: at most `limit` requests per window aligned to multiples
 *   of `windowMs`; exact, but a client may spend `2 × limit` across a boundary.
 * - `"sliding-window"` (default): the current window's count plus the previous
 *   window's count weighted by how much of it still overlaps the last
 *   `windowMs`; two counters per key, no boundary burst.
 * - `"token-bucket"`: a bucket of `limit` tokens refilled at `limit` per
 *   `windowMs`; allows bursts of up to `limit`, then a steady rate.
 */
export type RateLimitAlgorithm = "fixed-window" | "sliding-window" | "token-bucket";

export const ALGORITHMS: readonly RateLimitAlgorithm[] = Object.freeze([
  "fixed-window",
  "sliding-window",
  "token-bucket",
]);

/** What a store applies to one counter. */
export interface RateLimitPolicy {
  readonly algorithm: RateLimitAlgorithm;
  /** Requests allowed per window (the bucket size for `"token-bucket"`); a positive integer. */
  readonly limit: number;
  /** Window length (full refill time for `"token-bucket"`) in milliseconds; a positive integer. */
  readonly windowMs: number;
}

/** A store's answer for one request against one counter. Times are in the clock the caller passed. */
export interface RateLimitDecision {
  /** Whether the request fits; only allowed requests consume quota. */
  readonly allowed: boolean;
  /** Whole requests still available after this one. */
  readonly remaining: number;
  /** When the current window ends (when the bucket is full again, for a token bucket). */
  readonly resetAt: number;
  /** Earliest time a request could pass again; `now` when allowed. */
  readonly retryAt: number;
}

/** A counter's state. Stores keep it opaque; shared stores hold the same fields in their own form. */
export type RateLimitState =
  | { readonly kind: "fixed-window"; readonly start: number; readonly count: number }
  | {
      readonly kind: "sliding-window";
      readonly start: number;
      readonly count: number;
      readonly previous: number;
    }
  | { readonly kind: "token-bucket"; readonly tokens: number; readonly updated: number };

export interface RateLimitStep {
  readonly state: RateLimitState;
  readonly decision: RateLimitDecision;
  /** After this time the state says nothing a fresh counter would not. */
  readonly expiresAt: number;
}

// Absorb floating-point error: 1000 * (1 - 0.7) is 300.00000000000006, not 300.
const EPSILON = 1e-9;
const ceilMs = (ms: number) => Math.ceil(ms - 1e-6);

/**
 * Applies `policy` to `state` (`undefined` for a fresh counter) at `now`:
 * one pure step, so a store that runs it under a per-key lock is atomic.
 * The Redis store's Lua script mirrors this function line for line.
 */
export function step(
  state: RateLimitState | undefined,
  policy: RateLimitPolicy,
  now: number,
): RateLimitStep {
  const { limit, windowMs: w } = policy;
  switch (policy.algorithm) {
    case "fixed-window": {
      let start = Math.floor(now / w) * w;
      let count = 0;
      // A stored window later than ours means the clock stepped back: keep counting in it.
      if (state?.kind === "fixed-window" && state.start >= start) {
        start = state.start;
        count = state.count;
      }
      const allowed = count < limit;
      if (allowed) count++;
      const resetAt = start + w;
      return {
        state: { kind: "fixed-window", start, count },
        decision: { allowed, remaining: limit - count, resetAt, retryAt: allowed ? now : resetAt },
        expiresAt: resetAt,
      };
    }
    case "sliding-window": {
      let start = Math.floor(now / w) * w;
      let count = 0;
      let previous = 0;
      if (state?.kind === "sliding-window") {
        if (state.start >= start) {
          start = state.start;
          count = state.count;
          previous = state.previous;
        } else if (state.start === start - w) {
          previous = state.count;
        }
      }
      const weight = Math.min(1, Math.max(0, 1 - (now - start) / w));
      const allowed = previous * weight + count + 1 <= limit + EPSILON;
      if (allowed) count++;
      const remaining = Math.max(0, Math.floor(limit - (previous * weight + count) + EPSILON));
      let retryAt = now;
      if (!allowed) {
        retryAt =
          count + 1 <= limit
            ? // The previous window's share has to decay to limit - count - 1.
              start + ceilMs(w * (1 - (limit - count - 1) / previous))
            : // Only the next window helps, where this window's count becomes the previous one.
              start + w + ceilMs(w * (1 - (limit - 1) / count));
        retryAt = Math.max(retryAt, now + 1);
      }
      return {
        state: { kind: "sliding-window", start, count, previous },
        decision: { allowed, remaining, resetAt: start + w, retryAt },
        expiresAt: start + 2 * w,
      };
    }
    case "token-bucket": {
      let tokens = limit;
      let updated = now;
      if (state?.kind === "token-bucket") {
        const elapsed = Math.max(0, now - state.updated);
        tokens = Math.min(limit, state.tokens + (elapsed * limit) / w);
        updated = Math.max(now, state.updated);
      }
      const allowed = tokens >= 1 - EPSILON;
      if (allowed) tokens = Math.max(0, tokens - 1);
      const resetAt = now + ceilMs(((limit - tokens) * w) / limit);
      const retryAt = allowed ? now : now + Math.max(1, ceilMs(((1 - tokens) * w) / limit));
      return {
        state: { kind: "token-bucket", tokens, updated },
        decision: { allowed, remaining: Math.floor(tokens + EPSILON), resetAt, retryAt },
        expiresAt: resetAt,
      };
    }
  }
}
