import { InvalidOptionsError } from "../core/errors.ts";
import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";
import { OrderedMap } from "../core/ordered-map.ts";

/** What a session store keeps under a session id. Plain JSON, so any store can hold it. */
export interface SessionRecord {
  readonly data: Readonly<Record<string, unknown>>;
  /** The signed-in principal, if any. */
  readonly principal?: { readonly name: string; readonly authorities: readonly string[] };
  /** Epoch milliseconds. */
  readonly createdAt: number;
  /** Epoch milliseconds of the last request seen (updated at most every `touchIntervalMs`). */
  readonly lastAccessAt: number;
}

/**
 * Server-side session storage. Every write is conditional, so that a request
 * still running with a session another request has ended (logout, id
 * rotation) can never bring it back: `create` writes only where nothing is,
 * `update` and `touch` only where a record still is. Each must be atomic in
 * the store (Redis `SET NX` / `SET XX`, a script), never a read then a write.
 * `ttlMs` is how long the record may live; the store drops it afterwards. A
 * non-positive `ttlMs` writes nothing (`update` and `touch` then remove the
 * record and answer `false`).
 */
export interface SessionStore {
  /** The record under `id`, or `undefined` when there is none (never written, deleted, expired). */
  get(id: string): Promise<SessionRecord | undefined>;
  /** Writes `record` under `id` only if no record is there. Answers whether it wrote. */
  create(id: string, record: SessionRecord, ttlMs: number): Promise<boolean>;
  /**
   * Replaces the record under `id` only if one is there. Answers whether it
   * wrote: `false` means the session was ended meanwhile.
   */
  update(id: string, record: SessionRecord, ttlMs: number): Promise<boolean>;
  /**
   * Sets the stored record's `lastAccessAt` and its TTL, leaving its data and
   * principal as they are now in the store, only if a record is there. Answers
   * whether it was.
   */
  touch(id: string, lastAccessAt: number, ttlMs: number): Promise<boolean>;
  /** Removes the record under `id`. Answers whether there was one. */
  delete(id: string): Promise<boolean>;
}

/**
 * Options of `MemorySessionStore`.
 *
 * @example
 * ```ts
 * import { MemorySessionStore, sessions } from "portcullis";
 *
 * const session = sessions({ store: new MemorySessionStore({ maxEntries: 50_000 }) });
 * ```
 */
export interface MemorySessionStoreOptions {
  /**
   * Most sessions held; past it the least recently written is dropped, anonymous ones first.
   *
   * @default 10_000
   */
  readonly maxEntries?: number;
  /**
   * Clock, for tests.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/**
 * `MemorySessionStore.get` answered within the call, for the session leg: a
 * record in memory needs no promise and no turn of the event loop.
 */
export let getNow: (store: MemorySessionStore, id: string) => SessionRecord | undefined;

/**
 * A process-local store, bounded in entries and TTL-aware: a flood of new
 * sessions evicts old ones rather than exhausting memory. Anonymous sessions
 * (no principal) go first, least recently written first: anyone can create
 * those by the thousand, so they must never push signed-in users out. Sessions
 * live only as long as the process and are not shared between instances.
 * `get()` answers a deep-frozen record: copy it before changing anything.
 */
export class MemorySessionStore implements SessionStore {
  // Records are stored as deep-frozen copies made through JSON, as a shared store
  // would hold them: nothing a caller does to a record it wrote or read can change
  // the stored one, and a read costs no parse or copy. The session copies the data
  // on first use. Each map is in write order, so its first key is its oldest.
  // Every method does its check and its write without an await in between, which
  // makes each one atomic in this process.
  readonly #anonymous = new OrderedMap<string, Entry>();
  readonly #signedIn = new OrderedMap<string, Entry>();
  readonly #max: number;
  readonly #now: () => number;

  constructor(options: MemorySessionStoreOptions = {}) {
    rejectUnknownKeys("MemorySessionStore", options, ["maxEntries", "now"]);
    const max = positiveInteger("MemorySessionStore", "maxEntries", options.maxEntries, 10_000);
    if (options.now !== undefined && typeof options.now !== "function")
      throw new InvalidOptionsError("MemorySessionStore: now must be a function");
    this.#max = max;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#anonymous.size + this.#signedIn.size;
  }

  static {
    getNow = (store, id) => store.#live(id)?.record;
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    return this.#live(id)?.record;
  }

  async create(id: string, record: SessionRecord, ttlMs: number): Promise<boolean> {
    if (this.#live(id) !== undefined || !(ttlMs > 0)) return false;
    this.#put(id, freeze(record), ttlMs);
    return true;
  }

  async update(id: string, record: SessionRecord, ttlMs: number): Promise<boolean> {
    if (this.#live(id) === undefined) return false;
    if (!(ttlMs > 0)) {
      this.#remove(id);
      return false;
    }
    this.#put(id, freeze(record), ttlMs);
    return true;
  }

  async touch(id: string, lastAccessAt: number, ttlMs: number): Promise<boolean> {
    const entry = this.#live(id);
    if (entry === undefined) return false;
    if (!(ttlMs > 0)) {
      this.#remove(id);
      return false;
    }
    // Data and principal stay the frozen objects already held: only the time changes.
    this.#put(id, Object.freeze({ ...entry.record, lastAccessAt }), ttlMs);
    return true;
  }

  async delete(id: string): Promise<boolean> {
    return this.#live(id) !== undefined && this.#remove(id);
  }

  /** The unexpired entry under `id`; an expired one is dropped on the way. */
  #live(id: string): Entry | undefined {
    let map = this.#signedIn;
    let entry = map.get(id);
    if (entry === undefined) {
      map = this.#anonymous;
      entry = map.get(id);
      if (entry === undefined) return undefined;
    }
    if (entry.expiresAt <= this.#now()) {
      map.delete(id);
      return undefined;
    }
    return entry;
  }

  #remove(id: string): boolean {
    return this.#signedIn.delete(id) || this.#anonymous.delete(id);
  }

  #put(id: string, record: SessionRecord, ttlMs: number): void {
    // Re-inserting moves the id to the end: the least recently written stays first.
    this.#remove(id);
    const map = record.principal === undefined ? this.#anonymous : this.#signedIn;
    map.set(id, { record, expiresAt: this.#now() + ttlMs });
    while (this.size > this.#max) {
      const from = this.#anonymous.size > 0 ? this.#anonymous : this.#signedIn;
      from.delete(from.firstKey() as string);
    }
  }
}

interface Entry {
  readonly record: SessionRecord;
  readonly expiresAt: number;
}

/** A deep-frozen copy made through JSON: what JSON cannot hold fails here, as it would in a shared store. */
function freeze(record: SessionRecord): SessionRecord {
  return deepFreeze(JSON.parse(JSON.stringify(record)) as SessionRecord);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
