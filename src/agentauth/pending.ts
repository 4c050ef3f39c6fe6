import { StoreFullError } from "../core/errors.ts";
import { ExpiryQueue } from "../core/expiry-queue.ts";
import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";

/** What an agent asked for, between `begin` and the first successful poll. */
export interface PendingRequest {
  readonly principalId: string;
  /** SHA-256 of the normalized user code, base64url (see `userCodeHash`). */
  readonly userCodeHash: string;
  readonly capabilities: readonly string[];
  /** Shown to the approving human. */
  readonly agentName?: string;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  readonly expiresAt: number;
  /**
   * The id the grant gets when this request is approved, chosen with the
   * request: an issue retried after a failure finds the grant an earlier
   * attempt made rather than making a second one.
   */
  readonly grantId?: string;
}

/**
 * Pending requests, indexed by user code and by agent. A new `create` for an
 * agent supersedes its earlier request: the old user code resolves no more.
 */
export interface PendingRequestStore {
  create(request: PendingRequest): Promise<void>;
  getByUserCode(userCodeHash: string, now: number): Promise<PendingRequest | undefined>;
  getByPrincipal(principalId: string, now: number): Promise<PendingRequest | undefined>;
  /** Removes the agent's request if it is still the one with this user code. */
  delete(principalId: string, userCodeHash: string): Promise<void>;
}

/**
 * Options of `MemoryPendingRequestStore`.
 *
 * @example
 * ```ts
 * import { agentAuth, MemoryPendingRequestStore } from "portcullis/agentauth";
 *
 * const agents = await agentAuth({
 *   issuer,
 *   clients,
 *   capabilities,
 *   stores: { pending: new MemoryPendingRequestStore({ maxEntries: 1000 }) },
 * });
 * ```
 */
export interface MemoryPendingRequestStoreOptions {
  /**
   * Most requests held; when full of live ones, `create` fails.
   *
   * @default 10_000
   */
  readonly maxEntries?: number;
}

/** Process-local pending requests, one per agent. Bounded, timer-free; O(log n) a call. */
export class MemoryPendingRequestStore implements PendingRequestStore {
  readonly #byPrincipal = new Map<string, PendingRequest>();
  readonly #byUserCode = new Map<string, string>();
  // Each request's agent by expiry, so a full store finds the expired without a scan.
  readonly #expiry = new ExpiryQueue<string>();
  readonly #max: number;

  constructor(options: MemoryPendingRequestStoreOptions = {}) {
    rejectUnknownKeys("MemoryPendingRequestStore", options, ["maxEntries"]);
    this.#max = positiveInteger(
      "MemoryPendingRequestStore",
      "maxEntries",
      options.maxEntries,
      10_000,
    );
  }

  async create(request: PendingRequest): Promise<void> {
    const earlier = this.#byPrincipal.get(request.principalId);
    if (earlier !== undefined) this.#remove(earlier);
    if (this.#byPrincipal.size >= this.#max)
      this.#expiry.popDue(request.createdAt, (principal, at) => {
        const pending = this.#byPrincipal.get(principal);
        if (pending?.expiresAt === at) this.#remove(pending);
      });
    if (this.#byPrincipal.size >= this.#max)
      throw new StoreFullError({
        store: "the pending request store",
        quota: "store",
        held: this.#byPrincipal.size,
        limit: this.#max,
      });
    const stored = Object.freeze({
      ...request,
      capabilities: Object.freeze([...request.capabilities]),
    });
    this.#byPrincipal.set(request.principalId, stored);
    this.#byUserCode.set(request.userCodeHash, request.principalId);
    this.#expiry.push(request.principalId, request.expiresAt);
    // Superseded and deleted requests leave their entries behind: shed them before they outnumber the live.
    if (this.#expiry.size > 2 * this.#byPrincipal.size + 64)
      this.#expiry.retain((principal, at) => this.#byPrincipal.get(principal)?.expiresAt === at);
  }

  async getByUserCode(userCodeHash: string, now: number): Promise<PendingRequest | undefined> {
    const principal = this.#byUserCode.get(userCodeHash);
    return principal === undefined ? undefined : this.getByPrincipal(principal, now);
  }

  async getByPrincipal(principalId: string, now: number): Promise<PendingRequest | undefined> {
    const pending = this.#byPrincipal.get(principalId);
    return pending === undefined || pending.expiresAt <= now ? undefined : pending;
  }

  async delete(principalId: string, userCodeHash: string): Promise<void> {
    const pending = this.#byPrincipal.get(principalId);
    if (pending?.userCodeHash === userCodeHash) this.#remove(pending);
  }

  #remove(pending: PendingRequest): void {
    this.#byPrincipal.delete(pending.principalId);
    if (this.#byUserCode.get(pending.userCodeHash) === pending.principalId)
      this.#byUserCode.delete(pending.userCodeHash);
  }
}
