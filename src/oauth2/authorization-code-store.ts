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
 * remembered until its expiry, so a replay within its life is seen.
 */
export interface AuthorizationCodeStore {
  /** Stores a new code; refuses (throws) a hash already present. */
  create(record: AuthorizationCodeRecord): Promise<void>;
  /** Spends the code whose hash is `codeHash`, if it is known and unexpired at `now`. */
  redeem(codeHash: string, now: number): Promise<CodeRedemption>;
}
