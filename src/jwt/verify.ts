import type { JWTPayload } from "jose";
import { InvalidOptionsError, type JwtFailureReason, JwtInvalidError } from "../core/errors.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { checkIssuer, checkTyp, compactJws, type HeaderMemo, jsonObject } from "./checks.ts";
import type { JwtAlgorithm, KeySet } from "./keys.ts";
import { type SignatureEngine, signatureChecks } from "./signature.ts";

/** The most clock skew a verifier may tolerate. */
export const MAX_CLOCK_TOLERANCE_SECONDS = 30;

/**
 * Options of `jwtVerifier`.
 *
 * @example
 * ```ts
 * import { jwtVerifier } from "portcullis/jwt";
 *
 * const verify = jwtVerifier({
 *   keys, // the same KeySet the signer uses, or its public keys
 *   typ: "example-access+jwt",
 *   issuer: "https://api.example.com",
 *   clockToleranceSeconds: 10,
 * });
 * const { claims } = await verify(token, { audience: "https://api.example.com/api" });
 * ```
 */
export interface JwtVerifierOptions {
  /** The keys a token's `kid` may name. */
  readonly keys: KeySet;
  /** The exact `typ` header required. */
  readonly typ: string;
  /** The exact `iss` claim required. */
  readonly issuer: string;
  /**
   * Skew allowed on `exp`, `nbf` and `iat`, in seconds, 0-30.
   *
   * @default 5
   */
  readonly clockToleranceSeconds?: number;
  /**
   * Longer tokens are refused before any parsing or cryptography (64 or more).
   *
   * @default 8192
   */
  readonly maxTokenLength?: number;
  /**
   * Clock, in milliseconds since the epoch.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/** The claims every verified token carries, plus its private ones. */
export interface JwtClaims extends JWTPayload {
  readonly iss: string;
  readonly sub: string;
  readonly aud: string;
  readonly iat: number;
  readonly exp: number;
  readonly jti: string;
}

export interface VerifiedJwt {
  readonly claims: JwtClaims;
  readonly kid: string;
  readonly alg: JwtAlgorithm;
}

export type JwtVerifier = (
  token: string,
  expected: { readonly audience: string },
) => Promise<VerifiedJwt>;

// Header parameters that would let a token choose its own key or extensions.
const REFUSED_HEADERS = ["jwk", "jku", "x5u", "x5c", "x5t", "x5t#S256", "crit", "b64", "zip"];
// The claims every token must carry.
const REQUIRED_CLAIMS = ["iss", "jti", "exp", "iat", "aud", "sub"];

/**
 * Builds a verifier. A token passes only when it is at most `maxTokenLength`
 * long, names a known `kid` with that key's own algorithm, carries exactly the
 * `typ` and `iss` asked for and exactly one `aud` string equal to the expected
 * audience, has `sub`, `jti`, `iat` (not in the future) and `exp` (not past),
 * and its signature holds. Anything else rejects with `JwtInvalidError`.
 * Signatures are checked with `node:crypto` where the runtime has it, with
 * Web Crypto elsewhere; every other check is the same on both.
 */
export function jwtVerifier(options: JwtVerifierOptions): JwtVerifier {
  return verifierOn(options, "auto");
}

/** `jwtVerifier` on a chosen signature engine (`auto` is what `jwtVerifier` uses). */
export function verifierOn(options: JwtVerifierOptions, engine: SignatureEngine): JwtVerifier {
  rejectUnknownKeys("jwtVerifier", options, [
    "keys",
    "typ",
    "issuer",
    "clockToleranceSeconds",
    "maxTokenLength",
    "now",
  ]);
  const keys = options.keys;
  if (typeof keys?.key !== "function")
    throw new InvalidOptionsError("jwtVerifier: keys must be a KeySet");
  const typ = checkTyp("jwtVerifier", options.typ);
  const issuer = checkIssuer("jwtVerifier", options.issuer);
  const tolerance = options.clockToleranceSeconds ?? 5;
  if (!Number.isInteger(tolerance) || tolerance < 0 || tolerance > MAX_CLOCK_TOLERANCE_SECONDS)
    throw new InvalidOptionsError(
      `jwtVerifier: clockToleranceSeconds must be a whole number from 0 to ${MAX_CLOCK_TOLERANCE_SECONDS}`,
    );
  const maxLength = options.maxTokenLength ?? 8192;
  if (!Number.isInteger(maxLength) || maxLength < 64)
    throw new InvalidOptionsError("jwtVerifier: maxTokenLength must be a whole number, 64 or more");
  const now = options.now ?? Date.now;
  if (typeof now !== "function")
    throw new InvalidOptionsError("jwtVerifier: now must be a function");
  const signatureCheck = signatureChecks(engine);
  // Only read below, never changed: safe to share between tokens.
  const headerMemo: HeaderMemo = { encoded: "", header: {} };

  return async (token, expected) => {
    const audience = expected?.audience;
    if (typeof audience !== "string" || audience === "")
      throw new TypeError("jwtVerifier: the expected audience must be one non-empty string");
    if (typeof token !== "string") fail("malformed", "the token is not a string");
    if (token.length > maxLength) fail("too_large", `the token is longer than ${maxLength}`);
    const jws = compactJws(
      token,
      (message, cause) => fail("malformed", message, cause),
      headerMemo,
    );
    const { header } = jws;
    for (const name of REFUSED_HEADERS) {
      if (Object.hasOwn(header, name)) fail("header", `the header carries ${name}`);
    }
    if (header.typ !== typ) fail("header", "the typ header is not the expected one");
    const kid = header.kid;
    const key = typeof kid === "string" ? keys.key(kid) : undefined;
    if (key === undefined) fail("unknown_key", "the kid names no known key");
    if (header.alg !== key.alg) fail("header", "the alg header is not the key's algorithm");
    const bytes = await signatureCheck(key)(token, jws);
    const payload = jsonObject(bytes, "payload", (message, cause) =>
      fail("malformed", message, cause),
    );
    const claims = checkClaims(payload, { issuer, audience, tolerance, now: now() });
    return { claims, kid: key.kid, alg: key.alg };
  };
}

/**
 * The claims of a token whose signature holds, judged at `now` (epoch ms), in
 * the order and with the outcome of jose's `jwtVerify` (RFC 7519 §4.1), then
 * our own: one `aud` string, `iat` not in the future, `sub` and `jti` not empty.
 */
function checkClaims(
  payload: Record<string, unknown>,
  expected: { issuer: string; audience: string; tolerance: number; now: number },
): JwtClaims {
  const { tolerance } = expected;
  for (const name of REQUIRED_CLAIMS) {
    if (!Object.hasOwn(payload, name)) fail("claims", `the ${name} claim is missing`);
  }
  if (payload.iss !== expected.issuer) fail("claims", "iss is not the expected issuer");
  const now = Math.floor(new Date(expected.now).getTime() / 1000);
  if (!Number.isFinite(now)) fail("malformed", "the clock gave no time");
  const { iat, nbf, exp } = payload;
  if (typeof iat !== "number") fail("claims", "iat is not a number");
  if (nbf !== undefined) {
    if (typeof nbf !== "number") fail("not_yet_valid", "nbf is not a number");
    if (nbf > now + tolerance) fail("not_yet_valid", "the token is not yet valid");
  }
  if (typeof exp !== "number") fail("claims", "exp is not a number");
  if (exp <= now - tolerance) fail("expired", "the token has expired");
  if (typeof payload.aud !== "string" || payload.aud !== expected.audience)
    fail("claims", "aud is not exactly the expected audience");
  if (iat > now + tolerance) fail("claims", "iat is in the future");
  if (typeof payload.sub !== "string" || payload.sub === "") fail("claims", "sub is empty");
  if (typeof payload.jti !== "string" || payload.jti === "") fail("claims", "jti is empty");
  return payload as JwtClaims;
}

function fail(reason: JwtFailureReason, message: string, cause?: unknown): never {
  throw new JwtInvalidError(reason, message, cause === undefined ? undefined : { cause });
}
