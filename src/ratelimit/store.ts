import { InvalidOptionsError } from "../core/errors.ts";
import {
  type RateLimitDecision,
  type RateLimitPolicy,
  type RateLimitState,
  step,
} from "./algorithms.ts";

/**
 * Counters behind `rateLimit`. `hit` must be atomic per key: read the state,
 * apply `policy` (see `step` in `algorithms.ts`), write it back and answer, with
 * no other `hit` on the same key in between. A shared store does this in one
 * server-side operation (the Redis store runs a Lua script), so every instance
 * of an application counts against the same quota.
 */
export interface RateLimitStore {
  /**
   * Counts one request under `key` at `now` (milliseconds, from the
   * middleware's clock) if `policy` allows it, and tells whether it did.
   * Rejects (or throws) when the store cannot answer.
   */
  hit(key: string, policy: RateLimitPolicy, now: number): Promise<RateLimitDecision>;
  /** Forgets the counter under `key`. */
  reset(key: string): Promise<void>;
}

export interface MemoryRateLimitStoreOptions {
  /**
   * Most counters held. Default 10 000. Past it, the least recently used
   * counter is dropped, so a flood of distinct keys cannot grow memory; the
   * cost is that a dropped client starts over with a fresh quota. Size it above
   * the number of distinct clients active within your longest window.
   */
  readonly maxEntries?: number;
}

interface Entry {
  readonly state: RateLimitState;
  readonly expiresAt: number;
}

/**
 * Process-local counters, bounded in entries. Each instance of an application
 * counts on its own: behind a load balancer use a shared store.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  // Map order is recency order: a hit moves its key to the end, so the first key is the least recent.
  readonly #entries = new Map<string, Entry>();
  readonly #max: number;

  constructor(options: MemoryRateLimitStoreOptions = {}) {
    this.#max = options.maxEntries ?? 10_000;
    if (!Number.isSafeInteger(this.#max) || this.#max < 1)
      throw new InvalidOptionsError("maxEntries must be a positive integer");
  }

  /** Counters currently held. */
  get size(): number {
    return this.#entries.size;
  }

  async hit(key: string, policy: RateLimitPolicy, now: number): Promise<RateLimitDecision> {
    const entry = this.#entries.get(key);
    if (entry !== undefined) this.#entries.delete(key);
    const live = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
    const result = step(live, policy, now);
    this.#sweep(now);
    this.#entries.set(key, { state: result.state, expiresAt: result.expiresAt });
    while (this.#entries.size > this.#max) this.#dropOldest();
    return result.decision;
  }

  async reset(key: string): Promise<void> {
    this.#entries.delete(key);
  }

  // A little cleanup per hit keeps expired counters from lingering until the bound pushes them out.
  #sweep(now: number): void {
    for (let i = 0; i < 2; i++) {
      const first = this.#entries.entries().next();
      if (first.done || first.value[1].expiresAt > now) return;
      this.#entries.delete(first.value[0]);
    }
  }

  #dropOldest(): void {
    const first = this.#entries.keys().next();
    if (!first.done) this.#entries.delete(first.value);
  }
}
