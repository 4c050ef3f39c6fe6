import { InvalidOptionsError } from "../core/errors.ts";

/** Failed-login counters. A counter starts with the first failure and lasts `windowMs`. */
export interface LoginAttemptStore {
  /** Failures recorded for `key` in its current window, or 0. */
  failures(key: string, now: number): Promise<{ readonly count: number; readonly resetAt: number }>;
  /** Records one failure for `key`. */
  fail(key: string, windowMs: number, now: number): Promise<void>;
  /** Forgets `key` (after a successful login). */
  reset(key: string): Promise<void>;
}

// How many of the oldest counters an eviction looks at.
const EVICTION_SCAN = 16;

/**
 * Process-local, bounded attempt counters. Past `maxEntries` a counter is
 * forgotten (an expired one, else the one with the fewest failures among the
 * oldest), so a flood of made-up usernames neither exhausts memory nor
 * pushes out the counter of an account that is being guessed at.
 */
export class MemoryLoginAttemptStore implements LoginAttemptStore {
  readonly #entries = new Map<string, { count: number; resetAt: number }>();
  readonly #max: number;

  /** `maxEntries` default 10 000. */
  constructor(options: { readonly maxEntries?: number } = {}) {
    this.#max = options.maxEntries ?? 10_000;
    if (!Number.isSafeInteger(this.#max) || this.#max < 1)
      throw new InvalidOptionsError("maxEntries must be a positive integer");
  }

  get size(): number {
    return this.#entries.size;
  }

  async failures(key: string, now: number) {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.resetAt <= now) return { count: 0, resetAt: now };
    return { count: entry.count, resetAt: entry.resetAt };
  }

  async fail(key: string, windowMs: number, now: number): Promise<void> {
    const entry = this.#entries.get(key);
    const live = entry !== undefined && entry.resetAt > now;
    this.#entries.delete(key);
    this.#entries.set(
      key,
      live
        ? { count: entry.count + 1, resetAt: entry.resetAt }
        : { count: 1, resetAt: now + windowMs },
    );
    while (this.#entries.size > this.#max) this.#evict(now);
  }

  // Of the oldest few counters, an expired one goes, else the one with the fewest
  // failures: a flood of made-up usernames (one failure each) cannot push out the
  // counter of an account under attack.
  #evict(now: number): void {
    let victim: string | undefined;
    let fewest = Number.POSITIVE_INFINITY;
    let seen = 0;
    for (const [key, entry] of this.#entries) {
      if (entry.resetAt <= now) {
        victim = key;
        break;
      }
      // On a tie the newer goes: the older counter has been failing longer.
      if (entry.count <= fewest) {
        victim = key;
        fewest = entry.count;
      }
      if (++seen === EVICTION_SCAN) break;
    }
    this.#entries.delete(victim as string);
  }

  async reset(key: string): Promise<void> {
    this.#entries.delete(key);
  }
}
