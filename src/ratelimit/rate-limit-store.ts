import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";
import { OrderedMap } from "../core/ordered-map.ts";
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

/**
 * Options of `MemoryRateLimitStore`.
 *
 * @example
 * ```ts
 * import { MemoryRateLimitStore, rateLimit } from "portcullis";
 *
 * const limits = rateLimit({
 *   rules: [{ name: "api", match: "/api/**", limit: 100, windowMs: 60_000 }],
 *   store: new MemoryRateLimitStore({ maxEntries: 100_000 }), // many distinct clients
 * });
 * ```
 */
export interface MemoryRateLimitStoreOptions {
  /**
   * Most counters held. Past it a counter is dropped: first an
   * expired one, then one seen only once (the oldest), and only when no such
   * counter is left the least recently used of those seen again. A flood of
   * distinct keys (addresses hit once each) therefore churns among itself and
   * cannot push out the counter of a client that keeps coming back. A dropped
   * client starts over with a fresh quota: size it above the number of
   * distinct clients active within your longest window.
   *
   * @default 10_000
   */
  readonly maxEntries?: number;
}

interface Entry {
  state: RateLimitState;
  expiresAt: number;
  /** When the entry last moved to the recent end of its segment, counted in moves. */
  moved: number;
}

// Every this many hits, this many counters at the old end of each segment are checked and dropped if expired.
const SWEEP_EVERY = 8;
const SWEEP_AT_MOST = 16;
// How many of the oldest counters on probation an eviction compares.
const EVICTION_CANDIDATES = 8;
// A sketch estimate this high means the key was seen before, not only now.
const RETURNING = 2;

/**
 * `MemoryRateLimitStore.hit` answered within the call, for the leg: a counter
 * in memory needs no promise and no turn of the event loop.
 */
export let hitNow: (
  store: MemoryRateLimitStore,
  key: string,
  policy: RateLimitPolicy,
  now: number,
) => RateLimitDecision;

/**
 * Process-local counters, bounded in entries, in two segments: a key enters
 * on probation and moves to the protected segment when it is hit again. Each
 * instance of an application counts on its own: behind a load balancer use a
 * shared store.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  // Insertion order is recency order in both segments: the first key is the least recent.
  readonly #probation = new OrderedMap<string, Entry>();
  readonly #protected = new OrderedMap<string, Entry>();
  readonly #max: number;
  // The protected segment may hold most, not all, of the bound: new clients always find room.
  readonly #maxProtected: number;
  // How often each key was seen lately, counters dropped included: a bounded memory
  // of who keeps coming back, so eviction can prefer keys seen once.
  readonly #frequency: FrequencySketch;
  #hits = 0;
  #moves = 0;

  constructor(options: MemoryRateLimitStoreOptions = {}) {
    rejectUnknownKeys("MemoryRateLimitStore", options, ["maxEntries"]);
    this.#max = positiveInteger("MemoryRateLimitStore", "maxEntries", options.maxEntries, 10_000);
    this.#maxProtected = Math.max(1, Math.floor(this.#max * 0.8));
    this.#frequency = new FrequencySketch(this.#max);
  }

  /** Counters currently held. */
  get size(): number {
    return this.#probation.size + this.#protected.size;
  }

  static {
    hitNow = (store, key, policy, now) => store.#hit(key, policy, now);
  }

  async hit(key: string, policy: RateLimitPolicy, now: number): Promise<RateLimitDecision> {
    return this.#hit(key, policy, now);
  }

  #hit(key: string, policy: RateLimitPolicy, now: number): RateLimitDecision {
    if (++this.#hits % SWEEP_EVERY === 0) this.#sweep(now);
    this.#frequency.add(key);
    let entry = this.#protected.get(key);
    if (entry !== undefined) {
      // Moving to the recent end costs a delete and an insert, so only an entry in the
      // older half moves: a counter in use is moved long before it could be dropped.
      if (this.#moves - entry.moved > this.#maxProtected / 2) {
        this.#protected.delete(key);
        entry.moved = ++this.#moves;
        this.#protected.set(key, entry);
      }
      return advance(entry, policy, now);
    }
    entry = this.#probation.get(key);
    if (entry !== undefined) {
      // Seen again: promoted; the least recent protected counter goes back on probation.
      this.#probation.delete(key);
      entry.moved = ++this.#moves;
      this.#protected.set(key, entry);
      if (this.#protected.size > this.#maxProtected) {
        const oldest = this.#protected.firstKey() as string;
        const demoted = this.#protected.get(oldest) as Entry;
        this.#protected.delete(oldest);
        this.#probation.set(oldest, demoted);
      }
      return advance(entry, policy, now);
    }
    const result = step(undefined, policy, now);
    this.#probation.set(key, {
      state: result.state,
      expiresAt: result.expiresAt,
      moved: ++this.#moves,
    });
    while (this.size > this.#max) this.#dropOne();
    return result.decision;
  }

  async reset(key: string): Promise<void> {
    this.#probation.delete(key);
    this.#protected.delete(key);
  }

  // A little cleanup now and then drops expired counters from the old ends before the
  // bound pushes them out. Live counters there are stepped over, not stopped at: one
  // that was hit without moving can sit in front of expired ones.
  #sweep(now: number): void {
    for (const segment of [this.#probation, this.#protected]) {
      let seen = 0;
      for (const [key, entry] of segment) {
        if (seen++ === SWEEP_AT_MOST) break;
        if (entry.expiresAt <= now) segment.delete(key);
      }
    }
  }

  #dropOne(): void {
    if (this.#probation.size === 0) {
      this.#dropProtected();
      return;
    }
    // The oldest few on probation: one that has been seen before (it came back after an
    // eviction) moves to the protected segment instead; of the rest the one seen least
    // often goes, the oldest on a tie. A client that keeps coming back thus outranks a
    // flood of addresses seen once each, even when the flood pushed her out once.
    let victim: string | undefined;
    let fewest = Number.POSITIVE_INFINITY;
    let seen = 0;
    for (const [key, entry] of this.#probation) {
      const frequency = this.#frequency.estimate(key);
      if (frequency >= RETURNING && this.#protected.size < this.#maxProtected) {
        this.#probation.delete(key);
        this.#protected.set(key, entry);
        continue;
      }
      if (frequency < fewest) {
        victim = key;
        fewest = frequency;
      }
      if (++seen === EVICTION_CANDIDATES) break;
    }
    if (victim !== undefined) this.#probation.delete(victim);
    else this.#dropProtected();
  }

  #dropProtected(): void {
    const first = this.#protected.firstKey();
    if (first !== undefined) this.#protected.delete(first);
  }
}

/** Steps a held counter (a fresh one when it has expired) and answers the decision. */
function advance(entry: Entry, policy: RateLimitPolicy, now: number): RateLimitDecision {
  const result = step(entry.expiresAt > now ? entry.state : undefined, policy, now);
  entry.state = result.state;
  entry.expiresAt = result.expiresAt;
  return result.decision;
}

/**
 * A count-min sketch of recent key frequencies in a few bytes per counter held:
 * an estimate never below the true count (since the last halving), halved
 * every ten times the bound so old popularity fades.
 */
class FrequencySketch {
  readonly #rows: Uint8Array;
  readonly #mask: number;
  readonly #sampleSize: number;
  #added = 0;

  constructor(entries: number) {
    let width = 64;
    while (width < entries * 8) width *= 2;
    this.#rows = new Uint8Array(width * 4);
    this.#mask = width - 1;
    this.#sampleSize = entries * 10;
  }

  add(key: string): void {
    // Conservative update: only the counters at the current minimum grow, which keeps
    // the noise from other keys low without changing what the minimum can say.
    const first = fnv1a(key);
    const least = this.#estimate(first);
    if (least < 255) {
      let hash = first;
      const width = this.#mask + 1;
      for (let row = 0; row < 4; row++) {
        const index = row * width + (hash & this.#mask);
        if (this.#rows[index] === least) this.#rows[index] = least + 1;
        hash = rehash(hash);
      }
    }
    if (++this.#added >= this.#sampleSize) {
      this.#added = 0;
      for (let i = 0; i < this.#rows.length; i++) this.#rows[i] = (this.#rows[i] as number) >>> 1;
    }
  }

  estimate(key: string): number {
    return this.#estimate(fnv1a(key));
  }

  #estimate(first: number): number {
    let hash = first;
    const width = this.#mask + 1;
    let least = 255;
    for (let row = 0; row < 4; row++) {
      least = Math.min(least, this.#rows[row * width + (hash & this.#mask)] as number);
      hash = rehash(hash);
    }
    return least;
  }
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** A different, well-mixed index for the next row (murmur3's finalizer). */
function rehash(hash: number): number {
  let h = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
