import { InvalidOptionsError, JwtInvalidError } from "../core/errors.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import type { KeySet } from "../jwt/index.ts";
import { type JwtClaims, jwtSigner, jwtVerifier } from "../jwt/index.ts";

/** The `typ` of capability tokens: our own, so no other JWT is ever taken for one. */
export const CAPABILITY_TOKEN_TYPE = "portcullis-capability+jwt";

/**
 * Options of `capabilityTokens`; `agentAuth` builds them for you.
 *
 * @example
 * ```ts
 * import { capabilityTokens } from "portcullis/agentauth";
 * import { generateKeySet } from "portcullis/jwt";
 *
 * const tokens = capabilityTokens({
 *   keys: await generateKeySet(),
 *   issuer: "https://notes.example.com",
 *   executeUrl: "https://notes.example.com/capability/execute",
 *   ttlSeconds: 60,
 * });
 * ```
 */
export interface CapabilityTokenOptions {
  /** Signing and verification keys (EdDSA or ES256 by default; HS256 only if imported so). */
  readonly keys: KeySet;
  /** The issuer: the service's absolute base URL. */
  readonly issuer: string;
  /** The execute endpoint's absolute URL: the default audience. */
  readonly executeUrl: string;
  /**
   * Token lifetime, in seconds (1 to 3600); the spec recommends about two minutes.
   *
   * @default 120
   */
  readonly ttlSeconds?: number;
  /**
   * Clock skew allowed when verifying, in seconds, at most 30.
   *
   * @default 5
   */
  readonly clockToleranceSeconds?: number;
  /**
   * Clock, in milliseconds since the epoch.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

export interface MintInput {
  readonly principalId: string;
  readonly grantId: string;
  readonly capabilities: readonly string[];
  /** @default the execute URL; a capability's `location` for `resolveSession` */
  readonly audience?: string;
  /**
   * The RFC 7638 thumbprint of the agent's DPoP key: the token carries it as
   * `cnf.jkt` and is then accepted only with a proof made by that key.
   */
  readonly jkt?: string;
}

export interface MintedToken {
  readonly token: string;
  readonly jti: string;
  readonly expiresIn: number;
  /** Seconds since the epoch. */
  readonly expiresAt: number;
}

/** The claims of a verified capability token. */
export interface CapabilityClaims extends JwtClaims {
  readonly client_id: string;
  readonly grant_id: string;
  readonly capabilities: readonly string[];
  readonly scope: string;
  /** Present on a DPoP-bound token: the thumbprint of the key every use must prove. */
  readonly cnf?: { readonly jkt: string };
}

// A base64url SHA-256 digest, as RFC 7638 thumbprints are.
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

/** Mints and verifies capability tokens; build once (keys are bound here). */
export interface CapabilityTokens {
  readonly issuer: string;
  readonly executeUrl: string;
  readonly ttlSeconds: number;
  readonly clockToleranceSeconds: number;
  readonly now: () => number;
  mint(input: MintInput): Promise<MintedToken>;
  /** Rejects with `JwtInvalidError` unless the token is a valid capability token for `audience`. */
  verify(token: string, audience: string): Promise<CapabilityClaims>;
}

/** The clock skew capability tokens allow by default, in seconds. */
export const CAPABILITY_CLOCK_TOLERANCE_SECONDS = 5;

export function capabilityTokens(options: CapabilityTokenOptions): CapabilityTokens {
  rejectUnknownKeys("capabilityTokens", options, [
    "keys",
    "issuer",
    "executeUrl",
    "ttlSeconds",
    "clockToleranceSeconds",
    "now",
  ]);
  const ttlSeconds = options.ttlSeconds ?? 120;
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > 3600)
    throw new InvalidOptionsError(
      "capabilityTokens: ttlSeconds must be a whole number from 1 to 3600",
    );
  if (typeof options.executeUrl !== "string" || !URL.canParse(options.executeUrl))
    throw new InvalidOptionsError("capabilityTokens: executeUrl must be an absolute URL");
  const now = options.now ?? Date.now;
  const clockToleranceSeconds = options.clockToleranceSeconds ?? CAPABILITY_CLOCK_TOLERANCE_SECONDS;
  const common = { keys: options.keys, typ: CAPABILITY_TOKEN_TYPE, issuer: options.issuer, now };
  const sign = jwtSigner({ ...common, ttlSeconds });
  const verifyJwt = jwtVerifier({ ...common, clockToleranceSeconds });
  const executeUrl = options.executeUrl;

  return Object.freeze({
    issuer: options.issuer,
    executeUrl,
    ttlSeconds,
    clockToleranceSeconds,
    now,
    async mint(input: MintInput): Promise<MintedToken> {
      const capabilities = [...input.capabilities];
      const jkt = input.jkt;
      if (jkt !== undefined && (typeof jkt !== "string" || !THUMBPRINT.test(jkt)))
        throw new TypeError(
          "capabilityTokens: jkt must be a SHA-256 JWK thumbprint (43 base64url characters)",
        );
      const signed = await sign({
        subject: input.principalId,
        audience: input.audience ?? executeUrl,
        claims: {
          client_id: input.principalId,
          grant_id: input.grantId,
          capabilities,
          scope: capabilities.join(" "),
          ...(jkt === undefined ? {} : { cnf: { jkt } }),
        },
      });
      return {
        token: signed.token,
        jti: signed.jti,
        expiresIn: signed.expiresAt - signed.issuedAt,
        expiresAt: signed.expiresAt,
      };
    },
    async verify(token: string, audience: string): Promise<CapabilityClaims> {
      const { claims } = await verifyJwt(token, { audience });
      const { client_id, grant_id, capabilities, cnf } = claims as Partial<CapabilityClaims>;
      if (
        typeof client_id !== "string" ||
        client_id !== claims.sub ||
        typeof grant_id !== "string" ||
        grant_id === "" ||
        !Array.isArray(capabilities) ||
        capabilities.some((name) => typeof name !== "string") ||
        !validConfirmation(cnf)
      )
        throw new JwtInvalidError("claims", "the capability claims are malformed");
      return claims as CapabilityClaims;
    },
  });
}

/** No `cnf`, or one naming exactly a key thumbprint: a binding we cannot check is refused. */
function validConfirmation(cnf: unknown): boolean {
  if (cnf === undefined) return true;
  if (typeof cnf !== "object" || cnf === null || Array.isArray(cnf)) return false;
  const { jkt } = cnf as { jkt?: unknown };
  return Object.keys(cnf).length === 1 && typeof jkt === "string" && THUMBPRINT.test(jkt);
}
