import { positiveInteger, rejectUnknownKeys } from "./options.ts";
import { OrderedMap } from "./ordered-map.ts";

/** What `LoginAttemptStore.consume` answers. */
export interface AttemptReservation {
  /** True when the attempt was counted: the password may be checked. */
  readonly allowed: boolean;
  /** When the key's window ends (epoch ms): the time to tell a refused client to come back. */
  readonly resetAt: number;
}

/**
 * Sign-in attempt counters, one per key (a username or a client). A counter
 * starts with the first attempt and lasts `windowMs`. A password is checked
 * only after `consume` counted the attempt, so the count is a budget taken
 * before the check: however many attempts race, no more than `max` per window
 * get past it. An attempt that succeeds gives its count back (`reset` for the
 * username, `release` for the client); a failed one keeps it.
 *
 * Implementations must make `consume` atomic (within the process and, for a
 * shared store, across every instance using it), and may throw or reject on
 * failure: the caller then refuses the sign-in (503).
 */
export interface LoginAttemptStore {
  /**
   * Counts one attempt against `key` if fewer than `max` are counted in its
   * current window (starting a window of `windowMs` at `now` when none is
   * running), and answers whether it did. Check and count are one atomic step.
   */
  consume(key: string, max: number, windowMs: number, now: number): Promise<AttemptReservation>;
  /** Gives back one attempt `consume` counted for `key` (never below zero). */
  release(key: string, now: number): Promise<void>;
  /** Forgets `key`'s counter. */
  reset(key: string): Promise<void>;
}

/**
 * Options of `MemoryLoginAttemptStore`.
 *
 * @example
 * ```ts
 * import { MemoryLoginAttemptStore, passwordCredentials } from "portcullis";
 *
 * const credentials = passwordCredentials({
 *   findUser: (name) => users.get(name),
 *   throttle: { store: new MemoryLoginAttemptStore({ maxEntries: 50_000 }) },
 * });
 * ```
 */
export interface MemoryLoginAttemptStoreOptions {
  /**
   * Most counters held; past it one is forgotten (see the class).
   *
   * @default 10_000
   */
  readonly maxEntries?: number;
}

// The memory store's operations within the call, set by its static block.
let consumeNow: (
  store: MemoryLoginAttemptStore,
  key: string,
  max: number,
  windowMs: number,
  now: number,
) => AttemptReservation;
let releaseNow: (store: MemoryLoginAttemptStore, key: string, now: number) => void;
let resetNow: (store: MemoryLoginAttemptStore, key: string) => void;

// How many of the oldest counters an eviction looks at.
const EVICTION_SCAN = 16;

/**
 * Process-local, bounded attempt counters, for a single instance. Past
 * `maxEntries` a counter is forgotten: an expired one, else the one with the
 * fewest attempts among the oldest. A flood of made-up usernames (one attempt
 * each) neither exhausts memory nor pushes out the counter of an account that
 * is being guessed at.
 */
export class MemoryLoginAttemptStore implements LoginAttemptStore {
  readonly #entries = new OrderedMap<string, { count: number; resetAt: number }>();
  readonly #max: number;

  constructor(options: MemoryLoginAttemptStoreOptions = {}) {
    rejectUnknownKeys("MemoryLoginAttemptStore", options, ["maxEntries"]);
    this.#max = positiveInteger(
      "MemoryLoginAttemptStore",
      "maxEntries",
      options?.maxEntries,
      10_000,
    );
  }

  /** How many counters are held. */
  get size(): number {
    return this.#entries.size;
  }

  async consume(
    key: string,
    max: number,
    windowMs: number,
    now: number,
  ): Promise<AttemptReservation> {
    return this.#consume(key, max, windowMs, now);
  }

  async release(key: string, now: number): Promise<void> {
    this.#release(key, now);
  }

  async reset(key: string): Promise<void> {
    this.#entries.delete(key);
  }

  static {
    consumeNow = (store, key, max, windowMs, now) => store.#consume(key, max, windowMs, now);
    releaseNow = (store, key, now) => store.#release(key, now);
    resetNow = (store, key) => {
      store.#entries.delete(key);
    };
  }

  #consume(key: string, max: number, windowMs: number, now: number): AttemptReservation {
    const entry = this.#entries.get(key);
    if (entry !== undefined && entry.resetAt > now) {
      if (entry.count >= max) return { allowed: false, resetAt: entry.resetAt };
      entry.count++;
      // Most recently counted last: eviction looks at the oldest.
      this.#entries.delete(key);
      this.#entries.set(key, entry);
      return { allowed: true, resetAt: entry.resetAt };
    }
    const fresh = { count: 1, resetAt: now + windowMs };
    // An expired counter starts again as the newest.
    if (entry !== undefined) this.#entries.delete(key);
    this.#entries.set(key, fresh);
    while (this.#entries.size > this.#max) this.#evict(now, key);
    return { allowed: true, resetAt: fresh.resetAt };
  }

  #release(key: string, now: number): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    if (entry.resetAt <= now || entry.count <= 1) this.#entries.delete(key);
    else entry.count--;
  }

  // Of the oldest few counters, an expired one goes, else the one with the
  // fewest attempts. The counter just taken is never the one: its reservation
  // must hold until the check it guards is over.
  #evict(now: number, keep: string): void {
    let victim: string | undefined;
    let fewest = Number.POSITIVE_INFINITY;
    let seen = 0;
    for (const [key, entry] of this.#entries) {
      if (key === keep) continue;
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
    if (victim === undefined) return;
    this.#entries.delete(victim);
  }
}

const MEMORY_STORE = MemoryLoginAttemptStore.prototype;

/**
 * Whether `store` is the built-in memory store with its own methods: its
 * counters are this process's and answer within the call (`consumeNow`,
 * `releaseNow`, `resetNow`), so check and count stay one step without a
 * promise each. A subclass or a replaced method (a spy, a wrapper) is not.
 */
export function isPlainMemoryStore(store: LoginAttemptStore): store is MemoryLoginAttemptStore {
  return (
    Object.getPrototypeOf(store) === MEMORY_STORE &&
    store.consume === MEMORY_STORE.consume &&
    store.release === MEMORY_STORE.release &&
    store.reset === MEMORY_STORE.reset
  );
}

/** `store.consume`, within the call. */
export function consumeAttemptNow(
  store: MemoryLoginAttemptStore,
  key: string,
  max: number,
  windowMs: number,
  now: number,
): AttemptReservation {
  return consumeNow(store, key, max, windowMs, now);
}

/** `store.release`, within the call. */
export function releaseAttemptNow(store: MemoryLoginAttemptStore, key: string, now: number): void {
  releaseNow(store, key, now);
}

/** `store.reset`, within the call. */
export function resetAttemptsNow(store: MemoryLoginAttemptStore, key: string): void {
  resetNow(store, key);
}
