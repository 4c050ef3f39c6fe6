import { StoreFullError } from "../core/errors.ts";
import { ExpiryQueue } from "../core/expiry-queue.ts";
import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";
import {
  REFRESH_QUOTA_KEYS,
  type RefreshQuotaOptions,
  refreshQuotas,
  SPENT_TOKENS_KEPT,
} from "../core/store-quotas.ts";

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
  /** The person whose consent started the family: their quotas count it. */
  readonly approvedBy: string;
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
 * `rotated` (its `next` stored); every other is `reused`. A family remembers
 * its last `SPENT_TOKENS_KEPT` spent tokens until it ends (at its first
 * token's `expiresAt`), so their reuse is seen; an older spent token answers
 * `unknown`. A family ended by `revokeFamily` never rotates again: each of
 * its tokens, current or spent, answers `unknown`.
 *
 * Bounded per person (`RefreshQuotaOptions`), in the same atomic step that
 * starts a family: a new family past `maxFamiliesPerClientAndPerson` ends the
 * oldest live family of that client and person; past `maxFamiliesPerPerson`,
 * the person's oldest ended family goes, else their oldest live one is ended.
 * A family ended so is forgotten whole: its tokens answer `unknown`.
 */
export interface RefreshTokenStore {
  /**
   * Stores the first token of a family, which lives until this token's
   * `expiresAt`, making room within `record.approvedBy`'s quotas as above.
   * Refuses (throws) a token hash or family id already held; a store whose
   * whole capacity is live throws `StoreFullError` (503).
   */
  create(record: RefreshTokenRecord, now: number): Promise<void>;
  /**
   * The record of a token of a live, unrevoked family (current or spent), to
   * build `next` from and check the client against before rotating.
   */
  find(tokenHash: string, now: number): Promise<RefreshTokenRecord | undefined>;
  /**
   * Spends the token whose hash is `tokenHash` (unexpired at `now`) and
   * stores `next` in its place, in one step, forgetting the family's spent
   * tokens beyond `SPENT_TOKENS_KEPT`. `next` must carry the token's
   * `familyId` and `clientId`, else the answer is `unknown` and nothing changes.
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
export interface MemoryRefreshTokenStoreOptions extends RefreshQuotaOptions {
  /**
   * Most entries held. A live family counts what it may come to hold from its
   * start: itself, its current token and `SPENT_TOKENS_KEPT` spent ones (10);
   * an ended one counts 1. So rotations never need room, and when the store
   * is full, only a new family is refused (`StoreFullError`, 503), nothing
   * forgotten. With the per-person quotas at their defaults, no fewer than
   * `maxEntries` ÷ 250 people (400 by default) can fill it.
   *
   * @default 100_000
   */
  readonly maxEntries?: number;
}

/** What a live family may hold: itself, its current token and its kept spent ones. */
const LIVE_FAMILY_ENTRIES = 2 + SPENT_TOKENS_KEPT;

const STORE = "the refresh token store";

interface Family {
  readonly familyId: string;
  readonly clientId: string;
  readonly approvedBy: string;
  readonly expiresAt: number;
  /** The hash of the current token; undefined once revoked. */
  current: string | undefined;
  /** Spent tokens then the current one, oldest first. */
  readonly tokens: string[];
}

/**
 * Process-local refresh tokens for a single instance. Bounded and
 * timer-free: ended families leave on the next call, O(log n) plus their
 * tokens; `create` costs O(`maxFamiliesPerPerson`) more.
 */
export class MemoryRefreshTokenStore implements RefreshTokenStore {
  readonly #tokens = new Map<string, RefreshTokenRecord>();
  readonly #families = new Map<string, Family>();
  // Each person's families, oldest first: what their quotas count.
  readonly #byPerson = new Map<string, Set<Family>>();
  readonly #expiry = new ExpiryQueue<string>();
  readonly #max: number;
  readonly #perPerson: number;
  readonly #perPair: number;
  // Entries the families may come to hold (see `maxEntries`).
  #reserved = 0;

  constructor(options: MemoryRefreshTokenStoreOptions = {}) {
    const where = "MemoryRefreshTokenStore";
    rejectUnknownKeys(where, options, ["maxEntries", ...REFRESH_QUOTA_KEYS]);
    this.#max = positiveInteger(where, "maxEntries", options.maxEntries, 100_000);
    const quotas = refreshQuotas(where, options);
    this.#perPerson = quotas.maxFamiliesPerPerson;
    this.#perPair = quotas.maxFamiliesPerClientAndPerson;
  }

  async create(record: RefreshTokenRecord, now: number): Promise<void> {
    this.#expire(now);
    if (this.#families.has(record.familyId))
      throw new Error("a refresh family with this id is held");
    if (this.#tokens.has(record.tokenHash))
      throw new Error("a refresh token with this hash is held");
    this.#makeRoomFor(record);
    // Forgetting a live token would hide its reuse: refuse the newcomer instead.
    if (this.#reserved + LIVE_FAMILY_ENTRIES > this.#max)
      throw new StoreFullError({
        store: STORE,
        quota: "store",
        held: this.#reserved,
        limit: this.#max,
      });
    const family: Family = {
      familyId: record.familyId,
      clientId: record.clientId,
      approvedBy: record.approvedBy,
      expiresAt: record.expiresAt,
      current: record.tokenHash,
      tokens: [record.tokenHash],
    };
    this.#families.set(record.familyId, family);
    this.#tokens.set(record.tokenHash, freeze(record));
    const own = this.#byPerson.get(record.approvedBy);
    if (own === undefined) this.#byPerson.set(record.approvedBy, new Set([family]));
    else own.add(family);
    this.#reserved += LIVE_FAMILY_ENTRIES;
    this.#expiry.push(record.familyId, record.expiresAt);
    // Families ended for a quota leave their entries behind: shed them before they outnumber the live.
    if (this.#expiry.size > 2 * this.#families.size + 64)
      this.#expiry.retain((id, at) => this.#families.get(id)?.expiresAt === at);
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
    // The oldest spent token makes way: one family's entries stay within what it reserved.
    if (family.tokens.length > SPENT_TOKENS_KEPT)
      this.#tokens.delete(family.tokens.shift() as string);
    this.#tokens.set(next.tokenHash, freeze(next));
    family.tokens.push(next.tokenHash);
    family.current = next.tokenHash;
    return { outcome: "rotated", record };
  }

  async revokeFamily(familyId: string): Promise<void> {
    const family = this.#families.get(familyId);
    if (family === undefined || family.current === undefined) return;
    // The family stays, ended, until it expires: its id cannot start again.
    family.current = undefined;
    for (const hash of family.tokens) this.#tokens.delete(hash);
    family.tokens.length = 0;
    this.#reserved -= LIVE_FAMILY_ENTRIES - 1;
  }

  /** How many entries are held: families plus their tokens. */
  get size(): number {
    return this.#families.size + this.#tokens.size;
  }

  // The person's quotas, before their new family: the pair's oldest live families, then their
  // oldest ended ones, then their oldest live ones go.
  #makeRoomFor(record: RefreshTokenRecord): void {
    const own = this.#byPerson.get(record.approvedBy);
    if (own === undefined) return;
    let pair = 0;
    for (const family of own)
      if (family.clientId === record.clientId && family.current !== undefined) pair++;
    for (const family of own) {
      if (pair < this.#perPair) break;
      if (family.clientId !== record.clientId || family.current === undefined) continue;
      this.#drop(family);
      pair--;
    }
    for (const family of own) {
      if (own.size < this.#perPerson) return;
      if (family.current === undefined) this.#drop(family);
    }
    for (const family of own) {
      if (own.size < this.#perPerson) return;
      this.#drop(family);
    }
  }

  #drop(family: Family): void {
    this.#families.delete(family.familyId);
    for (const hash of family.tokens) this.#tokens.delete(hash);
    this.#reserved -= family.current === undefined ? 1 : LIVE_FAMILY_ENTRIES;
    const own = this.#byPerson.get(family.approvedBy);
    own?.delete(family);
    if (own?.size === 0) this.#byPerson.delete(family.approvedBy);
  }

  #expire(now: number): void {
    this.#expiry.popDue(now, (familyId, at) => {
      const family = this.#families.get(familyId);
      if (family?.expiresAt === at) this.#drop(family);
    });
  }
}

function freeze(record: RefreshTokenRecord): RefreshTokenRecord {
  return Object.freeze({ ...record, scope: Object.freeze([...record.scope]) });
}
