import { type CryptoKey, errors, type JWTPayload, jwtVerify } from "jose";
import { InvalidOptionsError, type JwtFailureReason, JwtInvalidError } from "../core/errors.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { checkIssuer, checkTyp, compactJwsHeader } from "./checks.ts";
import type { JwtAlgorithm, KeySet } from "./keys.ts";

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

/**
 * Builds a verifier. A token passes only when it is at most `maxTokenLength`
 * long, names a known `kid` with that key's own algorithm, carries exactly the
 * `typ` and `iss` asked for and exactly one `aud` string equal to the expected
 * audience, has `sub`, `jti`, `iat` (not in the future) and `exp` (not past),
 * and its signature holds. Anything else rejects with `JwtInvalidError`.
 */
export function jwtVerifier(options: JwtVerifierOptions): JwtVerifier {
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
  const now = options.now;
  if (now !== undefined && typeof now !== "function")
    throw new InvalidOptionsError("jwtVerifier: now must be a function");

  return async (token, expected) => {
    const audience = expected?.audience;
    if (typeof audience !== "string" || audience === "")
      throw new TypeError("jwtVerifier: the expected audience must be one non-empty string");
    if (typeof token !== "string") fail("malformed", "the token is not a string");
    if (token.length > maxLength) fail("too_large", `the token is longer than ${maxLength}`);
    const header = protectedHeader(token);
    for (const name of REFUSED_HEADERS) {
      if (Object.hasOwn(header, name)) fail("header", `the header carries ${name}`);
    }
    if (header.typ !== typ) fail("header", "the typ header is not the expected one");
    const kid = header.kid;
    const key = typeof kid === "string" ? keys.key(kid) : undefined;
    if (key === undefined) fail("unknown_key", "the kid names no known key");
    if (header.alg !== key.alg) fail("header", "the alg header is not the key's algorithm");

    const at = now === undefined ? undefined : new Date(now());
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key.verifyKey as CryptoKey | Uint8Array, {
        algorithms: [key.alg],
        issuer,
        typ,
        clockTolerance: tolerance,
        requiredClaims: ["iss", "sub", "aud", "iat", "exp", "jti"],
        ...(at === undefined ? {} : { currentDate: at }),
      }));
    } catch (error) {
      throw translate(error);
    }
    if (typeof payload.aud !== "string" || payload.aud !== audience)
      fail("claims", "aud is not exactly the expected audience");
    const nowSeconds = Math.floor((at?.getTime() ?? Date.now()) / 1000);
    if ((payload.iat as number) > nowSeconds + tolerance) fail("claims", "iat is in the future");
    if (typeof payload.sub !== "string" || payload.sub === "") fail("claims", "sub is empty");
    if (typeof payload.jti !== "string" || payload.jti === "") fail("claims", "jti is empty");
    return { claims: payload as JwtClaims, kid: key.kid, alg: key.alg };
  };
}

function protectedHeader(token: string): Record<string, unknown> {
  return compactJwsHeader(token, (message, cause) => fail("malformed", message, cause));
}

function translate(error: unknown): JwtInvalidError {
  if (error instanceof JwtInvalidError) return error;
  let reason: JwtFailureReason = "malformed";
  if (error instanceof errors.JWTExpired) reason = "expired";
  else if (error instanceof errors.JWSSignatureVerificationFailed) reason = "signature";
  else if (error instanceof errors.JWTClaimValidationFailed)
    reason = error.claim === "nbf" ? "not_yet_valid" : "claims";
  else if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported)
    reason = "header";
  return new JwtInvalidError(reason, "the token failed verification", { cause: claimless(error) });
}

/** jose's claim errors carry the whole payload; the cause keeps what failed, not the claims. */
function claimless(error: unknown): unknown {
  if (!(error instanceof errors.JOSEError)) return error;
  const copy = new Error(error.message);
  copy.name = error.name;
  return Object.assign(copy, { code: error.code });
}

function fail(reason: JwtFailureReason, message: string, cause?: unknown): never {
  throw new JwtInvalidError(reason, message, cause === undefined ? undefined : { cause });
}
