import { StoreUnavailableError } from "../core/errors.ts";
import { ExpiryQueue } from "../core/expiry-queue.ts";
import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";

/**
 * A refresh token as stored: only its hash, with the grant it refreshes and
 * what it may mint. Tokens rotate: each use replaces the token with a new one
 * of the same family; a token used twice means one of the two users stole it.
 */
export interface RefreshTokenRecord {
  /** SHA-256 of the token, base64url: the token itself is never stored. */
  readonly tokenHash: string;
  /** Every rotation of one approval shares it; reuse revokes the whole family's grant. */
  readonly familyId: string;
  readonly clientId: string;
  readonly grantId: string;
  /** The most a refresh may ask for (never wider than the grant at the time of use). */
  readonly scope: readonly string[];
  /** RFC 8707 `resource` the access tokens are for. */
  readonly resource: string;
  /**
   * The RFC 7638 thumbprint of the DPoP key the family is bound to, when the
   * code was redeemed with a proof: a public client's refresh token is then
   * refused without a proof by that key (RFC 9449 §5).
   */
  readonly jkt?: string;
  /**
   * Milliseconds since the epoch. The family ends at its first token's
   * `expiresAt`: a later token expiring after it is refused from then on.
   */
  readonly expiresAt: number;
}

/** What a rotation found. */
export type RefreshRotation =
  /** The token was current: it is spent, and `next` is now the family's token. */
  | { readonly outcome: "rotated"; readonly record: RefreshTokenRecord }
  /** The token was spent before: revoke the family's grant (RFC 9700 §4.14.2). */
  | { readonly outcome: "reused"; readonly record: RefreshTokenRecord }
  /** Unknown, expired, its family was ended, or `next` is not of its family and client. */
  | { readonly outcome: "unknown" };

/**
 * Refresh tokens. `rotate` is atomic: of concurrent rotations of one token,
 * in one process or across processes sharing the store, exactly one is
 * `rotated` (its `next` stored); every other is `reused`. A spent token is
 * remembered until its family's expiry (its first token's `expiresAt`), so
 * reuse is seen (the memory store keeps a family's last `MEMORY_SPENT_KEPT`
 * spent tokens, and answers an older one `unknown`). A family ended by `revokeFamily` never rotates
 * again: each of its tokens, current or spent, answers `unknown`.
 */
export interface RefreshTokenStore {
  /**
   * Stores the first token of a family, which lives until this token's
   * `expiresAt`. Refuses (throws) a token hash or family id already held; a
   * store full of live tokens throws `StoreUnavailableError` (503).
   */
  create(record: RefreshTokenRecord, now: number): Promise<void>;
  /**
   * The record of a token of a live, unrevoked family (current or spent), to
   * build `next` from and check the client against before rotating.
   */
  find(tokenHash: string, now: number): Promise<RefreshTokenRecord | undefined>;
  /**
   * Spends the token whose hash is `tokenHash` (unexpired at `now`) and
   * stores `next` in its place, in one step. `next` must carry the token's
   * `familyId` and `clientId`, else the answer is `unknown` and nothing changes.
   * A full store throws `StoreUnavailableError` and spends nothing.
   */
  rotate(tokenHash: string, next: RefreshTokenRecord, now: number): Promise<RefreshRotation>;
  /** Ends a family: its tokens are refused from now on. Idempotent. */
  revokeFamily(familyId: string): Promise<void>;
}

/**
 * Options of `MemoryRefreshTokenStore`.
 *
 * @example
 * ```ts
 * import { MemoryRefreshTokenStore } from "portcullis/oauth2";
 *
 * const refreshTokens = new MemoryRefreshTokenStore({ maxEntries: 200_000 });
 * ```
 */
export interface MemoryRefreshTokenStoreOptions {
  /**
   * Most entries held: each family counts one, and each of its tokens one:
   * the current token and the last `MEMORY_SPENT_KEPT` spent ones (reuse of
   * those is seen; an older one is only refused, as unknown). A family holds
   * at most that many whatever its client does, so a client refreshing in a
   * loop cannot fill the store. When every entry is live, `create` and
   * `rotate` throw `StoreUnavailableError` (503) rather than forget one.
   *
   * @default 100_000
   */
  readonly maxEntries?: number;
}

/**
 * Spent tokens a memory family remembers, to see their reuse: a thief's copy
 * is presented within a few rotations of the theft or the client's own next
 * refresh reveals it, while an unbounded history would let one client refreshing
 * in a loop fill the store for everyone.
 */
export const MEMORY_SPENT_KEPT = 8;

interface Family {
  readonly familyId: string;
  readonly expiresAt: number;
  /** The hash of the current token; undefined once revoked. */
  current: string | undefined;
  readonly tokens: string[];
}

/**
 * Process-local refresh tokens for a single instance. Bounded and
 * timer-free: ended families leave on the next call, O(log n) plus their tokens.
 */
export class MemoryRefreshTokenStore implements RefreshTokenStore {
  readonly #tokens = new Map<string, RefreshTokenRecord>();
  readonly #families = new Map<string, Family>();
  readonly #expiry = new ExpiryQueue<string>();
  readonly #max: number;

  constructor(options: MemoryRefreshTokenStoreOptions = {}) {
    const where = "MemoryRefreshTokenStore";
    rejectUnknownKeys(where, options, ["maxEntries"]);
    this.#max = positiveInteger(where, "maxEntries", options.maxEntries, 100_000);
  }

  async create(record: RefreshTokenRecord, now: number): Promise<void> {
    this.#expire(now);
    if (this.#families.has(record.familyId))
      throw new Error("a refresh family with this id is held");
    if (this.#tokens.has(record.tokenHash))
      throw new Error("a refresh token with this hash is held");
    this.#makeRoom(2);
    const family: Family = {
      familyId: record.familyId,
      expiresAt: record.expiresAt,
      current: record.tokenHash,
      tokens: [record.tokenHash],
    };
    this.#families.set(record.familyId, family);
    this.#tokens.set(record.tokenHash, freeze(record));
    this.#expiry.push(record.familyId, record.expiresAt);
  }

  async find(tokenHash: string, now: number): Promise<RefreshTokenRecord | undefined> {
    this.#expire(now);
    const record = this.#tokens.get(tokenHash);
    const family = record === undefined ? undefined : this.#families.get(record.familyId);
    if (family === undefined || family.current === undefined || family.expiresAt <= now)
      return undefined;
    return record;
  }

  async rotate(tokenHash: string, next: RefreshTokenRecord, now: number): Promise<RefreshRotation> {
    const record = await this.find(tokenHash, now);
    const family = record === undefined ? undefined : this.#families.get(record.familyId);
    if (record === undefined || family === undefined) return { outcome: "unknown" };
    if (record.familyId !== next.familyId || record.clientId !== next.clientId)
      return { outcome: "unknown" };
    if (family.current !== tokenHash) return { outcome: "reused", record };
    if (record.expiresAt <= now) return { outcome: "unknown" };
    if (this.#tokens.has(next.tokenHash)) throw new Error("a refresh token with this hash is held");
    // The oldest spent token makes way first: one family's entries stay bounded.
    if (family.tokens.length > MEMORY_SPENT_KEPT)
      this.#tokens.delete(family.tokens.shift() as string);
    else this.#makeRoom(1);
    this.#tokens.set(next.tokenHash, freeze(next));
    family.tokens.push(next.tokenHash);
    family.current = next.tokenHash;
    return { outcome: "rotated", record };
  }

  async revokeFamily(familyId: string): Promise<void> {
    const family = this.#families.get(familyId);
    if (family === undefined) return;
    // The family stays, ended, until it expires: its id cannot start again.
    family.current = undefined;
    for (const hash of family.tokens) this.#tokens.delete(hash);
    family.tokens.length = 0;
  }

  /** How many entries are held: families plus their tokens. */
  get size(): number {
    return this.#families.size + this.#tokens.size;
  }

  // Forgetting a live token would hide its reuse: refuse the newcomer instead.
  #makeRoom(needed: number): void {
    if (this.size + needed > this.#max)
      throw new StoreUnavailableError("the refresh token store is full");
  }

  #expire(now: number): void {
    this.#expiry.popDue(now, (familyId) => {
      const family = this.#families.get(familyId);
      if (family === undefined) return;
      this.#families.delete(familyId);
      for (const hash of family.tokens) this.#tokens.delete(hash);
    });
  }
}

function freeze(record: RefreshTokenRecord): RefreshTokenRecord {
  return Object.freeze({ ...record, scope: Object.freeze([...record.scope]) });
}
