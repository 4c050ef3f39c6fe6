import { calculateJwkThumbprint, EmbeddedJWK, type JWK, type JWTPayload, jwtVerify } from "jose";
import { sha256Base64url } from "../core/digest.ts";
import { MAX_DPOP_PROOF_BYTES } from "../core/dpop-header.ts";
import {
  type DpopFailureReason,
  DpopNonceRequiredError,
  DpopProofInvalidError,
  InvalidOptionsError,
} from "../core/errors.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { timingSafeEqual } from "../core/timing-safe.ts";
import { compactJwsHeader } from "./checks.ts";
import type { DpopNonces } from "./dpop-nonce.ts";
import { MAX_CLOCK_TOLERANCE_SECONDS } from "./verify.ts";

/** The `typ` of a DPoP proof (RFC 9449 §4.2). */
export const DPOP_PROOF_TYPE = "dpop+jwt";

export { MAX_DPOP_PROOF_BYTES };

/** Asymmetric algorithms a proof may be signed with; `EdDSA` also admits its fully specified name `Ed25519`. */
export type DpopAlgorithm =
  | "ES256"
  | "ES384"
  | "ES512"
  | "EdDSA"
  | "Ed25519"
  | "RS256"
  | "RS384"
  | "RS512"
  | "PS256"
  | "PS384"
  | "PS512";

// The key type (and curve) each algorithm's embedded key must have.
const KEY_OF: Record<DpopAlgorithm, { kty: string; crv?: string }> = {
  ES256: { kty: "EC", crv: "P-256" },
  ES384: { kty: "EC", crv: "P-384" },
  ES512: { kty: "EC", crv: "P-521" },
  EdDSA: { kty: "OKP", crv: "Ed25519" },
  Ed25519: { kty: "OKP", crv: "Ed25519" },
  RS256: { kty: "RSA" },
  RS384: { kty: "RSA" },
  RS512: { kty: "RSA" },
  PS256: { kty: "RSA" },
  PS384: { kty: "RSA" },
  PS512: { kty: "RSA" },
};

// A private or symmetric key in the header would be a key the whole network now holds.
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];
// Header parameters that would point at a key elsewhere or change how the JWS is read.
const REFUSED_HEADERS = ["jku", "x5u", "x5c", "x5t", "x5t#S256", "crit", "b64", "zip"];

/**
 * Options of `dpopProofVerifier`.
 *
 * @example
 * ```ts
 * import { dpopNonces, dpopProofVerifier } from "portcullis/jwt";
 *
 * const verifyProof = dpopProofVerifier({
 *   algorithms: ["ES256", "EdDSA"],
 *   maxAgeSeconds: 60,
 *   nonces: dpopNonces({ secret }),
 * });
 * const { jkt } = await verifyProof(request.headers.get("dpop") ?? "", {
 *   method: "POST",
 *   url: "https://api.example.com/capability/execute",
 *   accessToken,
 *   jkt: claims.cnf?.jkt,
 * });
 * ```
 */
export interface DpopProofVerifierOptions {
  /**
   * Algorithms accepted (never `none` nor a symmetric one).
   *
   * @default ["ES256", "EdDSA"]
   */
  readonly algorithms?: readonly DpopAlgorithm[];
  /**
   * How old a proof's `iat` may be, in seconds (1 to 300).
   *
   * @default 60
   */
  readonly maxAgeSeconds?: number;
  /**
   * Clock skew allowed on `iat`, both ways, in seconds, 0-30.
   *
   * @default 5
   */
  readonly clockToleranceSeconds?: number;
  /**
   * Server nonces; with them a proof's `nonce`, when it carries one, must be current.
   *
   * @default none — a proof carrying a nonce is refused
   */
  readonly nonces?: DpopNonces;
  /**
   * Every proof must carry a current nonce (needs `nonces`).
   *
   * @default false
   */
  readonly requireNonce?: boolean;
  /**
   * Clock, in milliseconds since the epoch.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/** What the proof must be bound to. */
export interface DpopProofExpectation {
  /** The request's method. */
  readonly method: string;
  /** The endpoint's configured absolute URL (never one built from `Host`); query and fragment are ignored. */
  readonly url: string;
  /** The access token presented with the proof: its hash must be the proof's `ath`. */
  readonly accessToken?: string;
  /** The RFC 7638 thumbprint the proof's key must have (a token's `cnf.jkt`). */
  readonly jkt?: string;
}

/** A verified proof. */
export interface VerifiedDpopProof {
  /** The RFC 7638 SHA-256 thumbprint of the proof's key. */
  readonly jkt: string;
  readonly jti: string;
  /** Seconds since the epoch. */
  readonly iat: number;
  readonly alg: DpopAlgorithm;
  /** The public key the proof was signed with. */
  readonly jwk: JWK;
  readonly nonce?: string;
}

/**
 * Checks a proof against what it must be bound to; rejects with
 * `DpopProofInvalidError`, or `DpopNonceRequiredError` when a current server
 * nonce is missing. Single use of `jti` is the caller's (a replay store).
 */
export type DpopProofVerifier = (
  proof: string,
  expected: DpopProofExpectation,
) => Promise<VerifiedDpopProof>;

/**
 * Builds a DPoP proof verifier (RFC 9449 §4.3): the proof is at most
 * `MAX_DPOP_PROOF_BYTES`, a compact JWS with `typ` `dpop+jwt`, an allowed
 * asymmetric `alg` and an embedded public `jwk` of that algorithm's type, and
 * its signature holds; `jti` is 16-256 characters, `htm` is the method, `htu`
 * (without query and fragment) is the URL, `iat` is within `maxAgeSeconds`
 * (and the tolerance) of now, `ath` is the token's hash when a token is
 * presented, `nonce` is current when carried or required, and the key's
 * thumbprint is the expected one.
 */
export function dpopProofVerifier(options: DpopProofVerifierOptions = {}): DpopProofVerifier {
  const settings = checkedOptions(options);
  return async (proof, expected) => {
    const expectedUrl = checkedExpectation(expected);
    if (typeof proof !== "string") fail("malformed", "the proof is not a string");
    // Every character of a compact JWS is one byte; a longer string is refused unread.
    if (proof.length > MAX_DPOP_PROOF_BYTES)
      fail("too_large", `the proof is longer than ${MAX_DPOP_PROOF_BYTES} bytes`);
    const header = compactJwsHeader(proof, (message, cause) => fail("malformed", message, cause));
    const { alg, jwk } = checkedHeader(header, settings.algorithms);
    const at = settings.now();
    const claims = await verifiedClaims(proof, settings, at);
    const { jti, iat, nonce } = checkedClaims(claims, expected, expectedUrl, settings, at);
    await checkTokenHash(claims.ath, expected.accessToken);
    await checkNonce(nonce, settings);
    const jkt = await thumbprint(jwk, expected.jkt);
    return Object.freeze({
      jkt,
      jti,
      iat,
      alg,
      jwk,
      ...(typeof nonce === "string" ? { nonce } : {}),
    });
  };
}

interface VerifierSettings {
  readonly algorithms: DpopAlgorithm[];
  readonly maxAge: number;
  readonly tolerance: number;
  readonly nonces: DpopNonces | undefined;
  readonly requireNonce: boolean;
  readonly now: () => number;
}

function checkedOptions(options: DpopProofVerifierOptions): VerifierSettings {
  rejectUnknownKeys("dpopProofVerifier", options, [
    "algorithms",
    "maxAgeSeconds",
    "clockToleranceSeconds",
    "nonces",
    "requireNonce",
    "now",
  ]);
  const algorithms = dpopAlgorithms("dpopProofVerifier", options.algorithms);
  const maxAge = options.maxAgeSeconds ?? 60;
  if (!Number.isInteger(maxAge) || maxAge < 1 || maxAge > 300)
    throw new InvalidOptionsError(
      "dpopProofVerifier: maxAgeSeconds must be a whole number from 1 to 300",
    );
  const tolerance = options.clockToleranceSeconds ?? 5;
  if (!Number.isInteger(tolerance) || tolerance < 0 || tolerance > MAX_CLOCK_TOLERANCE_SECONDS)
    throw new InvalidOptionsError(
      `dpopProofVerifier: clockToleranceSeconds must be a whole number from 0 to ${MAX_CLOCK_TOLERANCE_SECONDS}`,
    );
  const nonces = options.nonces;
  if (
    nonces !== undefined &&
    (typeof nonces.check !== "function" || typeof nonces.current !== "function")
  )
    throw new InvalidOptionsError("dpopProofVerifier: nonces must come from dpopNonces");
  const requireNonce = options.requireNonce ?? false;
  if (typeof requireNonce !== "boolean")
    throw new InvalidOptionsError("dpopProofVerifier: requireNonce must be a boolean");
  if (requireNonce && nonces === undefined)
    throw new InvalidOptionsError("dpopProofVerifier: requireNonce needs nonces");
  const now = options.now ?? Date.now;
  if (typeof now !== "function")
    throw new InvalidOptionsError("dpopProofVerifier: now must be a function");
  return { algorithms, maxAge, tolerance, nonces, requireNonce, now };
}

/** The signature, against the embedded key, and the claims it covers. */
async function verifiedClaims(
  proof: string,
  settings: VerifierSettings,
  at: number,
): Promise<Record<string, unknown>> {
  try {
    const { payload } = await jwtVerify(proof, EmbeddedJWK, {
      typ: DPOP_PROOF_TYPE,
      algorithms: settings.algorithms,
      currentDate: new Date(at),
      clockTolerance: settings.tolerance,
    });
    return payload as JWTPayload & Record<string, unknown>;
  } catch (error) {
    throw translate(error);
  }
}

/** `jti`, `htm`, `htu` and the `iat` window. */
function checkedClaims(
  claims: Record<string, unknown>,
  expected: DpopProofExpectation,
  expectedUrl: string,
  settings: VerifierSettings,
  at: number,
): { jti: string; iat: number; nonce: unknown } {
  const { jti, htm, htu, iat, nonce } = claims;
  if (typeof jti !== "string" || jti.length < 16 || jti.length > 256)
    fail("claims", "jti is not a string of 16 to 256 characters");
  if (typeof htm !== "string" || htm !== expected.method)
    fail("htm", "htm is not the request's method");
  if (typeof htu !== "string" || withoutQuery(htu) !== expectedUrl)
    fail("htu", "htu is not this endpoint's URL");
  if (typeof iat !== "number" || !Number.isFinite(iat)) fail("claims", "iat is not a number");
  const nowSeconds = at / 1000;
  if (iat > nowSeconds + settings.tolerance) fail("iat", "iat is in the future");
  if (iat < nowSeconds - settings.maxAge - settings.tolerance) {
    // With nonces on, a proof without one is told the current nonce, so a client that cached none recovers.
    if (nonce === undefined && settings.nonces !== undefined)
      throw new DpopNonceRequiredError("the proof is too old; use the server's nonce");
    fail("iat", "the proof is too old");
  }
  return { jti, iat, nonce };
}

/** `ath` is the presented token's SHA-256 (RFC 9449 §4.2), when a token is presented. */
async function checkTokenHash(ath: unknown, accessToken: string | undefined): Promise<void> {
  if (accessToken === undefined) return;
  const hash = await sha256Base64url(accessToken);
  if (typeof ath !== "string" || !(await timingSafeEqual(ath, hash)))
    fail("ath", "ath is not the hash of the presented token");
}

/** A carried nonce must be current; with `requireNonce`, one must be carried. */
async function checkNonce(nonce: unknown, settings: VerifierSettings): Promise<void> {
  if (nonce !== undefined) {
    if (settings.nonces === undefined)
      fail("claims", "the proof carries a nonce this server never issues");
    if (typeof nonce !== "string" || !(await settings.nonces.check(nonce)))
      throw new DpopNonceRequiredError("the proof's nonce is not a current one");
  } else if (settings.requireNonce) {
    throw new DpopNonceRequiredError("the proof carries no nonce");
  }
}

/** The key's RFC 7638 thumbprint, which must be `expectedJkt` when one is given. */
async function thumbprint(jwk: JWK, expectedJkt: string | undefined): Promise<string> {
  let jkt: string;
  try {
    jkt = await calculateJwkThumbprint(jwk, "sha256");
  } catch (error) {
    throw translate(error);
  }
  if (expectedJkt !== undefined && !(await timingSafeEqual(jkt, expectedJkt)))
    fail("jkt", "the proof's key is not the one the token is bound to");
  return jkt;
}

/** The algorithm list of an options object: checked, and `EdDSA` widened to also admit `Ed25519`. */
export function dpopAlgorithms(where: string, value: unknown): DpopAlgorithm[] {
  const list = value ?? ["ES256", "EdDSA"];
  if (!Array.isArray(list) || list.length === 0)
    throw new InvalidOptionsError(`${where}: algorithms must be a non-empty array`);
  for (const alg of list) {
    if (typeof alg !== "string" || !Object.hasOwn(KEY_OF, alg))
      throw new InvalidOptionsError(
        `${where}: algorithms may name only ${Object.keys(KEY_OF).join(", ")} (not ${JSON.stringify(alg)})`,
      );
  }
  const algorithms = new Set(list as DpopAlgorithm[]);
  if (algorithms.has("EdDSA")) algorithms.add("Ed25519");
  return [...algorithms];
}

function checkedExpectation(expected: DpopProofExpectation): string {
  const { method, url, accessToken, jkt } = expected ?? {};
  if (typeof method !== "string" || method === "")
    throw new TypeError("dpopProofVerifier: the expected method must be a non-empty string");
  if (typeof url !== "string" || !URL.canParse(url))
    throw new TypeError("dpopProofVerifier: the expected url must be an absolute URL");
  if (accessToken !== undefined && typeof accessToken !== "string")
    throw new TypeError("dpopProofVerifier: accessToken must be a string");
  if (jkt !== undefined && typeof jkt !== "string")
    throw new TypeError("dpopProofVerifier: jkt must be a string");
  return withoutQuery(url) as string;
}

/** The URL normalised (scheme and host lower case, default port elided, dot segments resolved), without query and fragment. */
function withoutQuery(url: string): string | undefined {
  if (!URL.canParse(url)) return undefined;
  const parsed = new URL(url);
  parsed.search = "";
  parsed.hash = "";
  return parsed.href;
}

function checkedHeader(
  header: Record<string, unknown>,
  algorithms: readonly DpopAlgorithm[],
): { alg: DpopAlgorithm; jwk: JWK } {
  if (header.typ !== DPOP_PROOF_TYPE) fail("header", "the typ header is not dpop+jwt");
  const alg = header.alg;
  if (typeof alg !== "string" || !(algorithms as readonly string[]).includes(alg))
    fail("header", "the alg header is not an accepted algorithm");
  for (const name of REFUSED_HEADERS) {
    if (Object.hasOwn(header, name)) fail("header", `the header carries ${name}`);
  }
  const jwk = header.jwk;
  if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk))
    fail("key", "the header carries no jwk");
  for (const name of PRIVATE_MEMBERS) {
    if (Object.hasOwn(jwk, name)) fail("key", `the jwk carries the private member ${name}`);
  }
  const want = KEY_OF[alg as DpopAlgorithm];
  const { kty, crv } = jwk as Record<string, unknown>;
  if (kty !== want.kty || (want.crv !== undefined && crv !== want.crv))
    fail("key", "the jwk is not a key of the alg's type");
  return { alg: alg as DpopAlgorithm, jwk: jwk as JWK };
}

function translate(error: unknown): DpopProofInvalidError {
  if (error instanceof DpopProofInvalidError) return error;
  const name = (error as { code?: unknown })?.code;
  const reason: DpopFailureReason =
    name === "ERR_JWS_SIGNATURE_VERIFICATION_FAILED"
      ? "signature"
      : name === "ERR_JWT_CLAIM_VALIDATION_FAILED" || name === "ERR_JWT_EXPIRED"
        ? "claims"
        : name === "ERR_JOSE_ALG_NOT_ALLOWED" || name === "ERR_JOSE_NOT_SUPPORTED"
          ? "header"
          : "malformed";
  return new DpopProofInvalidError(reason, "the DPoP proof failed verification", {
    cause: error,
  });
}

function fail(reason: DpopFailureReason, message: string, cause?: unknown): never {
  throw new DpopProofInvalidError(reason, message, cause === undefined ? undefined : { cause });
}
