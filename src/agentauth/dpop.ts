import { dpopHeader } from "../core/dpop-header.ts";
import {
  DpopNonceRequiredError,
  DpopProofInvalidError,
  InvalidOptionsError,
} from "../core/errors.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import {
  type DpopAlgorithm,
  type DpopNonces,
  type DpopProofVerifier,
  dpopAlgorithms,
  dpopNonces,
  dpopProofVerifier,
} from "../jwt/index.ts";
import type { AgentRuntime } from "./runtime.ts";
import type { AgentDenial, OpenSessionSteps } from "./session.ts";
import type { CapabilityClaims } from "./token.ts";
import type { DpopChallenge } from "./wire.ts";

/**
 * DPoP (RFC 9449) for capability tokens; everything is off unless set.
 *
 * @example
 * ```ts
 * const dpop: AgentDpopOptions = {
 *   algorithms: ["ES256", "EdDSA"],
 *   proofMaxAgeSeconds: 60,
 *   nonce: { secret: process.env.DPOP_NONCE_SECRET!, rotateSeconds: 60 },
 * };
 * ```
 */
export interface AgentDpopOptions {
  /**
   * Proof algorithms accepted; `EdDSA` also admits `Ed25519`. Never `none` nor a symmetric one.
   *
   * @default ["ES256", "EdDSA"]
   */
  readonly algorithms?: readonly DpopAlgorithm[];
  /**
   * Every capability token must be DPoP-bound: Bearer is refused.
   *
   * @default false
   */
  readonly required?: boolean;
  /**
   * The key of the approval poll binds the grant, so later refreshes must prove it.
   *
   * @default true
   */
  readonly bindGrant?: boolean;
  /**
   * How old a proof's `iat` may be, in seconds (1 to 300); the future is bounded by the clock tolerance.
   *
   * @default 60
   */
  readonly proofMaxAgeSeconds?: number;
  /**
   * Stateless server nonces; the same secret on every instance.
   *
   * @default none — proofs carry no nonce, and one they carry is refused
   */
  readonly nonce?: {
    /** HMAC key: a string of 32 or more characters, or 32 or more bytes. */
    readonly secret: string | Uint8Array;
    /**
     * Every proof must carry a current nonce.
     *
     * @default false
     */
    readonly required?: boolean;
    /**
     * Nonce slot length, in seconds (10 to 3600); the current and the previous slot are accepted.
     *
     * @default 60
     */
    readonly rotateSeconds?: number;
  };
}

/** `AgentDpopOptions` checked once, with the verifier and nonces they make. */
export interface DpopSettings {
  /** Accepted algorithms, `Ed25519` added beside `EdDSA`. */
  readonly algorithms: readonly DpopAlgorithm[];
  readonly required: boolean;
  readonly bindGrant: boolean;
  readonly proofMaxAgeSeconds: number;
  readonly clockToleranceSeconds: number;
  readonly nonces?: DpopNonces;
  readonly verifyProof: DpopProofVerifier;
}

const WHERE = "agentAuth: dpop";

/**
 * Checks `options` (unknown keys, misspelt ones included, throw
 * `InvalidOptionsError` naming them) and builds the proof verifier and nonces
 * with the capability tokens' clock and tolerance.
 */
export function dpopSettings(
  options: AgentDpopOptions,
  clock: { readonly clockToleranceSeconds: number; readonly now: () => number },
): DpopSettings {
  if (typeof options !== "object" || options === null || Array.isArray(options))
    throw new InvalidOptionsError(`${WHERE} must be an object`);
  rejectUnknownKeys(WHERE, options, [
    "algorithms",
    "required",
    "bindGrant",
    "proofMaxAgeSeconds",
    "nonce",
  ]);
  const required = flag("required", options.required, false);
  const bindGrant = flag("bindGrant", options.bindGrant, true);
  const algorithms = dpopAlgorithms(WHERE, options.algorithms);
  const proofMaxAgeSeconds = options.proofMaxAgeSeconds ?? 60;
  if (!Number.isInteger(proofMaxAgeSeconds) || proofMaxAgeSeconds < 1 || proofMaxAgeSeconds > 300)
    throw new InvalidOptionsError(
      `${WHERE}: proofMaxAgeSeconds must be a whole number from 1 to 300`,
    );
  const nonce = options.nonce;
  let nonces: DpopNonces | undefined;
  let nonceRequired = false;
  if (nonce !== undefined) {
    if (typeof nonce !== "object" || nonce === null)
      throw new InvalidOptionsError(`${WHERE}: nonce must be an object`);
    rejectUnknownKeys(`${WHERE}.nonce`, nonce, ["secret", "required", "rotateSeconds"]);
    nonceRequired = flag("nonce.required", nonce.required, false);
    nonces = dpopNonces({
      secret: nonce.secret,
      ...(nonce.rotateSeconds === undefined ? {} : { rotateSeconds: nonce.rotateSeconds }),
      now: clock.now,
    });
  }
  const verifyProof = dpopProofVerifier({
    algorithms,
    maxAgeSeconds: proofMaxAgeSeconds,
    clockToleranceSeconds: clock.clockToleranceSeconds,
    ...(nonces === undefined ? {} : { nonces, requireNonce: nonceRequired }),
    now: clock.now,
  });
  return Object.freeze({
    algorithms: Object.freeze(algorithms),
    required,
    bindGrant,
    proofMaxAgeSeconds,
    clockToleranceSeconds: clock.clockToleranceSeconds,
    ...(nonces === undefined ? {} : { nonces }),
    verifyProof,
  });
}

function flag(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean")
    throw new InvalidOptionsError(`${WHERE}: ${name} must be a boolean`);
  return value;
}

/** Whether the request speaks DPoP: the `DPoP` scheme or a `DPoP` header. */
export function usesDpop(request: Request): boolean {
  return (
    request.headers.has("dpop") || /^dpop(?: |$)/i.test(request.headers.get("authorization") ?? "")
  );
}

/**
 * The resource-side check of a presented capability token (RFC 9449 §7),
 * run before its `jti` is consumed: the scheme rules (a bound token only
 * under `DPoP` with a proof, an unbound one never with DPoP, Bearer refused
 * when DPoP is required), the proof bound to this method, this endpoint's
 * configured URL, this token and its `cnf.jkt`; then, once the token's own
 * `jti` is spent, the proof's `jti` consumed in the replay store.
 */
export function dpopCheck(
  runtime: AgentRuntime,
  settings: DpopSettings,
  request: Request,
  token: string,
  url: string,
): Required<OpenSessionSteps> {
  let verified: { jkt: string; jti: string; iat: number } | undefined;
  const beforeConsume = async (claims: CapabilityClaims): Promise<AgentDenial | undefined> => {
    const who = { principalId: claims.sub, grantId: claims.grant_id };
    const scheme = /^dpop /i.test(request.headers.get("authorization") ?? "") ? "DPoP" : "Bearer";
    const proof = dpopHeader(request);
    if (proof === undefined)
      return proofRefused("more than one DPoP header, or one over 4096 bytes", who);
    const jkt = claims.cnf?.jkt;
    if (jkt === undefined) {
      if (scheme === "DPoP" || proof !== null)
        return tokenRefused(
          "the capability token is not sender-constrained, but DPoP was presented",
          who,
        );
      if (settings.required) return tokenRefused("a DPoP-bound capability token is required", who);
      return undefined;
    }
    // RFC 9449 §7.2: a bound token is never accepted as a bearer token.
    if (scheme !== "DPoP" || proof === null)
      return tokenRefused(
        "the capability token is bound to a key: present it under the DPoP scheme with a proof",
        who,
      );
    try {
      verified = await settings.verifyProof(proof, {
        method: request.method,
        url,
        accessToken: token,
        jkt,
      });
    } catch (error) {
      if (error instanceof DpopNonceRequiredError)
        return {
          error: "use_dpop_nonce",
          message: "use the server's DPoP nonce",
          challenge: "DPoP",
          ...who,
        };
      if (error instanceof DpopProofInvalidError)
        return proofRefused("the DPoP proof is invalid", who);
      throw error;
    }
    return undefined;
  };
  // Recorded only once the token was spent by this request: a proof carries the token's hash
  // (`ath`), so it is worthless after that token, and a spent token adds nothing to the store.
  const afterConsume = async (claims: CapabilityClaims): Promise<AgentDenial | undefined> => {
    if (verified === undefined) return undefined;
    if (await spendProof(runtime, settings, verified)) return undefined;
    return proofRefused("the DPoP proof was already used", {
      principalId: claims.sub,
      grantId: claims.grant_id,
    });
  };
  return { beforeConsume, afterConsume };
}

/**
 * Records a verified proof's id in the replay store, under its own prefix
 * (never a capability token's `jti`); `false` when it was there already.
 * Shared across instances with the store, so a proof is used once anywhere.
 */
export function spendProof(
  runtime: AgentRuntime,
  settings: DpopSettings,
  proof: { readonly jkt: string; readonly jti: string; readonly iat: number },
): Promise<boolean> {
  const keepUntil = proofKeptUntil(proof.iat, settings);
  return runtime.store(() =>
    runtime.replay.setIfAbsent(`dpop:${proof.jkt}:${proof.jti}`, keepUntil, runtime.now()),
  );
}

/**
 * Until when (epoch ms) a used proof's id is kept: as long as any instance
 * could still accept its `iat`, with the clock skew between instances counted
 * as for capability tokens (see `usedTokenKeptUntil`).
 */
export function proofKeptUntil(iatSeconds: number, settings: DpopSettings): number {
  return (iatSeconds + settings.proofMaxAgeSeconds + 3 * settings.clockToleranceSeconds) * 1000;
}

function tokenRefused(message: string, who: Partial<AgentDenial>): AgentDenial {
  return { error: "invalid_jwt", message, challenge: "DPoP", ...who };
}

function proofRefused(message: string, who: Partial<AgentDenial>): AgentDenial {
  return { error: "invalid_dpop_proof", message, challenge: "DPoP", ...who };
}

/**
 * The schemes a DPoP-aware endpoint challenges with: `DPoP` with its
 * algorithms, and `Bearer` unless DPoP is required.
 */
export function dpopSchemes(settings: DpopSettings): Pick<DpopChallenge, "algorithms" | "bearer"> {
  return { algorithms: settings.algorithms.join(" "), bearer: !settings.required };
}

/** How a 401 at a DPoP-aware endpoint challenges, and the nonce it hands out. */
export async function dpopChallenge(
  settings: DpopSettings,
  request: Request | undefined,
  denial: AgentDenial,
): Promise<DpopChallenge> {
  const onDpop =
    denial.challenge === "DPoP" ||
    (request !== undefined && /^dpop /i.test(request.headers.get("authorization") ?? ""));
  return {
    ...dpopSchemes(settings),
    errorOnDpop: onDpop,
    ...(settings.nonces === undefined ? {} : { nonce: await settings.nonces.current() }),
  };
}

/** Adds the current `DPoP-Nonce` to the answer to a DPoP request, when nonces are on. */
export async function withDpopNonce(
  runtime: AgentRuntime,
  request: Request,
  response: Response,
): Promise<Response> {
  const nonces = runtime.dpop?.nonces;
  if (nonces === undefined || !usesDpop(request)) return response;
  const nonce = await nonces.current();
  try {
    response.headers.set("dpop-nonce", nonce);
    return response;
  } catch {
    // Immutable headers (a fetched or redirect response): answer a copy.
    const copy = new Response(response.body, response);
    copy.headers.set("dpop-nonce", nonce);
    return copy;
  }
}
