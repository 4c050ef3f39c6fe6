import { challenge } from "../core/challenge.ts";

/**
 * The agent endpoints' error vocabulary (Agent Auth Protocol shape
 * `{"error", "message"}`): protocol data, kept apart from thrown errors.
 */
export type AgentErrorCode =
  | "invalid_request"
  | "wrong_location"
  | "authentication_required"
  | "invalid_jwt"
  | "invalid_dpop_proof"
  | "use_dpop_nonce"
  | "capability_not_granted"
  | "grant_revoked"
  | "grant_expired"
  | "capability_not_found"
  | "rate_limited"
  | "temporarily_unavailable"
  | "internal_error";

const STATUS: Record<AgentErrorCode, number> = {
  invalid_request: 400,
  wrong_location: 400,
  authentication_required: 401,
  invalid_jwt: 401,
  invalid_dpop_proof: 401,
  use_dpop_nonce: 401,
  capability_not_granted: 403,
  grant_revoked: 403,
  grant_expired: 403,
  capability_not_found: 404,
  rate_limited: 429,
  temporarily_unavailable: 503,
  internal_error: 500,
};

/** The protocol version the discovery document announces. */
export const AGENT_AUTH_VERSION = "1.0-draft";

/** How a 401 from an endpoint that accepts DPoP challenges (RFC 9449 §7.1). */
export interface DpopChallenge {
  /** The accepted proof algorithms, space-separated. */
  readonly algorithms: string;
  /** Whether the Bearer scheme is still accepted. */
  readonly bearer: boolean;
  /** Whether the error belongs to the DPoP challenge rather than the Bearer one. */
  readonly errorOnDpop: boolean;
  /** The current server nonce, sent as `DPoP-Nonce`. */
  readonly nonce?: string;
}

// The RFC 6750 / RFC 9449 error a challenge names for each agent error.
const CHALLENGE_ERROR: Partial<Record<AgentErrorCode, string>> = {
  invalid_jwt: "invalid_token",
  invalid_dpop_proof: "invalid_dpop_proof",
  use_dpop_nonce: "use_dpop_nonce",
};

/** Where a 401 sends the agent: discovery, and the resource's RFC 9728 metadata when it has one. */
export interface ChallengeTargets {
  readonly discovery: string;
  readonly resourceMetadata?: string;
  /** The scopes to ask for (RFC 6750 §3 `scope`), space-separated; named beside the metadata. */
  readonly scope?: string;
}

/**
 * `WWW-Authenticate` challenges a 401 from an agent endpoint carries: `Bearer`
 * (when accepted), then `DPoP` with its algorithms (when DPoP is on), then
 * `AgentAuth` naming discovery. The first challenge names the resource's
 * metadata (RFC 9728 §5.1), as MCP clients read only the first; it comes
 * after `error`, so the challenge still begins as it did without metadata.
 */
export function agentChallenges(
  targets: ChallengeTargets,
  invalidToken: boolean,
  dpop?: DpopChallenge,
  error: AgentErrorCode = "invalid_jwt",
): string[] {
  const pointer = {
    resource_metadata: targets.resourceMetadata,
    scope:
      targets.resourceMetadata === undefined || targets.scope === "" ? undefined : targets.scope,
  };
  const named = invalidToken
    ? dpop === undefined
      ? "invalid_token"
      : CHALLENGE_ERROR[error]
    : undefined;
  const onDpop = dpop !== undefined && (dpop.errorOnDpop || !dpop.bearer);
  const challenges: string[] = [];
  if (dpop === undefined || dpop.bearer)
    challenges.push(challenge("Bearer", { error: onDpop ? undefined : named, ...pointer }));
  if (dpop !== undefined)
    challenges.push(
      challenge("DPoP", {
        error: onDpop ? named : undefined,
        algs: dpop.algorithms,
        ...(dpop.bearer ? {} : pointer),
      }),
    );
  challenges.push(challenge("AgentAuth", { discovery: targets.discovery }));
  return challenges;
}

/**
 * The challenges of a 403 for a token whose scope lacks what was asked
 * (RFC 6750 §3.1 `insufficient_scope`; MCP's step-up): under each scheme the
 * resource accepts (`Bearer`, and `DPoP` with its algorithms when DPoP is on;
 * `DPoP` alone when it is required), the scope to ask for and the resource's
 * metadata, so that a client steps up with whichever scheme it holds.
 */
export function insufficientScopeChallenges(
  resourceMetadata: string,
  scope: string,
  dpop?: Pick<DpopChallenge, "algorithms" | "bearer">,
): string[] {
  const params = { scope, resource_metadata: resourceMetadata };
  const error = "insufficient_scope";
  return [
    ...(dpop === undefined || dpop.bearer ? [challenge("Bearer", { error, ...params })] : []),
    ...(dpop === undefined ? [] : [challenge("DPoP", { error, algs: dpop.algorithms, ...params })]),
  ];
}

/** An agent endpoint error: `{"error", "message", ...extra}`, never cached. */
export function agentError(
  error: AgentErrorCode,
  message: string,
  options: {
    readonly status?: number;
    readonly extra?: Readonly<Record<string, unknown>>;
    readonly challenges?: readonly string[];
    readonly retryAfter?: number;
  } = {},
): Response {
  const headers = new Headers({ "content-type": "application/json", "cache-control": "no-store" });
  for (const challenge of options.challenges ?? []) headers.append("www-authenticate", challenge);
  if (options.retryAfter !== undefined) headers.set("retry-after", String(options.retryAfter));
  return new Response(JSON.stringify({ ...options.extra, error, message }), {
    status: options.status ?? STATUS[error],
    headers,
  });
}

/**
 * The answer to a refused agent; a 401 carries the challenges that send it to
 * discovery (`invalid_token` when the token it presented was refused), and,
 * where DPoP is on, the DPoP challenge and the current nonce.
 */
export function agentRefusal(
  refusal: {
    readonly error: AgentErrorCode;
    readonly message: string;
    readonly extra?: Readonly<Record<string, unknown>>;
  },
  targets: ChallengeTargets,
  dpop?: DpopChallenge,
): Response {
  const { error, message, extra } = refusal;
  const unauthorized = STATUS[error] === 401;
  const invalid = unauthorized && error !== "authentication_required";
  const response = agentError(error, message, {
    ...(extra === undefined ? {} : { extra }),
    ...(unauthorized ? { challenges: agentChallenges(targets, invalid, dpop, error) } : {}),
  });
  if (dpop?.nonce !== undefined && (error === "use_dpop_nonce" || dpop.errorOnDpop))
    response.headers.set("dpop-nonce", dpop.nonce);
  return response;
}

/** A JSON body nobody may cache. */
export function agentJson(body: unknown, cacheControl = "no-store"): Response {
  return new Response(JSON.stringify(body), {
    headers: { "content-type": "application/json", "cache-control": cacheControl },
  });
}
