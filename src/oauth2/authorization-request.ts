import { type ClientSource, lookUpClient } from "./client-lookup.ts";
import type { ClientMetadataPriority } from "./client-metadata-document.ts";
import type { GrantType, OAuthClient } from "./clients.ts";
import { isCodeChallenge } from "./pkce.ts";
import { matchRedirectUri, type RedirectUriPolicy, redirectUriProblem } from "./redirect-uri.ts";
import { parseScope } from "./scope.ts";
import type { OAuthErrorCode } from "./wire.ts";

/**
 * An authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3, RFC 8707, and
 * OpenID Connect Core §3.1.2.1's `prompt` and `max_age`), checked in the order
 * that decides where its errors may go: until the client and its redirect URI
 * are known good, only to a page of the server's own (never a redirect: that
 * would be an open redirector); after, to the client's redirect URI with
 * `state` and `iss` (RFC 9207), always in the query: the one response mode.
 * Request objects (RFC 9101) are refused, never ignored: their parameters
 * would be.
 */

/** The `prompt` values served; `select_account` is answered `account_selection_required`. */
export type Prompt = "none" | "login" | "consent";

/** A request every check passed. */
export interface AuthorizationRequest {
  readonly client: OAuthClient;
  /** The redirect URI exactly as the client sent it (a loopback one with its port). */
  readonly redirectUri: string;
  readonly codeChallenge: string;
  readonly scope: readonly string[];
  readonly resource: string;
  readonly state?: string;
  /** `prompt`'s values (`none` never beside another). */
  readonly prompt: readonly Prompt[];
  /**
   * The time (epoch ms) the person's sign-in must come after: now for
   * `prompt=login` or `max_age=0`, `max_age` seconds ago, or what the request
   * carried back from the sign-in it sent the person to (`SIGNED_IN_AFTER`);
   * the latest of these.
   */
  readonly signedInAfter?: number;
}

/** Why a request is refused, and whether the client may be told through its redirect URI. */
export type AuthorizationRefusal =
  | {
      readonly redirect: false;
      readonly error: PageError;
      readonly description: string;
    }
  | {
      readonly redirect: true;
      readonly redirectUri: string;
      readonly state?: string;
      readonly error: OAuthErrorCode;
      readonly description: string;
    };

/** The errors shown on a page, where the client cannot be told. */
type PageError =
  | "invalid_request"
  | "invalid_client"
  | "request_not_supported"
  | "request_uri_not_supported";

/**
 * What the checks need of the server: where clients are looked up (`clients`
 * within `storeTimeoutMs`; with `clientMetadataDocuments`, an https client id
 * by its document, within the documents' own `timeoutMs`).
 */
export interface AuthorizationRequestPolicy extends ClientSource {
  /**
   * Whose request this is: `"signed_in"` once the endpoint knows a person is
   * signed in, so a document fetch may take the slots held for people.
   *
   * @default "anonymous"
   */
  readonly priority?: ClientMetadataPriority;
  /** The server's clock (epoch ms). */
  readonly now: () => number;
  /** Whether a scope name may be asked for. */
  readonly allowed: (name: string) => boolean;
  /** The resources tokens may be asked for; the first when the request names none. */
  readonly resources: readonly string[];
  /**
   * Which redirect URIs are accepted, whoever registered them.
   *
   * @default RFC 8252's rules (`DEFAULT_REDIRECT_URI_POLICY`)
   */
  readonly redirectUris?: RedirectUriPolicy;
}

/**
 * The parameter a request sent to sign in comes back with, in place of its
 * `prompt=login` and `max_age`: the time (epoch ms) the sign-in must come
 * after. A client could write it by hand, but only to ask more of its own
 * request; one in the future is refused, or no sign-in could ever satisfy it.
 */
export const SIGNED_IN_AFTER = "signed_in_after";

const MAX_STATE_LENGTH = 2048;
const SINGLE = [
  "client_id",
  "redirect_uri",
  "response_type",
  "response_mode",
  "code_challenge",
  "code_challenge_method",
  "scope",
  "state",
  "resource",
  "prompt",
  "max_age",
  "request",
  "request_uri",
  SIGNED_IN_AFTER,
];
const PROMPTS = new Set<string>(["none", "login", "consent", "select_account"]);
// Ten digits of seconds: three centuries, and no number a parser could round.
const SECONDS = /^[0-9]{1,10}$/;
const MILLISECONDS = /^[0-9]{1,15}$/;

/** Checks the query of an authorization request. */
export async function checkAuthorizationRequest(
  query: URLSearchParams,
  policy: AuthorizationRequestPolicy,
): Promise<AuthorizationRequest | AuthorizationRefusal> {
  const page = (error: PageError, description: string) =>
    ({ redirect: false, error, description }) as const;
  // RFC 6749 §3.1: a parameter sent without a value is as if omitted.
  const given = (name: string) => {
    const value = query.get(name);
    return value === null || value === "" ? undefined : value;
  };
  // 1. The client and where it may be sent: any doubt here is answered on a page.
  for (const name of ["client_id", "redirect_uri"])
    if (query.getAll(name).length > 1) return page("invalid_request", `${name} is repeated`);
  const clientId = query.get("client_id");
  if (clientId === null || clientId === "") return page("invalid_request", "client_id is missing");
  const client = await lookUpClient(policy, clientId, policy.priority ?? "anonymous");
  if (client === undefined) return page("invalid_client", "the client is unknown");
  const redirectUri = query.get("redirect_uri");
  const registered = client.redirectUris ?? [];
  if (
    redirectUri === null ||
    redirectUri === "" ||
    !matchRedirectUri(registered, redirectUri, policy.redirectUris)
  ) {
    // A request object may hold the redirect URI: say why it was not read.
    const unread = requestObjectRefusal(given);
    if (unread !== undefined) return page(unread.error, unread.description);
    if (redirectUri === null || redirectUri === "")
      return page("invalid_request", "redirect_uri is missing");
    // Registered, but not accepted by this server (an app's scheme it does not name): say so.
    const refused = registered.includes(redirectUri)
      ? redirectUriProblem(redirectUri, policy.redirectUris)
      : undefined;
    return page(
      "invalid_request",
      refused === undefined
        ? "redirect_uri is not registered for this client"
        : `redirect_uri is registered for this client, but this server refuses it: it has ${refused}`,
    );
  }
  // 2. The rest goes back to the client, with its state.
  const state = query.get("state") ?? undefined;
  const back = (error: OAuthErrorCode, description: string): AuthorizationRefusal => ({
    redirect: true,
    redirectUri,
    ...(state === undefined || state.length > MAX_STATE_LENGTH ? {} : { state }),
    error,
    description,
  });
  for (const name of SINGLE)
    if (query.getAll(name).length > 1) return back("invalid_request", `${name} is repeated`);
  if (state !== undefined && state.length > MAX_STATE_LENGTH)
    return back("invalid_request", "state is too long");
  const unread = requestObjectRefusal(given);
  if (unread !== undefined) return back(unread.error, unread.description);
  if (query.get("response_type") !== "code")
    return back("unsupported_response_type", "response_type must be code");
  // The code goes back in the query (RFC 6749 §4.1.2); no other response mode is served.
  const mode = given("response_mode");
  if (mode !== undefined && mode !== "query")
    return back("invalid_request", "response_mode must be query");
  if (!client.grantTypes.includes("authorization_code" as GrantType))
    return back("unauthorized_client", "this client may not use the authorization code grant");
  const challenge = query.get("code_challenge");
  if (query.get("code_challenge_method") !== "S256" || !isCodeChallenge(challenge))
    return back(
      "invalid_request",
      "PKCE is required: code_challenge with code_challenge_method S256",
    );
  const prompt = parsePrompt(given("prompt"));
  if (typeof prompt === "string") {
    if (prompt === "select_account")
      return back("account_selection_required", "this server offers no account selection");
    return back("invalid_request", prompt);
  }
  const signedInAfter = signInBound(given, prompt, policy.now());
  if (typeof signedInAfter === "string") return back("invalid_request", signedInAfter);
  const scope = parseScope(query.get("scope") ?? undefined, policy.allowed);
  if (scope === undefined) return back("invalid_scope", "the scope names something unknown");
  const resource = query.get("resource") ?? policy.resources[0];
  if (resource === undefined || !policy.resources.includes(resource))
    return back("invalid_target", "resource is not a protected resource of this server");
  return {
    client,
    redirectUri,
    codeChallenge: challenge,
    scope,
    resource,
    ...(state === undefined ? {} : { state }),
    prompt,
    ...(signedInAfter === undefined ? {} : { signedInAfter }),
  };
}

/** RFC 9101, OpenID Connect Core §6.1 and §6.2: request objects are refused, by name. */
function requestObjectRefusal(given: (name: string) => string | undefined):
  | {
      readonly error: "invalid_request" | "request_not_supported" | "request_uri_not_supported";
      readonly description: string;
    }
  | undefined {
  const request = given("request") !== undefined;
  const uri = given("request_uri") !== undefined;
  if (request && uri)
    return { error: "invalid_request", description: "request and request_uri are both given" };
  if (request)
    return { error: "request_not_supported", description: "request objects are not supported" };
  if (uri)
    return {
      error: "request_uri_not_supported",
      description: "request objects by reference are not supported",
    };
  return undefined;
}

/**
 * `prompt`'s values (OpenID Connect Core §3.1.2.1), or why they are refused:
 * `none` beside another value and a value not defined are `invalid_request`;
 * `select_account` is returned as itself, for `account_selection_required`.
 */
function parsePrompt(value: string | undefined): Prompt[] | string {
  if (value === undefined) return [];
  const values = new Set(value.split(" ").filter((part) => part !== ""));
  for (const part of values)
    if (!PROMPTS.has(part)) return "prompt holds a value this server does not define";
  if (values.has("none") && values.size > 1) return "prompt none cannot go with another value";
  if (values.has("select_account")) return "select_account";
  return [...values] as Prompt[];
}

/**
 * The time (epoch ms) a sign-in must come after, from `prompt=login`,
 * `max_age` (0 is `prompt=login`) and `SIGNED_IN_AFTER`: the latest of them;
 * or why one of them is refused.
 */
function signInBound(
  given: (name: string) => string | undefined,
  prompt: readonly Prompt[],
  now: number,
): number | undefined | string {
  let bound: number | undefined = prompt.includes("login") ? now : undefined;
  const later = (at: number) => {
    bound = bound === undefined ? at : Math.max(bound, at);
  };
  const maxAge = given("max_age");
  if (maxAge !== undefined) {
    if (!SECONDS.test(maxAge)) return "max_age must be a number of seconds";
    later(now - Number(maxAge) * 1000);
  }
  const after = given(SIGNED_IN_AFTER);
  if (after !== undefined) {
    if (!MILLISECONDS.test(after) || Number(after) > now)
      return `${SIGNED_IN_AFTER} must be a time that has passed`;
    later(Number(after));
  }
  return bound;
}

/**
 * The request to come back to after a sign-in that `signedInAfter` asked for:
 * `login` taken out of `prompt` and a well-formed `max_age` dropped, both
 * replaced by `SIGNED_IN_AFTER`, so the request asks for that sign-in and no
 * newer one (which would send the person round again). The rest is kept as
 * the client sent it.
 */
export function requestAfterSignIn(query: URLSearchParams, signedInAfter: number): URLSearchParams {
  const out = new URLSearchParams(query);
  // A repeated parameter is left as it came, to be refused when the request is checked.
  const prompt = query.getAll("prompt");
  if (prompt.length === 1) {
    const rest = (prompt[0] as string).split(" ").filter((part) => part !== "" && part !== "login");
    if (rest.length === 0) out.delete("prompt");
    else out.set("prompt", rest.join(" "));
  }
  const maxAge = query.getAll("max_age");
  if (maxAge.length === 1 && SECONDS.test(maxAge[0] as string)) out.delete("max_age");
  out.set(SIGNED_IN_AFTER, String(signedInAfter));
  return out;
}

/** Whether the request asks that no page be shown (`prompt` holding `none`), before any check. */
export function asksNoPage(query: URLSearchParams): boolean {
  return query.getAll("prompt").some((value) => value.split(" ").includes("none"));
}

/**
 * The redirect answering an authorization request: `params` added to the
 * client's redirect URI (its own query kept), with `state` and `iss`.
 */
export function authorizationRedirect(
  redirectUri: string,
  issuer: string,
  params: Readonly<Record<string, string>>,
  state: string | undefined,
): Response {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.append(name, value);
  if (state !== undefined) url.searchParams.append("state", state);
  url.searchParams.append("iss", issuer);
  return new Response(null, {
    status: 303,
    headers: { location: url.href, "cache-control": "no-store", "referrer-policy": "no-referrer" },
  });
}
