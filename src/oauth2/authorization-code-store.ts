import { StoreFullError } from "../core/errors.ts";
import { ExpiryQueue } from "../core/expiry-queue.ts";
import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";
import { CODE_QUOTA_KEYS, type CodeQuotaOptions, codeQuotas } from "../core/store-quotas.ts";

/**
 * An authorization code as stored (RFC 6749 §4.1, RFC 7636): only its hash
 * is kept, with everything its redemption must match.
 */
export interface AuthorizationCodeRecord {
  /** SHA-256 of the code, base64url: the code itself is never stored. */
  readonly codeHash: string;
  readonly clientId: string;
  /** The `redirect_uri` of the authorization request, exactly as sent. */
  readonly redirectUri: string;
  /** The PKCE S256 challenge the verifier must match. */
  readonly codeChallenge: string;
  /** RFC 8707 `resource` the token will be for. */
  readonly resource: string;
  readonly scope: readonly string[];
  /** The grant the human's approval made; a second redemption revokes it. */
  readonly grantId: string;
  /** Who approved. */
  readonly approvedBy: string;
  /** Milliseconds since the epoch. */
  readonly expiresAt: number;
}

/** What a redemption found. */
export type CodeRedemption =
  /** First redemption: the record, now spent. */
  | { readonly outcome: "redeemed"; readonly record: AuthorizationCodeRecord }
  /** Redeemed before (RFC 6749 §4.1.2: revoke what the first redemption issued). */
  | { readonly outcome: "reused"; readonly record: AuthorizationCodeRecord }
  /** Unknown, or expired and forgotten. */
  | { readonly outcome: "unknown" };

/**
 * Authorization codes. `redeem` is atomic: of any number of concurrent
 * redemptions of one code, in one process or across processes sharing the
 * store, exactly one is `redeemed`; the rest are `reused`. A spent code is
 * remembered until its expiry, so a replay within its life is seen, unless
 * a new consent of the same client by the same person replaced it. The
 * store does not compare the client or the redirect URI: the caller does,
 * after `redeemed`, and a code redeemed by the wrong client is spent all the
 * same (the real client's redemption then finds it `reused`).
 *
 * Bounded per person (`CodeQuotaOptions`): one code per client and person,
 * at most `maxCodesPerPerson` per person, both enforced in the same atomic
 * step that stores the code, however many consents are in flight.
 */
export interface AuthorizationCodeStore {
  /**
   * Stores a new code, kept until its `expiresAt`, in one atomic step: the
   * code `record.approvedBy` holds for `record.clientId`, spent or not, is
   * dropped (it is `unknown` from then on); then a person holding
   * `maxCodesPerPerson` unexpired codes is refused, as is a store full of
   * live codes, with `StoreFullError` (503), nothing dropped. Refuses
   * (throws) a hash already held.
   */
  create(record: AuthorizationCodeRecord, now: number): Promise<void>;
  /** Spends the code whose hash is `codeHash`, if it is known and unexpired at `now`. */
  redeem(codeHash: string, now: number): Promise<CodeRedemption>;
}

/**
 * Options of `MemoryAuthorizationCodeStore`.
 *
 * @example
 * ```ts
 * import { MemoryAuthorizationCodeStore } from "portcullis/oauth2";
 *
 * const codes = new MemoryAuthorizationCodeStore({ maxEntries: 50_000 });
 * ```
 */
export interface MemoryAuthorizationCodeStoreOptions extends CodeQuotaOptions {
  /**
   * Most codes held, spent ones included (each is kept until it expires, 60 s
   * for the authorization endpoint's). When every one is live, `create`
   * throws `StoreFullError` (503) rather than forget one: the default carries
   * about 160 approvals a second, and with `maxCodesPerPerson` at its default
   * (10) no fewer than 1 000 people can fill it.
   *
   * @default 10_000
   */
  readonly maxEntries?: number;
}

interface HeldCode {
  readonly record: AuthorizationCodeRecord;
  spent: boolean;
}

const STORE = "the authorization code store";

/**
 * Process-local authorization codes for a single instance. Bounded and
 * timer-free: expired codes leave on the next call, O(log n) each.
 */
export class MemoryAuthorizationCodeStore implements AuthorizationCodeStore {
  readonly #codes = new Map<string, HeldCode>();
  // Each person's codes by client: one per pair, and what the person's quota counts.
  readonly #byPerson = new Map<string, Map<string, string>>();
  readonly #expiry = new ExpiryQueue<string>();
  readonly #max: number;
  readonly #perPerson: number;

  constructor(options: MemoryAuthorizationCodeStoreOptions = {}) {
    const where = "MemoryAuthorizationCodeStore";
    rejectUnknownKeys(where, options, ["maxEntries", ...CODE_QUOTA_KEYS]);
    this.#max = positiveInteger(where, "maxEntries", options.maxEntries, 10_000);
    this.#perPerson = codeQuotas(where, options).maxCodesPerPerson;
  }

  async create(record: AuthorizationCodeRecord, now: number): Promise<void> {
    this.#expire(now);
    if (this.#codes.has(record.codeHash))
      throw new Error("an authorization code with this hash is held");
    // A new consent of the pair replaces what the earlier one made.
    const earlier = this.#byPerson.get(record.approvedBy)?.get(record.clientId);
    if (earlier !== undefined) this.#remove(earlier);
    const own = this.#byPerson.get(record.approvedBy);
    // Forgetting a live code would let a spent one be redeemed again: refuse the newcomer.
    if (own !== undefined && own.size >= this.#perPerson)
      throw new StoreFullError({
        store: STORE,
        quota: "person",
        held: own.size,
        limit: this.#perPerson,
      });
    if (this.#codes.size >= this.#max)
      throw new StoreFullError({
        store: STORE,
        quota: "store",
        held: this.#codes.size,
        limit: this.#max,
      });
    this.#codes.set(record.codeHash, { record: freeze(record), spent: false });
    if (own === undefined)
      this.#byPerson.set(record.approvedBy, new Map([[record.clientId, record.codeHash]]));
    else own.set(record.clientId, record.codeHash);
    this.#expiry.push(record.codeHash, record.expiresAt);
    // Replaced codes leave their entries behind: shed them before they outnumber the live.
    if (this.#expiry.size > 2 * this.#codes.size + 64)
      this.#expiry.retain((hash, at) => this.#codes.get(hash)?.record.expiresAt === at);
  }

  async redeem(codeHash: string, now: number): Promise<CodeRedemption> {
    this.#expire(now);
    const held = this.#codes.get(codeHash);
    if (held === undefined || held.record.expiresAt <= now) return { outcome: "unknown" };
    if (held.spent) return { outcome: "reused", record: held.record };
    held.spent = true;
    return { outcome: "redeemed", record: held.record };
  }

  /** How many codes are held, spent ones included. */
  get size(): number {
    return this.#codes.size;
  }

  #expire(now: number): void {
    this.#expiry.popDue(now, (hash, at) => {
      if (this.#codes.get(hash)?.record.expiresAt === at) this.#remove(hash);
    });
  }

  #remove(hash: string): void {
    const held = this.#codes.get(hash);
    if (held === undefined) return;
    this.#codes.delete(hash);
    const { approvedBy, clientId } = held.record;
    const own = this.#byPerson.get(approvedBy);
    if (own?.get(clientId) === hash) own.delete(clientId);
    if (own?.size === 0) this.#byPerson.delete(approvedBy);
  }
}

function freeze(record: AuthorizationCodeRecord): AuthorizationCodeRecord {
  return Object.freeze({ ...record, scope: Object.freeze([...record.scope]) });
}
