import { InvalidOptionsError } from "./errors.ts";
import { positiveInteger } from "./options.ts";

/**
 * The per-person quotas of the authorization-code and refresh-token stores,
 * one home for the memory, Redis and PostgreSQL stores alike: what one
 * signed-in person's consents may hold, so that no person, however many
 * consents they loop, can fill a store others need.
 */

/**
 * The quota of an authorization code store. A new consent of one client by
 * one person replaces that pair's earlier code, spent or not (the earlier code
 * stops working), so a pair holds one code at a time.
 *
 * @example
 * ```ts
 * import { MemoryAuthorizationCodeStore } from "portcullis/oauth2";
 *
 * const codes = new MemoryAuthorizationCodeStore({ maxCodesPerPerson: 5 });
 * ```
 */
export interface CodeQuotaOptions {
  /**
   * Most codes one person holds, one per client, until each expires (60 s
   * from its consent). A consent past it is refused (the client is sent
   * `temporarily_unavailable`) until one of that person's codes expires;
   * nobody else is refused.
   *
   * @default 10
   */
  readonly maxCodesPerPerson?: number;
}

/**
 * The quotas of a refresh-token store. Each code redeemed starts a family (a
 * refresh token and its rotations); a person's families are bounded per
 * client and in all, and the oldest is ended when a new one would pass either
 * bound, so no redemption is refused for them.
 *
 * @example
 * ```ts
 * import { MemoryRefreshTokenStore } from "portcullis/oauth2";
 *
 * const refreshTokens = new MemoryRefreshTokenStore({
 *   maxFamiliesPerClientAndPerson: 3,
 *   maxFamiliesPerPerson: 20,
 * });
 * ```
 */
export interface RefreshQuotaOptions {
  /**
   * Most live families one person holds for one client: several installs of
   * one desktop client share its client id, each with a family of its own.
   * A new one past it ends that pair's oldest.
   *
   * @default 5
   */
  readonly maxFamiliesPerClientAndPerson?: number;
  /**
   * Most families one person holds in all, live or ended and not yet expired.
   * A new one past it drops that person's oldest ended family, else ends
   * their oldest live one.
   *
   * @default 25
   */
  readonly maxFamiliesPerPerson?: number;
}

/**
 * Spent refresh tokens a family remembers, newest first, to see their reuse
 * (RFC 9700 §4.14.2): a token stolen and used is seen when the client next
 * refreshes with its own copy, or when the thief's copy comes back, within
 * this many rotations. An older spent token is refused as unknown, ending
 * nothing. An unbounded history would let one client refreshing in a loop
 * grow its family without end.
 */
export const SPENT_TOKENS_KEPT = 8;

/** `CodeQuotaOptions` checked, with their defaults. */
export function codeQuotas(where: string, options: CodeQuotaOptions): Required<CodeQuotaOptions> {
  return {
    maxCodesPerPerson: positiveInteger(where, "maxCodesPerPerson", options.maxCodesPerPerson, 10),
  };
}

/** `RefreshQuotaOptions` checked, with their defaults. */
export function refreshQuotas(
  where: string,
  options: RefreshQuotaOptions,
): Required<RefreshQuotaOptions> {
  const perPerson = positiveInteger(
    where,
    "maxFamiliesPerPerson",
    options.maxFamiliesPerPerson,
    25,
  );
  const perPair = positiveInteger(
    where,
    "maxFamiliesPerClientAndPerson",
    options.maxFamiliesPerClientAndPerson,
    5,
  );
  if (perPair > perPerson)
    throw new InvalidOptionsError(
      `${where}: maxFamiliesPerClientAndPerson (${perPair}) exceeds maxFamiliesPerPerson (${perPerson})`,
    );
  return { maxFamiliesPerPerson: perPerson, maxFamiliesPerClientAndPerson: perPair };
}

/** The option names of both, for `rejectUnknownKeys`. */
export const CODE_QUOTA_KEYS = ["maxCodesPerPerson"] as const;
export const REFRESH_QUOTA_KEYS = [
  "maxFamiliesPerClientAndPerson",
  "maxFamiliesPerPerson",
] as const;
