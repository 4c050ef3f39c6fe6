/**
 * The agent endpoints' error vocabulary (Agent Auth Protocol shape
 * `{"error", "message"}`): protocol data, kept apart from thrown errors.
 */
export type AgentErrorCode =
  | "invalid_request"
  | "wrong_location"
  | "authentication_required"
  | "invalid_jwt"
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

/** `WWW-Authenticate` challenges a 401 from an agent endpoint carries. */
export function agentChallenges(discoveryUrl: string, invalidToken: boolean): string[] {
  return [
    ...(invalidToken ? ['Bearer error="invalid_token"'] : ["Bearer"]),
    `AgentAuth discovery="${discoveryUrl}"`,
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
 * discovery (`invalid_token` when the token it presented was refused).
 */
export function agentRefusal(
  refusal: {
    readonly error: AgentErrorCode;
    readonly message: string;
    readonly extra?: Readonly<Record<string, unknown>>;
  },
  discoveryUrl: string,
): Response {
  const { error, message, extra } = refusal;
  const unauthorized = error === "authentication_required" || error === "invalid_jwt";
  return agentError(error, message, {
    ...(extra === undefined ? {} : { extra }),
    ...(unauthorized ? { challenges: agentChallenges(discoveryUrl, error === "invalid_jwt") } : {}),
  });
}

/** A JSON body nobody may cache. */
export function agentJson(body: unknown, cacheControl = "no-store"): Response {
  return new Response(JSON.stringify(body), {
    headers: { "content-type": "application/json", "cache-control": cacheControl },
  });
}
