import { InvalidOptionsError } from "../core/errors.ts";

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

/** Server-side session storage. `ttlMs` is how long the record may live; stores drop it afterwards. */
export interface SessionStore {
  get(id: string): Promise<SessionRecord | undefined>;
  set(id: string, record: SessionRecord, ttlMs: number): Promise<void>;
  delete(id: string): Promise<void>;
}

export interface MemorySessionStoreOptions {
  /** Most sessions held; past it the least recently written is dropped. Default 10 000. */
  readonly maxEntries?: number;
  /** Clock, for tests. Default `Date.now`. */
  readonly now?: () => number;
}

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
  // on first use. Map order is write order, so each map's first key is its oldest.
  readonly #anonymous = new Map<string, Entry>();
  readonly #signedIn = new Map<string, Entry>();
  readonly #max: number;
  readonly #now: () => number;

  constructor(options: MemorySessionStoreOptions = {}) {
    const max = options.maxEntries ?? 10_000;
    if (!Number.isSafeInteger(max) || max < 1)
      throw new InvalidOptionsError("maxEntries must be a positive integer");
    this.#max = max;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#anonymous.size + this.#signedIn.size;
  }

  async get(id: string): Promise<SessionRecord | undefined> {
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
    return entry.record;
  }

  async set(id: string, record: SessionRecord, ttlMs: number): Promise<void> {
    // Re-inserting moves the id to the end: the least recently written stays first.
    this.#anonymous.delete(id);
    this.#signedIn.delete(id);
    if (ttlMs <= 0) return;
    // What JSON cannot hold fails here, as it would in a shared store.
    const copy = deepFreeze(JSON.parse(JSON.stringify(record)) as SessionRecord);
    const map = copy.principal === undefined ? this.#anonymous : this.#signedIn;
    map.set(id, { record: copy, expiresAt: this.#now() + ttlMs });
    while (this.size > this.#max) {
      const from = this.#anonymous.size > 0 ? this.#anonymous : this.#signedIn;
      from.delete(from.keys().next().value as string);
    }
  }

  async delete(id: string): Promise<void> {
    this.#anonymous.delete(id);
    this.#signedIn.delete(id);
  }
}

interface Entry {
  readonly record: SessionRecord;
  readonly expiresAt: number;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
