import { challenge } from "../core/challenge.ts";

/**
 * The OAuth error vocabulary (RFC 6749 §4.1.2.1 and §5.2, RFC 8628 §3.5, RFC 7591 §3.2.2,
 * OpenID Connect Core §3.1.2.6) and the response shapes of the endpoints. Protocol data, kept
 * apart from thrown errors.
 */
export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "invalid_scope"
  | "invalid_target"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "authorization_pending"
  | "slow_down"
  | "access_denied"
  | "unsupported_response_type"
  | "expired_token"
  | "server_error"
  | "temporarily_unavailable"
  // RFC 9449 §5, §8
  | "invalid_dpop_proof"
  | "use_dpop_nonce"
  // RFC 7591 §3.2.2
  | "invalid_redirect_uri"
  | "invalid_client_metadata"
  // OpenID Connect Core §3.1.2.6: the authorization endpoint's answers to prompt, max_age and
  // request objects
  | "login_required"
  | "consent_required"
  | "account_selection_required"
  | "request_not_supported"
  | "request_uri_not_supported";

/** What a grant callback answers instead of a token: the error and a client-safe description. */
export interface OAuthFailure {
  readonly error: OAuthErrorCode;
  readonly description?: string;
}

/** RFC 6749 §5.1 successful token response; a refresh token only from the authorization-code grants. */
export interface TokenResponseBody {
  readonly access_token: string;
  readonly token_type: "Bearer" | "DPoP";
  readonly expires_in: number;
  readonly scope?: string;
  readonly refresh_token?: string;
}

/** RFC 8628 §3.2 device authorization response. */
export interface DeviceAuthorizationResponseBody {
  readonly device_code: string;
  readonly user_code: string;
  readonly verification_uri: string;
  readonly verification_uri_complete: string;
  readonly expires_in: number;
  readonly interval: number;
}

const STATUS: Partial<Record<OAuthErrorCode, number>> = {
  invalid_client: 401,
  server_error: 500,
  temporarily_unavailable: 503,
};

// RFC 6749 §5.2: error_description holds only %x20-21 / %x23-5B / %x5D-7E (no `"` or `\`).
const NOT_IN_DESCRIPTION = /[^\x20\x21\x23-\x5b\x5d-\x7e]/g;

const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" };

/** A JSON body nobody may cache: every token endpoint answer. */
export function noStoreJson(
  body: unknown,
  status = 200,
  headers?: ConstructorParameters<typeof Headers>[0],
): Response {
  const out = new Headers(headers);
  out.set("content-type", "application/json");
  for (const [name, value] of Object.entries(NO_STORE)) out.set(name, value);
  return new Response(JSON.stringify(body), { status, headers: out });
}

const CLIENT_CHALLENGE = challenge("Basic", { realm: "oauth", charset: "UTF-8" });

/**
 * An RFC 6749 §5.2 error response. `invalid_client` is 401 with a
 * `WWW-Authenticate: Basic` challenge whichever way the client tried (a 401
 * must name a scheme, RFC 9110 §15.5.2; Basic is the one clients can use).
 */
export function oauthError(
  error: OAuthErrorCode,
  description?: string,
  options: { readonly status?: number } = {},
): Response {
  const headers = new Headers();
  if (error === "invalid_client") headers.set("www-authenticate", CLIENT_CHALLENGE);
  if (error === "temporarily_unavailable") headers.set("retry-after", "1");
  const body =
    description === undefined
      ? { error }
      : { error, error_description: description.replace(NOT_IN_DESCRIPTION, "?") };
  return noStoreJson(body, options.status ?? STATUS[error] ?? 400, headers);
}
