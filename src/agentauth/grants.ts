import { StoreFullError } from "../core/errors.ts";
import { ExpiryQueue } from "../core/expiry-queue.ts";
import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";

export type GrantStatus = "active" | "revoked" | "expired";

/**
 * What one human approved for one agent. A pair (agent, human) has at most one
 * active grant: a new approval by the same human widens and extends it (same
 * id); once it is revoked as a whole or has expired, the next approval makes a
 * new grant.
 */
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

/** Whether a token bound to `jkt` (none: a bearer token) may be minted from `grant`. */
export function keyFits(grant: Grant, jkt: string | undefined): boolean {
  return grant.jkt === undefined || grant.jkt === jkt;
}

/** How many active grants one party may hold, checked in the step that would make another. */
export interface GrantLimits {
  /** Active grants of one human: one per agent they approved. */
  readonly perApprover: number;
  /** Active grants of one agent: one per human who approved it. */
  readonly perPrincipal: number;
}

/** What `GrantStore.approve` did. */
export type GrantApproval =
  /** `grant` was stored as given. */
  | { readonly outcome: "created"; readonly grant: Grant }
  /** The pair's active grant (`previous`) took the approval: `grant` as it is now. */
  | { readonly outcome: "extended"; readonly grant: Grant; readonly previous: Grant }
  /** Nothing changed. */
  | {
      readonly outcome: "refused";
      /**
       * `bound_to_another_key`: the pair's grant is bound to a DPoP key the
       * approval did not prove; `approver_limit` / `principal_limit`: the human
       * or the agent already holds as many active grants as allowed.
       */
      readonly reason: "bound_to_another_key" | "approver_limit" | "principal_limit";
    };

/**
 * Grants. `approve` is the only way one is made. `revoke` is idempotent and
 * permanent: a grant revoked as a whole never becomes active again, and a
 * revoked capability comes back only by a new approval of the same human.
 */
export interface GrantStore {
  /**
   * Records a human's approval of an agent, in one atomic step (racing
   * approvals of one pair end in one grant holding every set approved):
   *
   * - The pair (`grant.principalId`, `grant.approvedBy`) has an active,
   *   unexpired grant: it takes the approval. Its capabilities become its own
   *   followed by those of `grant` it lacked, its `expiresAt` the later of the
   *   two, its id and `createdAt` stay; unbound, it takes `grant.jkt`. Bound to
   *   a key, an approval whose `grant.jkt` is not that key is refused.
   * - Otherwise `grant` is stored as given (`createdAt` is now), unless the
   *   human already holds `limits.perApprover` active grants, or the agent
   *   `limits.perPrincipal` (refused). A `grantId` already held throws. The
   *   human's ended grants (revoked or expired) beyond `limits.perApprover`
   *   may be dropped, oldest first, so what one human leaves behind is bounded.
   */
  approve(grant: Grant, limits: GrantLimits): Promise<GrantApproval>;
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
 * Merges an approval into the pair's active grant, as every store does: what
 * it held, then what it lacked; the later expiry; its key, else the approval's.
 * `undefined` when the grant is bound to a key the approval did not prove.
 */
export function mergeApproval(held: Grant, approved: Grant): Grant | undefined {
  if (held.jkt !== undefined && held.jkt !== approved.jkt) return undefined;
  const jkt = held.jkt ?? approved.jkt;
  const capabilities = [...held.capabilities];
  for (const name of approved.capabilities)
    if (!capabilities.includes(name)) capabilities.push(name);
  return {
    ...held,
    capabilities,
    expiresAt: Math.max(held.expiresAt, approved.expiresAt),
    ...(jkt === undefined ? {} : { jkt }),
  };
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
   * Most grants held; past it expired and revoked ones go first, then a new
   * grant is refused (`StoreFullError`).
   *
   * @default 100_000
   */
  readonly maxEntries?: number;
}

/**
 * Process-local grants: revocation holds only within this process. An
 * approval costs O(g + log n), g the grants its human and its agent hold; a
 * list, O(k log k) in the grants it answers.
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

  // One synchronous step from the first read to the last write: nothing interleaves.
  async approve(grant: Grant, limits: GrantLimits): Promise<GrantApproval> {
    const now = grant.createdAt;
    const live = (id: string) => {
      const held = this.#grants.get(id);
      return held !== undefined && effectiveStatus(held, now) === "active" ? held : undefined;
    };
    const mine = [...(this.#byApprover.get(grant.approvedBy) ?? [])];
    const pair = mine
      .map(live)
      .find((held) => held !== undefined && held.principalId === grant.principalId);
    if (pair !== undefined) {
      const merged = mergeApproval(pair, grant);
      if (merged === undefined) return { outcome: "refused", reason: "bound_to_another_key" };
      const next = freeze(merged);
      this.#grants.set(pair.grantId, next);
      if (next.expiresAt !== pair.expiresAt) this.#expiry.push(pair.grantId, next.expiresAt);
      return { outcome: "extended", grant: next, previous: pair };
    }
    if (this.#grants.has(grant.grantId)) throw new Error("a grant with this id exists");
    if (mine.filter((id) => live(id) !== undefined).length >= limits.perApprover)
      return { outcome: "refused", reason: "approver_limit" };
    const theirs = this.#byPrincipal.get(grant.principalId) ?? [];
    let held = 0;
    for (const id of theirs) if (live(id) !== undefined) held++;
    if (held >= limits.perPrincipal) return { outcome: "refused", reason: "principal_limit" };
    // What this human left behind (ended grants) is bounded: the oldest go first.
    const ended = mine.filter((id) => live(id) === undefined);
    for (const id of ended.slice(0, Math.max(0, ended.length - limits.perApprover)))
      this.#remove(id);
    if (this.#grants.size >= this.#max) this.#sweep(now);
    if (this.#grants.size >= this.#max)
      throw new StoreFullError({
        store: "the grant store",
        quota: "store",
        held: this.#grants.size,
        limit: this.#max,
      });
    const stored = freeze(grant);
    this.#grants.set(grant.grantId, stored);
    add(this.#byPrincipal, grant.principalId, grant.grantId);
    add(this.#byApprover, grant.approvedBy, grant.grantId);
    this.#expiry.push(grant.grantId, grant.expiresAt);
    if (grant.status !== "active") this.#revoked.add(grant.grantId);
    // Entries of grants that left or were extended stay queued: shed them before they outnumber the held.
    if (this.#expiry.size > 2 * this.#grants.size + 64)
      this.#expiry.retain((id, at) => this.#grants.get(id)?.expiresAt === at);
    return { outcome: "created", grant: stored };
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
    this.#expiry.popDue(now, (id, at) => {
      // The id may since name a newer grant, or one extended past `at`.
      const held = this.#grants.get(id);
      if (held !== undefined && held.expiresAt === at && at <= now) this.#remove(id);
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
