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
 * sessions evicts the oldest rather than exhausting memory. Sessions live only
 * as long as the process and are not shared between instances. `get()`
 * answers a deep-frozen record: copy it before changing anything.
 */
export class MemorySessionStore implements SessionStore {
  // Records are stored as deep-frozen copies made through JSON, as a shared store
  // would hold them: nothing a caller does to a record it wrote or read can change
  // the stored one, and a read costs no parse or copy. The session copies the data
  // on first use.
  readonly #entries = new Map<string, { record: SessionRecord; expiresAt: number }>();
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
    return this.#entries.size;
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const entry = this.#entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.#now()) {
      this.#entries.delete(id);
      return undefined;
    }
    return entry.record;
  }

  async set(id: string, record: SessionRecord, ttlMs: number): Promise<void> {
    // Re-inserting moves the id to the end, so iteration order is least recently written first.
    this.#entries.delete(id);
    if (ttlMs <= 0) return;
    // What JSON cannot hold fails here, as it would in a shared store.
    const copy = deepFreeze(JSON.parse(JSON.stringify(record)) as SessionRecord);
    this.#entries.set(id, { record: copy, expiresAt: this.#now() + ttlMs });
    while (this.#entries.size > this.#max) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
  }

  async delete(id: string): Promise<void> {
    this.#entries.delete(id);
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
