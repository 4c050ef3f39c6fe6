import { StoreUnavailableError } from "../core/errors.ts";
import { ExpiryQueue } from "../core/expiry-queue.ts";
import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";

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
 * remembered until its expiry, so a replay within its life is seen. The
 * store does not compare the client or the redirect URI: the caller does,
 * after `redeemed`, and a code redeemed by the wrong client is spent all the
 * same (the real client's redemption then finds it `reused`).
 */
export interface AuthorizationCodeStore {
  /**
   * Stores a new code, kept until its `expiresAt`. Refuses (throws) a hash
   * already held; a store that is full of live codes throws
   * `StoreUnavailableError` (503) rather than forget one.
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
export interface MemoryAuthorizationCodeStoreOptions {
  /**
   * Most codes held, spent ones included (each is kept until it expires, 60 s
   * for the authorization endpoint's). When every one is live, `create`
   * throws `StoreUnavailableError` (503) rather than forget one: the default
   * carries about 160 approvals a second.
   *
   * @default 10_000
   */
  readonly maxEntries?: number;
}

interface HeldCode {
  readonly record: AuthorizationCodeRecord;
  spent: boolean;
}

/**
 * Process-local authorization codes for a single instance. Bounded and
 * timer-free: expired codes leave on the next call, O(log n) each.
 */
export class MemoryAuthorizationCodeStore implements AuthorizationCodeStore {
  readonly #codes = new Map<string, HeldCode>();
  readonly #expiry = new ExpiryQueue<string>();
  readonly #max: number;

  constructor(options: MemoryAuthorizationCodeStoreOptions = {}) {
    const where = "MemoryAuthorizationCodeStore";
    rejectUnknownKeys(where, options, ["maxEntries"]);
    this.#max = positiveInteger(where, "maxEntries", options.maxEntries, 10_000);
  }

  async create(record: AuthorizationCodeRecord, now: number): Promise<void> {
    this.#expire(now);
    if (this.#codes.has(record.codeHash))
      throw new Error("an authorization code with this hash is held");
    // Forgetting a live code would let a spent one be redeemed again: refuse the newcomer.
    if (this.#codes.size >= this.#max)
      throw new StoreUnavailableError("the authorization code store is full");
    this.#codes.set(record.codeHash, { record: freeze(record), spent: false });
    this.#expiry.push(record.codeHash, record.expiresAt);
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
      if (this.#codes.get(hash)?.record.expiresAt === at) this.#codes.delete(hash);
    });
  }
}

function freeze(record: AuthorizationCodeRecord): AuthorizationCodeRecord {
  return Object.freeze({ ...record, scope: Object.freeze([...record.scope]) });
}
