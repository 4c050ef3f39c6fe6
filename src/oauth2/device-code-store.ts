import { StoreFullError } from "../core/errors.ts";
import { ExpiryQueue } from "../core/expiry-queue.ts";
import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";

export type DeviceCodeStatus = "pending" | "approved" | "denied" | "consumed";

/**
 * One device authorization. The store holds only hashes of the device code
 * and the user code, so a leaked store hands out no live code.
 */
export interface DeviceCodeRecord {
  /** SHA-256 of the device code, base64url. */
  readonly deviceCodeHash: string;
  /** SHA-256 of the normalized user code, base64url. */
  readonly userCodeHash: string;
  readonly clientId: string;
  readonly scope: readonly string[];
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  readonly expiresAt: number;
  /** The polling interval now in force, grown by every `slow_down`. */
  readonly intervalMs: number;
  readonly status: DeviceCodeStatus;
  /** When the client last polled. */
  readonly lastPolledAt?: number;
  /** The principal the token is issued to, bound on approval. */
  readonly subject?: string;
  /** Who approved or denied. */
  readonly decidedBy?: string;
}

export type CreateOutcome = "created" | "user_code_taken" | "full";

export type DecideOutcome =
  | { readonly outcome: "decided"; readonly record: DeviceCodeRecord }
  | { readonly outcome: "unknown" | "expired" | "already_decided" };

export type PollOutcome =
  | { readonly outcome: "approved"; readonly record: DeviceCodeRecord }
  | { readonly outcome: "pending" | "denied" | "expired" | "invalid" }
  | { readonly outcome: "slow_down"; readonly intervalMs: number };

export type Decision =
  | { readonly status: "approved"; readonly subject: string; readonly decidedBy: string }
  | { readonly status: "denied"; readonly decidedBy: string };

/**
 * Device authorizations (RFC 8628). `decide` and `poll` are each one atomic
 * step in the store, so racing approvals decide once and racing polls
 * consume an approval once, on every instance sharing the store.
 */
export interface DeviceCodeStore {
  /**
   * Inserts a pending record unless its user code is held by a live one or the
   * store is full of live records: then it answers `full`, or throws
   * `StoreFullError` with its figures (the built-in store does).
   */
  create(record: DeviceCodeRecord, now: number): Promise<CreateOutcome>;
  /** The live record a user code hash names. */
  findByUserCode(userCodeHash: string, now: number): Promise<DeviceCodeRecord | undefined>;
  /** Moves a pending, unexpired record to approved or denied; anything else is refused. */
  decide(userCodeHash: string, decision: Decision, now: number): Promise<DecideOutcome>;
  /**
   * One poll by `clientId`: an unknown code, another client's code or a
   * consumed one is `invalid` (and the record is left as it was); past
   * `expiresAt`, `expired`; a poll sooner than `intervalMs` after the last one
   * is `slow_down` and grows the interval by `slowDownMs`; an approved record
   * becomes consumed and is answered `approved` exactly once.
   */
  poll(
    deviceCodeHash: string,
    clientId: string,
    now: number,
    slowDownMs: number,
  ): Promise<PollOutcome>;
  /**
   * Puts back an approval whose token could not be issued: a record `clientId`'s
   * poll consumed at `consumedAt` (its `lastPolledAt`) becomes approved again;
   * anything else is left as it was and answers `false`. Optional: without it,
   * an approval whose token failed is spent, and the human approves again.
   */
  release?(deviceCodeHash: string, clientId: string, consumedAt: number): Promise<boolean>;
}

/**
 * Options of `MemoryDeviceCodeStore`.
 *
 * @example
 * ```ts
 * import { DeviceAuthorizationService, MemoryDeviceCodeStore } from "portcullis/oauth2";
 *
 * const service = new DeviceAuthorizationService({
 *   verificationUri: "https://api.example.com/device",
 *   store: new MemoryDeviceCodeStore({ maxEntries: 50_000, maxPendingPerClient: 5 }),
 * });
 * ```
 */
export interface MemoryDeviceCodeStoreOptions {
  /**
   * Most records held. At it, ended records go first; when every one is live,
   * `create` throws `StoreFullError` (the newcomer gets 503) rather than drop one. Keep
   * it at least the number of clients times `maxPendingPerClient`, and no set
   * of clients can fill it.
   *
   * @default 10_000
   */
  readonly maxEntries?: number;
  /**
   * Most live codes per client (pending, or decided and not yet collected); a
   * new one supersedes that client's oldest.
   *
   * @default 1
   */
  readonly maxPendingPerClient?: number;
}

// An expired or finished record is kept this long, so a late poll still learns why.
const LINGER_MS = 10 * 60_000;

/**
 * Process-local device authorizations for a single instance. Bounded,
 * timer-free; every call costs O(log n) in the records held, or
 * O(`maxPendingPerClient`) for `create`.
 */
export class MemoryDeviceCodeStore implements DeviceCodeStore {
  readonly #byDevice = new Map<string, DeviceCodeRecord>();
  readonly #byUser = new Map<string, string>();
  // Each client's live, unconsumed records, oldest first: what its quota counts.
  readonly #byClient = new Map<string, Set<string>>();
  // Consumed records, oldest first: kept for `release`, dropped first when full.
  readonly #consumed = new Set<string>();
  readonly #expiry = new ExpiryQueue<string>();
  readonly #maxEntries: number;
  readonly #maxPerClient: number;

  constructor(options: MemoryDeviceCodeStoreOptions = {}) {
    rejectUnknownKeys("MemoryDeviceCodeStore", options, ["maxEntries", "maxPendingPerClient"]);
    const where = "MemoryDeviceCodeStore";
    this.#maxEntries = positiveInteger(where, "maxEntries", options.maxEntries, 10_000);
    this.#maxPerClient = positiveInteger(
      where,
      "maxPendingPerClient",
      options.maxPendingPerClient,
      1,
    );
  }

  async create(record: DeviceCodeRecord, now: number): Promise<CreateOutcome> {
    this.#expire(now - LINGER_MS);
    if (this.#live(record.userCodeHash, now) !== undefined) return "user_code_taken";
    // A client that keeps starting flows only ever pushes out its own oldest.
    const own = this.#byClient.get(record.clientId);
    if (own !== undefined) {
      for (const hash of own) {
        const other = this.#byDevice.get(hash);
        if (other === undefined || other.expiresAt <= now) own.delete(hash);
      }
      for (const hash of own) {
        if (own.size < this.#maxPerClient) break;
        this.#remove(hash);
      }
    }
    if (this.#byDevice.size >= this.#maxEntries) this.#makeRoom(now);
    if (this.#byDevice.size >= this.#maxEntries)
      throw new StoreFullError({
        store: "the device code store",
        quota: "store",
        held: this.#byDevice.size,
        limit: this.#maxEntries,
      });
    this.#byDevice.set(record.deviceCodeHash, { ...record });
    this.#byUser.set(record.userCodeHash, record.deviceCodeHash);
    this.#count(record);
    this.#expiry.push(record.deviceCodeHash, record.expiresAt);
    // Superseded records leave their entries behind: shed them before they outnumber the live.
    if (this.#expiry.size > 2 * this.#byDevice.size + 64)
      this.#expiry.retain((hash, at) => this.#byDevice.get(hash)?.expiresAt === at);
    return "created";
  }

  async findByUserCode(userCodeHash: string, now: number): Promise<DeviceCodeRecord | undefined> {
    return this.#live(userCodeHash, now);
  }

  async decide(userCodeHash: string, decision: Decision, now: number): Promise<DecideOutcome> {
    const hash = this.#byUser.get(userCodeHash);
    const record = hash === undefined ? undefined : this.#byDevice.get(hash);
    if (record === undefined) return { outcome: "unknown" };
    if (record.expiresAt <= now) return { outcome: "expired" };
    if (record.status !== "pending") return { outcome: "already_decided" };
    const next: DeviceCodeRecord = { ...record, ...decision };
    this.#byDevice.set(record.deviceCodeHash, next);
    return { outcome: "decided", record: next };
  }

  async poll(
    deviceCodeHash: string,
    clientId: string,
    now: number,
    slowDownMs: number,
  ): Promise<PollOutcome> {
    const record = this.#byDevice.get(deviceCodeHash);
    if (record === undefined || record.clientId !== clientId || record.status === "consumed")
      return { outcome: "invalid" };
    if (record.expiresAt <= now) return { outcome: "expired" };
    if (record.lastPolledAt !== undefined && now - record.lastPolledAt < record.intervalMs) {
      const intervalMs = record.intervalMs + slowDownMs;
      this.#byDevice.set(deviceCodeHash, { ...record, intervalMs, lastPolledAt: now });
      return { outcome: "slow_down", intervalMs };
    }
    if (record.status === "approved") {
      const consumed: DeviceCodeRecord = { ...record, status: "consumed", lastPolledAt: now };
      this.#byDevice.set(deviceCodeHash, consumed);
      this.#uncount(consumed);
      this.#consumed.add(deviceCodeHash);
      return { outcome: "approved", record: consumed };
    }
    this.#byDevice.set(deviceCodeHash, { ...record, lastPolledAt: now });
    return { outcome: record.status === "denied" ? "denied" : "pending" };
  }

  async release(deviceCodeHash: string, clientId: string, consumedAt: number): Promise<boolean> {
    const record = this.#byDevice.get(deviceCodeHash);
    if (
      record === undefined ||
      record.clientId !== clientId ||
      record.status !== "consumed" ||
      record.lastPolledAt !== consumedAt
    )
      return false;
    const approved: DeviceCodeRecord = { ...record, status: "approved" };
    this.#byDevice.set(deviceCodeHash, approved);
    this.#consumed.delete(deviceCodeHash);
    this.#count(approved);
    return true;
  }

  /** How many records are held, live or lingering. */
  get size(): number {
    return this.#byDevice.size;
  }

  #live(userCodeHash: string, now: number): DeviceCodeRecord | undefined {
    const hash = this.#byUser.get(userCodeHash);
    const record = hash === undefined ? undefined : this.#byDevice.get(hash);
    if (record === undefined || record.expiresAt <= now) return undefined;
    return record;
  }

  #count(record: DeviceCodeRecord): void {
    const own = this.#byClient.get(record.clientId);
    if (own === undefined) this.#byClient.set(record.clientId, new Set([record.deviceCodeHash]));
    else own.add(record.deviceCodeHash);
  }

  #uncount(record: DeviceCodeRecord): void {
    const own = this.#byClient.get(record.clientId);
    own?.delete(record.deviceCodeHash);
    if (own?.size === 0) this.#byClient.delete(record.clientId);
  }

  #remove(hash: string): void {
    const record = this.#byDevice.get(hash);
    if (record === undefined) return;
    this.#byDevice.delete(hash);
    if (this.#byUser.get(record.userCodeHash) === hash) this.#byUser.delete(record.userCodeHash);
    this.#uncount(record);
    this.#consumed.delete(hash);
  }

  // Drops the records whose code expired at or before `until`.
  #expire(until: number): void {
    this.#expiry.popDue(until, (hash, at) => {
      if (this.#byDevice.get(hash)?.expiresAt === at) this.#remove(hash);
    });
  }

  // When full: ended records go before their lingering time is up, expired ones first.
  #makeRoom(now: number): void {
    this.#expire(now);
    for (const hash of this.#consumed) {
      if (this.#byDevice.size < this.#maxEntries) return;
      this.#remove(hash);
    }
  }
}
