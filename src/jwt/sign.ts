import { type CryptoKey, SignJWT } from "jose";
import { randomToken } from "../core/encoding.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { checkIssuer, checkTyp, positiveSeconds } from "./checks.ts";
import type { KeySet } from "./keys.ts";

/** Claims a signer sets itself; a caller passing one in `claims` is refused. */
export const REGISTERED_CLAIMS: readonly string[] = [
  "iss",
  "sub",
  "aud",
  "iat",
  "exp",
  "nbf",
  "jti",
];

/**
 * Options of `jwtSigner`.
 *
 * @example
 * ```ts
 * import { generateKeySet, jwtSigner } from "portcullis/jwt";
 *
 * const sign = jwtSigner({
 *   keys: await generateKeySet(),
 *   typ: "example-access+jwt",
 *   issuer: "https://api.example.com",
 *   ttlSeconds: 600,
 * });
 * const { token } = await sign({ subject: "ada", audience: "https://api.example.com/api" });
 * ```
 */
export interface JwtSignerOptions {
  /** The keys; tokens are signed with `keys.signingKey`. */
  readonly keys: KeySet;
  /** The `typ` header, naming what the token is for, e.g. `"example-session+jwt"`. */
  readonly typ: string;
  /** The `iss` claim: an absolute URL. */
  readonly issuer: string;
  /**
   * Lifetime in seconds when a call gives none.
   *
   * @default 120
   */
  readonly ttlSeconds?: number;
  /**
   * Clock, in milliseconds since the epoch.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

export interface SignInput {
  /** The `sub` claim. */
  readonly subject: string;
  /** The `aud` claim: one string, never an array. */
  readonly audience: string;
  /** Private claims; none of the registered names. */
  readonly claims?: Readonly<Record<string, unknown>>;
  /** Overrides the signer's `ttlSeconds` for this token. */
  readonly ttlSeconds?: number;
}

export interface SignedJwt {
  readonly token: string;
  readonly jti: string;
  /** Seconds since the epoch. */
  readonly issuedAt: number;
  /** Seconds since the epoch. */
  readonly expiresAt: number;
}

export type JwtSigner = (input: SignInput) => Promise<SignedJwt>;

/** Builds a signer; every option is checked here, so a bad one throws at start-up. */
export function jwtSigner(options: JwtSignerOptions): JwtSigner {
  rejectUnknownKeys("jwtSigner", options, ["keys", "typ", "issuer", "ttlSeconds", "now"]);
  const signing = options.keys?.signingKey;
  if (signing?.signKey === undefined)
    throw new InvalidOptionsError("jwtSigner: keys must hold a key that can sign");
  const typ = checkTyp("jwtSigner", options.typ);
  const issuer = checkIssuer("jwtSigner", options.issuer);
  const defaultTtl = positiveSeconds("jwtSigner", "ttlSeconds", options.ttlSeconds ?? 120);
  const now = options.now ?? Date.now;
  if (typeof now !== "function") throw new InvalidOptionsError("jwtSigner: now must be a function");
  const key = signing.signKey as CryptoKey | Uint8Array;
  const header = { alg: signing.alg, typ, kid: signing.kid };

  return async (input) => {
    if (typeof input?.subject !== "string" || input.subject === "")
      throw new TypeError("jwtSigner: subject must be a non-empty string");
    if (typeof input.audience !== "string" || input.audience === "")
      throw new TypeError("jwtSigner: audience must be one non-empty string");
    for (const name of Object.keys(input.claims ?? {})) {
      if (REGISTERED_CLAIMS.includes(name))
        throw new TypeError(`jwtSigner: claim ${name} is set by the signer`);
    }
    const ttl =
      input.ttlSeconds === undefined
        ? defaultTtl
        : positiveSeconds("jwtSigner", "ttlSeconds", input.ttlSeconds);
    const issuedAt = Math.floor(now() / 1000);
    const expiresAt = issuedAt + ttl;
    const jti = randomToken(16);
    const token = await new SignJWT({ ...input.claims })
      .setProtectedHeader(header)
      .setIssuer(issuer)
      .setSubject(input.subject)
      .setAudience(input.audience)
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .setJti(jti)
      .sign(key);
    return { token, jti, issuedAt, expiresAt };
  };
}
