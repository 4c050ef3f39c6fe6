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
  /** Milliseconds since the epoch. */
  readonly expiresAt: number;
}

/** What a rotation found. */
export type RefreshRotation =
  /** The token was current: it is spent, and `next` is now the family's token. */
  | { readonly outcome: "rotated"; readonly record: RefreshTokenRecord }
  /** The token was spent before: revoke the family's grant (RFC 9700 §4.14.2). */
  | { readonly outcome: "reused"; readonly record: RefreshTokenRecord }
  /** Unknown, expired, or its family was ended. */
  | { readonly outcome: "unknown" };

/**
 * Refresh tokens. `rotate` is atomic: of concurrent rotations of one token,
 * in one process or across processes sharing the store, exactly one is
 * `rotated` (its `next` stored); every other is `reused`. A spent token is
 * remembered until its family's expiry, so reuse is always seen.
 */
export interface RefreshTokenStore {
  /** Stores the first token of a family. */
  create(record: RefreshTokenRecord): Promise<void>;
  /**
   * Spends the token whose hash is `tokenHash` (unexpired at `now`) and
   * stores `next` in its place, in one step.
   */
  rotate(tokenHash: string, next: RefreshTokenRecord, now: number): Promise<RefreshRotation>;
  /** Ends a family: its current token is refused from now on. Idempotent. */
  revokeFamily(familyId: string): Promise<void>;
}
