import { InvalidOptionsError } from "../core/errors.ts";
import { rejectUnknownKeys } from "../core/options.ts";
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
  state: RateLimitState;
  expiresAt: number;
  /** When the entry last moved to the recent end, counted in moves. */
  moved: number;
}

// Every this many hits, this many counters at the old end are checked and dropped if expired.
const SWEEP_EVERY = 8;
const SWEEP_AT_MOST = 16;

/**
 * Process-local counters, bounded in entries. Each instance of an application
 * counts on its own: behind a load balancer use a shared store.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  // Map order is recency order: a hit moves its key to the end, so the first key is the least recent.
  readonly #entries = new Map<string, Entry>();
  readonly #max: number;
  #hits = 0;
  #moves = 0;

  constructor(options: MemoryRateLimitStoreOptions = {}) {
    rejectUnknownKeys("MemoryRateLimitStore", options, ["maxEntries"]);
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
    const live = entry !== undefined && entry.expiresAt > now ? entry.state : undefined;
    const result = step(live, policy, now);
    if (entry === undefined) {
      this.#entries.set(key, {
        state: result.state,
        expiresAt: result.expiresAt,
        moved: ++this.#moves,
      });
      while (this.#entries.size > this.#max) this.#dropOldest();
    } else {
      entry.state = result.state;
      entry.expiresAt = result.expiresAt;
      // Moving to the recent end costs a delete and an insert, so only an entry in the
      // older half moves: a counter in use is moved long before it could be dropped.
      if (this.#moves - entry.moved > this.#max / 2) {
        this.#entries.delete(key);
        entry.moved = ++this.#moves;
        this.#entries.set(key, entry);
      }
    }
    if (++this.#hits % SWEEP_EVERY === 0) this.#sweep(now);
    return result.decision;
  }

  async reset(key: string): Promise<void> {
    this.#entries.delete(key);
  }

  // A little cleanup now and then drops expired counters from the old end before the
  // bound pushes them out. Live counters there are stepped over, not stopped at: one
  // that was hit without moving can sit in front of expired ones.
  #sweep(now: number): void {
    let seen = 0;
    for (const [key, entry] of this.#entries) {
      if (seen++ === SWEEP_AT_MOST) return;
      if (entry.expiresAt <= now) this.#entries.delete(key);
    }
  }

  #dropOldest(): void {
    const first = this.#entries.keys().next();
    if (!first.done) this.#entries.delete(first.value);
  }
}
