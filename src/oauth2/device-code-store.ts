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
  /** Inserts a pending record unless its user code is held by a live one or the store is full. */
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
 *   store: new MemoryDeviceCodeStore({ maxEntries: 1000, maxPendingPerClient: 2 }),
 * });
 * ```
 */
export interface MemoryDeviceCodeStoreOptions {
  /**
   * Most records held; past it `create` answers `full` rather than drop a live one.
   *
   * @default 10_000
   */
  readonly maxEntries?: number;
  /**
   * Most live pending records per client; a new one supersedes that client's oldest.
   *
   * @default 5
   */
  readonly maxPendingPerClient?: number;
}

// An expired or finished record is kept this long, so a late poll still learns why.
const LINGER_MS = 10 * 60_000;

/** Process-local device authorizations for a single instance. Bounded, timer-free. */
export class MemoryDeviceCodeStore implements DeviceCodeStore {
  readonly #byDevice = new Map<string, DeviceCodeRecord>();
  readonly #byUser = new Map<string, string>();
  readonly #byClient = new Map<string, string[]>();
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
      5,
    );
  }

  async create(record: DeviceCodeRecord, now: number): Promise<CreateOutcome> {
    const holder = this.#live(record.userCodeHash, now);
    if (holder !== undefined) return "user_code_taken";
    // A client that keeps starting flows only ever pushes out its own oldest.
    const pending = (this.#byClient.get(record.clientId) ?? [])
      .map((hash) => this.#byDevice.get(hash))
      .filter(
        (other) => other !== undefined && other.status === "pending" && other.expiresAt > now,
      );
    while (pending.length >= this.#maxPerClient) this.#remove(pending.shift() as DeviceCodeRecord);
    if (this.#byDevice.size >= this.#maxEntries) this.#sweep(now);
    if (this.#byDevice.size >= this.#maxEntries) return "full";
    this.#byDevice.set(record.deviceCodeHash, { ...record });
    this.#byUser.set(record.userCodeHash, record.deviceCodeHash);
    const own = this.#byClient.get(record.clientId);
    if (own === undefined) this.#byClient.set(record.clientId, [record.deviceCodeHash]);
    else own.push(record.deviceCodeHash);
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
    this.#byDevice.set(deviceCodeHash, { ...record, status: "approved" });
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

  #remove(record: DeviceCodeRecord): void {
    this.#byDevice.delete(record.deviceCodeHash);
    if (this.#byUser.get(record.userCodeHash) === record.deviceCodeHash)
      this.#byUser.delete(record.userCodeHash);
    const own = this.#byClient.get(record.clientId);
    const at = own?.indexOf(record.deviceCodeHash) ?? -1;
    if (own !== undefined && at >= 0) own.splice(at, 1);
    if (own?.length === 0) this.#byClient.delete(record.clientId);
  }

  // Drops records that are long expired, then finished ones past their expiry.
  #sweep(now: number): void {
    for (const record of [...this.#byDevice.values()]) {
      if (record.expiresAt + LINGER_MS <= now) this.#remove(record);
    }
    if (this.#byDevice.size < this.#maxEntries) return;
    for (const record of [...this.#byDevice.values()]) {
      if (record.expiresAt <= now || record.status === "consumed") this.#remove(record);
    }
  }
}
