import { StoreFullError } from "../core/errors.ts";
import { ExpiryQueue } from "../core/expiry-queue.ts";
import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";

export type GrantStatus = "active" | "revoked" | "expired";

/** What a human approved for one agent. Re-approval makes a new grant. */
export interface Grant {
  readonly grantId: string;
  /** The agent's principal id (client id or API key id). */
  readonly principalId: string;
  readonly status: GrantStatus;
  /** The capabilities still granted. */
  readonly capabilities: readonly string[];
  /** The human who approved. */
  readonly approvedBy: string;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  readonly expiresAt: number;
  /** When it was revoked as a whole, if it was. */
  readonly revokedAt?: number;
  /**
   * The RFC 7638 thumbprint of the DPoP key the approval poll proved: every
   * token of this grant is bound to it, and refreshes must prove it.
   */
  readonly jkt?: string;
}

/** A grant as JSON: the field names of the wire (snake_case, times in seconds). */
export function grantToJson(grant: Grant, now: number): Record<string, unknown> {
  return {
    grant_id: grant.grantId,
    principal_id: grant.principalId,
    status: effectiveStatus(grant, now),
    capabilities: grant.capabilities,
    approved_by: grant.approvedBy,
    created_at: Math.floor(grant.createdAt / 1000),
    expires_at: Math.floor(grant.expiresAt / 1000),
  };
}

/** `expired` once `expiresAt` has passed, whatever was stored. */
export function effectiveStatus(grant: Grant, now: number): GrantStatus {
  if (grant.status === "active" && grant.expiresAt <= now) return "expired";
  return grant.status;
}

/**
 * Grants. `revoke` is idempotent and permanent: a revoked capability never
 * comes back to that grant, and a grant with none left is revoked.
 */
export interface GrantStore {
  create(grant: Grant): Promise<void>;
  get(grantId: string): Promise<Grant | undefined>;
  /** Every grant of an agent, newest first. */
  listByPrincipal(principalId: string): Promise<readonly Grant[]>;
  /** Every grant one human approved, newest first: "agents I have approved". */
  listByApprover(approvedBy: string): Promise<readonly Grant[]>;
  /**
   * Revokes the whole grant (`capabilities` undefined) or some of its
   * capabilities; answers the grant as it is afterwards, `undefined` if unknown.
   */
  revoke(
    grantId: string,
    capabilities: readonly string[] | undefined,
    now: number,
  ): Promise<Grant | undefined>;
}

/**
 * Options of `MemoryGrantStore`.
 *
 * @example
 * ```ts
 * import { agentAuth, MemoryGrantStore } from "portcullis/agentauth";
 *
 * const agents = await agentAuth({
 *   issuer,
 *   clients,
 *   capabilities,
 *   stores: { grants: new MemoryGrantStore({ maxEntries: 10_000 }) },
 * });
 * ```
 */
export interface MemoryGrantStoreOptions {
  /**
   * Most grants held; past it expired and revoked ones go first, then `create` fails.
   *
   * @default 100_000
   */
  readonly maxEntries?: number;
}

/**
 * Process-local grants: revocation holds only within this process. A call
 * costs O(log n) in the grants held; a list, O(k log k) in the grants it answers.
 */
export class MemoryGrantStore implements GrantStore {
  readonly #grants = new Map<string, Grant>();
  // Each agent's and each approver's grant ids, in creation order.
  readonly #byPrincipal = new Map<string, Set<string>>();
  readonly #byApprover = new Map<string, Set<string>>();
  // What a full store may drop: grants by expiry, and the revoked.
  readonly #expiry = new ExpiryQueue<string>();
  readonly #revoked = new Set<string>();
  readonly #max: number;

  constructor(options: MemoryGrantStoreOptions = {}) {
    rejectUnknownKeys("MemoryGrantStore", options, ["maxEntries"]);
    this.#max = positiveInteger("MemoryGrantStore", "maxEntries", options.maxEntries, 100_000);
  }

  async create(grant: Grant): Promise<void> {
    if (this.#grants.has(grant.grantId)) throw new Error("a grant with this id exists");
    if (this.#grants.size >= this.#max) this.#sweep(grant.createdAt);
    if (this.#grants.size >= this.#max)
      throw new StoreFullError({
        store: "the grant store",
        quota: "store",
        held: this.#grants.size,
        limit: this.#max,
      });
    this.#grants.set(grant.grantId, freeze(grant));
    add(this.#byPrincipal, grant.principalId, grant.grantId);
    add(this.#byApprover, grant.approvedBy, grant.grantId);
    this.#expiry.push(grant.grantId, grant.expiresAt);
    if (grant.status !== "active") this.#revoked.add(grant.grantId);
    // Revoked grants that left keep their entries until they expire: shed them before they outnumber the held.
    if (this.#expiry.size > 2 * this.#grants.size + 64)
      this.#expiry.retain((id, at) => this.#grants.get(id)?.expiresAt === at);
  }

  async get(grantId: string): Promise<Grant | undefined> {
    return this.#grants.get(grantId);
  }

  async listByPrincipal(principalId: string): Promise<readonly Grant[]> {
    return this.#list(this.#byPrincipal.get(principalId));
  }

  async listByApprover(approvedBy: string): Promise<readonly Grant[]> {
    return this.#list(this.#byApprover.get(approvedBy));
  }

  async revoke(
    grantId: string,
    capabilities: readonly string[] | undefined,
    now: number,
  ): Promise<Grant | undefined> {
    const grant = this.#grants.get(grantId);
    if (grant === undefined) return undefined;
    const left =
      capabilities === undefined
        ? []
        : grant.capabilities.filter((name) => !capabilities.includes(name));
    const revoked = left.length === 0;
    const next = freeze({
      ...grant,
      capabilities: left,
      status: revoked ? "revoked" : grant.status,
      ...(revoked && grant.revokedAt === undefined ? { revokedAt: now } : {}),
    });
    this.#grants.set(grantId, next);
    if (revoked) this.#revoked.add(grantId);
    return next;
  }

  #list(ids: ReadonlySet<string> | undefined): readonly Grant[] {
    if (ids === undefined) return [];
    return [...ids]
      .map((id) => this.#grants.get(id) as Grant)
      .sort((a, b) => b.createdAt - a.createdAt);
  }

  // Ended grants (expired, or revoked) make room; active ones never do.
  #sweep(now: number): void {
    this.#expiry.popDue(now, (id) => {
      // The id may since name a newer grant.
      if ((this.#grants.get(id)?.expiresAt ?? now) <= now) this.#remove(id);
    });
    for (const id of this.#revoked) this.#remove(id);
  }

  #remove(id: string): void {
    const grant = this.#grants.get(id);
    if (grant === undefined) return;
    this.#grants.delete(id);
    this.#revoked.delete(id);
    drop(this.#byPrincipal, grant.principalId, id);
    drop(this.#byApprover, grant.approvedBy, id);
  }
}

function add(index: Map<string, Set<string>>, key: string, id: string): void {
  const ids = index.get(key);
  if (ids === undefined) index.set(key, new Set([id]));
  else ids.add(id);
}

function drop(index: Map<string, Set<string>>, key: string, id: string): void {
  const ids = index.get(key);
  ids?.delete(id);
  if (ids?.size === 0) index.delete(key);
}

function freeze(grant: Grant): Grant {
  return Object.freeze({ ...grant, capabilities: Object.freeze([...grant.capabilities]) });
}
