import { defaultPolicyWith } from "../core/content-security-policy.ts";
import { type RequestDeadline, withinDeadline } from "../core/deadline.ts";
import { randomToken } from "../core/encoding.ts";
import {
  AccessDeniedError,
  AuthenticationRequiredError,
  InvalidOptionsError,
  JwtInvalidError,
  StoreFullError,
  StoreUnavailableError,
} from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { html, htmlResponse } from "../core/html.ts";
import { methodNotAllowed } from "../core/http-method.ts";
import {
  functionOptions,
  integerOption,
  mountPathOption,
  rejectUnknownKeys,
  timeoutOption,
} from "../core/options.ts";
import { problemResponse, reportError } from "../core/problem.ts";
import { withHeaders } from "../core/response.ts";
import { jwtSigner, jwtVerifier, type KeySet } from "../jwt/index.ts";
import {
  type AuthorizationCodeStore,
  type AuthorizationRequest,
  type AuthorizationRequestPolicy,
  approverOf,
  asksNoPage,
  authorizationRedirect,
  type ClientMetadataDocuments,
  type CodeGrantIssue,
  checkAuthorizationRequest,
  checkDynamicRegistrationOptions,
  clientMetadataDocumentsOption,
  type DynamicRegistrationOptions,
  type DynamicRegistrationSettings,
  type IssuedToken,
  issueAuthorizationCode,
  type OAuthFailure,
  type RedirectUriOptions,
  type RedirectUriPolicy,
  readOAuthParameters,
  redirectUriPolicy,
  refreshTokenTtlOption,
  requestAfterSignIn,
} from "../oauth2/index.ts";
import { toolNames } from "./capabilities.ts";
import {
  approveGrant,
  approverRoom,
  DEFAULT_GRANT_LIMITS,
  type GrantRefusal,
} from "./grant-approval.ts";
import { effectiveStatus, type Grant, keyFits } from "./grants.ts";
import { resourceTarget } from "./refresh.ts";
import type { AgentRuntime } from "./runtime.ts";

/**
 * The authorization endpoint (RFC 6749 §4.1, PKCE S256 only) for MCP clients
 * and any other authorization-code client: the signed-in human sees who asks
 * for what, in the application's own page, and approves or denies; an
 * approval makes one grant, tied to the client, never to the human, and a
 * code bound to the client, its redirect URI, its PKCE challenge and the
 * resource, single use, for 60 seconds.
 */

/** What the consent page shows, and the token its form must post back. */
export interface ConsentRequest {
  readonly clientId: string;
  /** The client's own name, when it gave one: show it as a claim, beside `redirectHost`. */
  readonly clientName?: string;
  /** Where the human will be sent back: the redirect URI's host (or its scheme, for an app's own). */
  readonly redirectHost: string;
  /** What the client asks for, as the human should read it. */
  readonly capabilities: readonly { readonly name: string; readonly description: string }[];
  /** The resource the tokens will be for. */
  readonly resource: string;
  /** Put it in the form as the hidden field `consent`; an answer without it is refused. */
  readonly consentToken: string;
  /** Where the form posts (`POST`, with `consent`, `action` = `approve` or `deny`, and the CSRF token). */
  readonly action: string;
}

/**
 * The authorization-code grant of `agentAuth`, for MCP clients: the
 * authorization endpoint, the `authorization_code` and `refresh_token`
 * grants, and Client ID Metadata Documents.
 *
 * @example
 * ```ts
 * import { signedInAt } from "portcullis";
 * import type { AgentAuthorizationCodeOptions } from "portcullis/agentauth";
 *
 * const authorizationCode: AgentAuthorizationCodeOptions = {
 *   consentPage: (request, consent) => renderConsent(request, consent), // your page, your dress
 *   signedInAt,
 *   signInPath: "/login",
 * };
 * ```
 */
export interface AgentAuthorizationCodeOptions {
  /** Renders the consent page: the client's name and redirect host, the capabilities, a form. */
  readonly consentPage: (request: Request, consent: ConsentRequest) => Response | Promise<Response>;
  /**
   * Renders the page for a request that cannot go back to its client (unknown
   * client or redirect URI, status 400), that this human may not approve
   * (status 403, `error` `access_denied`: they hold as many grants as
   * allowed, see `maxGrantsPerApprover`; the description says so, for your
   * page to link to the human's list of approved agents), or that the server
   * could not answer in time (status 503: a store or the client's metadata
   * document failed or was slow, or `requestTimeoutMs` passed; say to try
   * again). Answer with `status`.
   *
   * @default a minimal HTML page with `status`
   */
  readonly errorPage?: (
    request: Request,
    error: { readonly error: string; readonly description: string; readonly status: number },
  ) => Response | Promise<Response>;
  /** When the human of this request last signed in (epoch ms): `signedInAt` from `portcullis`. */
  readonly signedInAt: (request: Request) => number | undefined;
  /** Where a human whose sign-in is not recent is sent, with `next` back to the request. */
  readonly signInPath: string;
  /**
   * How recent the sign-in must be to approve, in seconds.
   *
   * @default 600
   */
  readonly maxSignInAgeSeconds?: number;
  /**
   * Client ids that are https URLs are looked up as Client ID Metadata Documents.
   *
   * @default none — only registered clients (with `redirectUris`)
   */
  readonly clientMetadataDocuments?: ClientMetadataDocuments;
  /**
   * RFC 7591 dynamic client registration, for MCP clients that cannot use a
   * Client ID Metadata Document: public clients only, bounded and rate limited.
   *
   * @default off — no registration endpoint
   */
  readonly dynamicRegistration?: DynamicRegistrationOptions;
  /**
   * Which redirect URIs the server accepts beyond RFC 8252's rules: named
   * single-label private-use schemes (`privateUseSchemes: ["cursor"]`), and
   * `localhost` on any port (`localhostAnyPort`). One policy for every
   * client: registered in code, registered dynamically (refused there at
   * once) and named by a metadata document; the authorization endpoint
   * applies it to every request.
   *
   * @default { privateUseSchemes: [], localhostAnyPort: false } — reversed domain names only, and localhost on its registered port
   */
  readonly redirectUris?: RedirectUriOptions;
  /**
   * Refresh token lifetime, in seconds; a refresh never outlives the grant.
   *
   * @default 2_592_000 (30 days)
   */
  readonly refreshTokenTtlSeconds?: number;
  /**
   * Where the authorization endpoint is served.
   *
   * @default "/oauth/authorize"
   */
  readonly path?: string;
  /**
   * The one deadline of a request to the authorization endpoint, in ms: the
   * client's metadata document (fetched within its own `timeoutMs`, not the
   * store timeout) and every store call fit in it. Past it, the person is
   * shown the error page with status 503, to try again. Longer than the
   * documents' `timeoutMs`.
   *
   * @default 10_000, or the documents' `timeoutMs` + 5000 when that is longer
   */
  readonly requestTimeoutMs?: number;
}

/** `AgentAuthorizationCodeOptions` checked. */
export interface AuthorizationCodeSetup {
  readonly options: AgentAuthorizationCodeOptions;
  readonly path: string;
  readonly maxSignInAgeMs: number;
  readonly refreshTokenTtlSeconds: number;
  readonly requestTimeoutMs: number;
  readonly redirectUris: RedirectUriPolicy;
  readonly dynamicRegistration?: DynamicRegistrationSettings;
}

const WHERE = "agentAuth: authorizationCode";

export function checkAuthorizationCodeOptions(
  options: AgentAuthorizationCodeOptions,
): AuthorizationCodeSetup {
  if (typeof options !== "object" || options === null)
    throw new InvalidOptionsError(`${WHERE} must be an object`);
  rejectUnknownKeys(WHERE, options, [
    "consentPage",
    "errorPage",
    "signedInAt",
    "signInPath",
    "maxSignInAgeSeconds",
    "clientMetadataDocuments",
    "dynamicRegistration",
    "redirectUris",
    "refreshTokenTtlSeconds",
    "path",
    "requestTimeoutMs",
  ]);
  functionOptions(
    WHERE,
    options,
    ["consentPage", "errorPage", "signedInAt"],
    ["consentPage", "signedInAt"],
  );
  mountPathOption(WHERE, "signInPath", options.signInPath);
  const documents = options.clientMetadataDocuments;
  clientMetadataDocumentsOption(WHERE, documents);
  const documentMs = documents?.timeoutMs ?? 0;
  const requestTimeoutMs = timeoutOption(
    WHERE,
    "requestTimeoutMs",
    options.requestTimeoutMs,
    Math.max(10_000, documentMs + 5000),
  );
  if (requestTimeoutMs <= documentMs)
    throw new InvalidOptionsError(
      `${WHERE}: requestTimeoutMs (${requestTimeoutMs}) must be longer than clientMetadataDocuments' timeoutMs (${documentMs}), or no slow document could ever be shown`,
    );
  return {
    options,
    path: mountPathOption(WHERE, "path", options.path ?? "/oauth/authorize"),
    requestTimeoutMs,
    maxSignInAgeMs:
      integerOption(WHERE, "maxSignInAgeSeconds", options.maxSignInAgeSeconds, 600, 30, 86_400) *
      1000,
    refreshTokenTtlSeconds: refreshTokenTtlOption(WHERE, options.refreshTokenTtlSeconds),
    redirectUris: redirectUriPolicy(`${WHERE}: redirectUris`, options.redirectUris),
    ...(options.dynamicRegistration === undefined
      ? {}
      : {
          dynamicRegistration: checkDynamicRegistrationOptions(
            `${WHERE}: dynamicRegistration`,
            options.dynamicRegistration,
          ),
        }),
  };
}

/** The `typ` of consent tokens: never taken for another token. */
const CONSENT_TYPE = "portcullis-consent+jwt";
const CODE_LIFETIME_MS = 60_000;
const CONSENT_LIFETIME_SECONDS = 600;

/** What the authorization endpoint is built from. */
export interface AuthorizeEndpoint {
  readonly runtime: AgentRuntime;
  readonly setup: AuthorizationCodeSetup;
  readonly codes: AuthorizationCodeStore;
  readonly policy: AuthorizationRequestPolicy;
  readonly keys: KeySet;
  readonly grantTtlSeconds: number;
}

/** `GET` asks the human; `POST` (the consent form, behind the chain's session and CSRF) answers. */
export function authorizeHandler(endpoint: AuthorizeEndpoint): Handler {
  const { runtime, setup } = endpoint;
  const url = new URL(setup.path, runtime.urls.issuer).href;
  const common = {
    keys: endpoint.keys,
    typ: CONSENT_TYPE,
    issuer: runtime.urls.issuer,
    now: runtime.now,
  };
  const consent = {
    sign: jwtSigner({ ...common, ttlSeconds: CONSENT_LIFETIME_SECONDS }),
    verify: jwtVerifier({ ...common, clockToleranceSeconds: 0 }),
    url,
  };
  const https = url.startsWith("https:");
  return async (request) => {
    if (request.method !== "GET" && request.method !== "POST") return methodNotAllowed("GET, POST");
    try {
      // One deadline for everything the request does; a person waits for this page.
      return asPage(
        await withinDeadline(setup.requestTimeoutMs, "the authorization request", (deadline) =>
          request.method === "GET"
            ? ask(endpoint, consent, request)
            : answer(endpoint, consent, request, deadline),
        ),
        https,
      );
    } catch (error) {
      // The chain's rule should have asked for a sign-in; without one, nobody is asked anything.
      if (error instanceof AuthenticationRequiredError)
        return problemResponse(401, { detail: "Sign in to approve a client." });
      if (error instanceof AccessDeniedError)
        return problemResponse(403, { detail: "Only a signed-in person may approve a client." });
      // A person is waiting: a page to try again, never a body meant for programs.
      if (error instanceof StoreUnavailableError)
        return asPage(await tryAgainPage(endpoint, request), https);
      reportError(runtime.onError, error, request);
      return problemResponse(500);
    }
  };
}

/** The error page, 503, for a request the server could not answer in time. */
async function tryAgainPage(endpoint: AuthorizeEndpoint, request: Request): Promise<Response> {
  const page = await errorPage(
    endpoint,
    request,
    "temporarily_unavailable",
    "the service could not answer in time; try again in a moment",
    503,
  );
  return withHeaders(page, (headers) => {
    if (!headers.has("retry-after")) headers.set("retry-after", "5");
  });
}

interface Consent {
  readonly sign: ReturnType<typeof jwtSigner>;
  readonly verify: ReturnType<typeof jwtVerifier>;
  readonly url: string;
}

/**
 * Step 1: check the request, require a recent sign-in (and one as recent as
 * `prompt=login` or `max_age` ask), show the consent page. `prompt=none`
 * never shows a page: the answer goes back to the client instead.
 */
async function ask(endpoint: AuthorizeEndpoint, consent: Consent, request: Request) {
  const { runtime, setup } = endpoint;
  const query = new URL(request.url).searchParams;
  const person = personOf(request);
  // Nobody signed in: to the sign-in page and back, nothing looked up for an anonymous visitor;
  // only a request that forbids the page needs its checks, to answer login_required.
  if (person === undefined && !asksNoPage(query)) {
    const forced = query.has("max_age") || query.getAll("prompt").some(hasLogin);
    return toSignIn(endpoint, forced ? requestAfterSignIn(query, runtime.now()) : query, false);
  }
  // A client's document is fetched from the share held for signed-in people only for one.
  const priority = person === undefined ? "anonymous" : "signed_in";
  const checked = await checkAuthorizationRequest(query, { ...endpoint.policy, priority });
  if ("error" in checked) return refusal(endpoint, request, checked);
  const noPage = checked.prompt.includes("none");
  if (person === undefined || !signedInRecently(endpoint, request, checked.signedInAfter)) {
    if (noPage)
      return back(runtime, checked.redirectUri, checked.state, "login_required", "sign-in needed");
    const after = checked.signedInAfter;
    return toSignIn(endpoint, after === undefined ? query : requestAfterSignIn(query, after), true);
  }
  const capabilities = askedCapabilities(runtime, checked);
  if (capabilities.length === 0)
    return back(
      runtime,
      checked.redirectUri,
      checked.state,
      "invalid_scope",
      "nothing asked for is served at this resource",
    );
  // Consent is never remembered: every approval is asked for, so without a page there is none.
  if (noPage)
    return back(runtime, checked.redirectUri, checked.state, "consent_required", "consent needed");
  // Said before the person decides; the answer's atomic step decides for good.
  const full = await approverRoom(runtime, checked.client.clientId, person);
  if (full !== undefined) return grantRefusalPage(endpoint, request, full);
  const signed = await consent.sign({
    subject: person,
    audience: consent.url,
    claims: {
      client_id: checked.client.clientId,
      redirect_uri: checked.redirectUri,
      code_challenge: checked.codeChallenge,
      scope: capabilities.join(" "),
      resource: checked.resource,
      ...(checked.state === undefined ? {} : { state: checked.state }),
      ...(checked.signedInAfter === undefined ? {} : { signed_in_after: checked.signedInAfter }),
    },
  });
  const page = await setup.options.consentPage(request, {
    clientId: checked.client.clientId,
    ...(checked.client.name === undefined ? {} : { clientName: checked.client.name }),
    redirectHost: redirectHostOf(checked.redirectUri),
    capabilities: capabilities.map((name) => ({
      name,
      description: runtime.registry.get(name)?.description ?? "",
    })),
    resource: checked.resource,
    consentToken: signed.token,
    action: new URL(setup.path, runtime.urls.issuer).pathname,
  });
  return asPage(page, consent.url.startsWith("https:"), formSourceOf(checked.redirectUri));
}

/**
 * Step 2: the human's answer, with the consent token this human was given for
 * this request. Nothing that changes state starts after `deadline`.
 */
async function answer(
  endpoint: AuthorizeEndpoint,
  consent: Consent,
  request: Request,
  deadline: RequestDeadline,
) {
  const { runtime } = endpoint;
  const approver = approverOf(request);
  const form = await readOAuthParameters(request, 8192);
  if ("error" in form)
    return errorPage(endpoint, request, "invalid_request", "the form could not be read");
  const action = form.get("action");
  const claims = await readConsent(consent, form.get("consent"), approver);
  if (claims === undefined || (action !== "approve" && action !== "deny"))
    return errorPage(
      endpoint,
      request,
      "invalid_request",
      "the consent form has expired or is incomplete; start again from the application",
    );
  // The client must still be what it was, and the redirect URI still its own.
  const asked = authorizeQuery(claims);
  const checked = await checkAuthorizationRequest(asked, {
    ...endpoint.policy,
    priority: "signed_in",
  });
  if ("error" in checked) return refusal(endpoint, request, checked);
  // A sign-in as recent as the page asked for: one older than the request never answers.
  if (!signedInRecently(endpoint, request, checked.signedInAfter))
    return toSignIn(endpoint, asked, true);
  // Every change runs within the request's deadline: none starts, nor is done by a store that
  // honours the caller's deadline, after the person was told to try again.
  const store = <T>(operation: () => Promise<T>) => deadline.run(() => runtime.store(operation));
  // One answer per consent token: a second post of the same form approves nothing.
  const fresh = await store(() =>
    runtime.replay.setIfAbsent(`consent:${claims.jti}`, (claims.exp + 60) * 1000, runtime.now()),
  );
  if (!fresh)
    return errorPage(endpoint, request, "invalid_request", "this consent was already answered");
  if (action === "deny")
    return back(
      runtime,
      checked.redirectUri,
      checked.state,
      "access_denied",
      "the request was denied",
    );
  const scope = claims.scope.split(" ");
  // The grant first, then the code for it: the code names the grant that holds
  // this approval, which may be this person's earlier grant of the client. A
  // code store that fails then leaves the approval recorded; a new consent
  // reuses that grant rather than adding one.
  const granted = await createGrant(endpoint, request, checked, scope, approver, deadline);
  if ("refused" in granted) return granted.refused;
  let code: string;
  try {
    code = await issueAuthorizationCode(
      endpoint.codes,
      runtime.now(),
      {
        clientId: checked.client.clientId,
        redirectUri: checked.redirectUri,
        codeChallenge: checked.codeChallenge,
        resource: checked.resource,
        scope,
        grantId: granted.grant.grantId,
        approvedBy: approver,
        expiresAt: runtime.now() + CODE_LIFETIME_MS,
      },
      store,
    );
  } catch (error) {
    if (!(error instanceof StoreFullError)) throw error;
    // RFC 6749 §4.1.2.1: the request ends at its client, which may start it again shortly.
    return back(
      runtime,
      checked.redirectUri,
      checked.state,
      "temporarily_unavailable",
      error.quota === "person"
        ? "too many clients were approved by this person in the last minute; try again shortly"
        : "the server is busy; try again shortly",
    );
  }
  return authorizationRedirect(checked.redirectUri, runtime.urls.issuer, { code }, checked.state);
}

interface ConsentClaims {
  readonly jti: string;
  readonly exp: number;
  readonly client_id: string;
  readonly redirect_uri: string;
  readonly code_challenge: string;
  readonly scope: string;
  readonly resource: string;
  readonly state?: string;
  /** The time (epoch ms) a sign-in must come after, when the request asked for a recent one. */
  readonly signed_in_after?: number;
}

async function readConsent(
  consent: Consent,
  token: string | undefined,
  approver: string,
): Promise<ConsentClaims | undefined> {
  if (token === undefined) return undefined;
  try {
    const { claims } = await consent.verify(token, { audience: consent.url });
    const fields = ["client_id", "redirect_uri", "code_challenge", "scope", "resource"] as const;
    if (claims.sub !== approver || fields.some((name) => typeof claims[name] !== "string"))
      return undefined;
    if (claims.state !== undefined && typeof claims.state !== "string") return undefined;
    const after = claims.signed_in_after;
    if (after !== undefined && !Number.isSafeInteger(after)) return undefined;
    return claims as unknown as ConsentClaims;
  } catch (error) {
    if (error instanceof JwtInvalidError) return undefined;
    throw error;
  }
}

/** The authorization request a consent token stands for, as a query. */
function authorizeQuery(claims: ConsentClaims): URLSearchParams {
  const query = new URLSearchParams({
    response_type: "code",
    client_id: claims.client_id,
    redirect_uri: claims.redirect_uri,
    code_challenge: claims.code_challenge,
    code_challenge_method: "S256",
    scope: claims.scope,
    resource: claims.resource,
    ...(claims.state === undefined ? {} : { state: claims.state }),
  });
  const after = claims.signed_in_after;
  return after === undefined ? query : requestAfterSignIn(query, after);
}

/** The capabilities asked for that are served at the resource; none asked, all of its scopes. */
function askedCapabilities(
  runtime: AgentRuntime,
  checked: AuthorizationRequest,
): readonly string[] {
  const tools = toolNames(runtime.registry);
  const asked =
    checked.scope.length > 0
      ? checked.scope
      : checked.resource === runtime.urls.mcp && runtime.mcp !== undefined
        ? runtime.mcp.scopes
        : tools;
  return resourceTarget(runtime, asked, checked.resource)?.capabilities ?? [];
}

/**
 * The consent as a grant, for the client: its principal is the client id,
 * never the human. This human's active grant of the client takes it (see
 * `GrantStore.approve`); else a new one is made, within the limits. A refusal
 * is a page for the human, saying why.
 */
async function createGrant(
  endpoint: AuthorizeEndpoint,
  request: Request,
  checked: AuthorizationRequest,
  capabilities: readonly string[],
  approvedBy: string,
  deadline: RequestDeadline,
): Promise<{ readonly grant: Grant } | { readonly refused: Response }> {
  const { runtime } = endpoint;
  const now = runtime.now();
  const { approval, announce } = await deadline.run(() =>
    approveGrant(runtime, {
      grantId: randomToken(16),
      principalId: checked.client.clientId,
      status: "active",
      capabilities: [...capabilities],
      approvedBy,
      createdAt: now,
      expiresAt: now + endpoint.grantTtlSeconds * 1000,
    }),
  );
  // Told at once: a consent is answered once, so nothing retries this step.
  announce();
  if (approval.outcome !== "refused") return { grant: approval.grant };
  return { refused: await grantRefusalPage(endpoint, request, approval.reason) };
}

/** Why this human cannot approve this client, on a page: the protocol's error, the human's reason. */
function grantRefusalPage(
  endpoint: AuthorizeEndpoint,
  request: Request,
  reason: GrantRefusal,
): Promise<Response> {
  const limits = endpoint.runtime.grantLimits ?? DEFAULT_GRANT_LIMITS;
  const description =
    reason === "approver_limit"
      ? `You have approved as many clients as allowed (${limits.perApprover}). Revoke one you no longer use on the page of agents you approved, then try again.`
      : reason === "principal_limit"
        ? `This client has been approved by as many people as allowed (${limits.perPrincipal}).`
        : "Your approval of this client is bound to the key of the agent you approved it for. Revoke it on the page of agents you approved to approve this client afresh.";
  return errorPage(endpoint, request, "access_denied", description, 403);
}

/** The signed-in person, or `undefined`; a client's own credentials are refused (`AccessDeniedError`). */
function personOf(request: Request): string | undefined {
  try {
    return approverOf(request);
  } catch (error) {
    if (error instanceof AuthenticationRequiredError) return undefined;
    throw error;
  }
}

/**
 * Whether this request's person signed in recently enough to approve: within
 * `maxSignInAgeSeconds`, and after the time the authorization request asks a
 * sign-in to come after (`prompt=login`, `max_age`).
 */
function signedInRecently(
  endpoint: AuthorizeEndpoint,
  request: Request,
  signedInAfter: number | undefined,
): boolean {
  const at = endpoint.setup.options.signedInAt(request);
  return (
    at !== undefined &&
    endpoint.runtime.now() - at <= endpoint.setup.maxSignInAgeMs &&
    (signedInAfter === undefined || at > signedInAfter)
  );
}

/**
 * To the sign-in page, and back to the authorization request `query`;
 * `again` tells the page that a person already signed in must sign in anew
 * (a sign-in too old, or a request asking for a fresh one).
 */
function toSignIn(endpoint: AuthorizeEndpoint, query: URLSearchParams, again: boolean): Response {
  const { setup } = endpoint;
  const back = `${new URL(setup.path, endpoint.runtime.urls.issuer).pathname}?${query}`;
  return new Response(null, {
    status: 303,
    headers: {
      location: `${setup.options.signInPath}?${again ? "again&" : ""}next=${encodeURIComponent(back)}`,
      "cache-control": "no-store",
    },
  });
}

function hasLogin(prompt: string): boolean {
  return prompt.split(" ").includes("login");
}

function refusal(
  endpoint: AuthorizeEndpoint,
  request: Request,
  refused: Exclude<Awaited<ReturnType<typeof checkAuthorizationRequest>>, AuthorizationRequest>,
): Promise<Response> | Response {
  if (!refused.redirect) return errorPage(endpoint, request, refused.error, refused.description);
  return back(
    endpoint.runtime,
    refused.redirectUri,
    refused.state,
    refused.error,
    refused.description,
  );
}

function back(
  runtime: AgentRuntime,
  redirectUri: string,
  state: string | undefined,
  error: string,
  description: string,
): Response {
  return authorizationRedirect(
    redirectUri,
    runtime.urls.issuer,
    { error, error_description: description },
    state,
  );
}

async function errorPage(
  endpoint: AuthorizeEndpoint,
  request: Request,
  error: string,
  description: string,
  status = 400,
): Promise<Response> {
  const custom = endpoint.setup.options.errorPage;
  if (custom !== undefined) return custom(request, { error, description, status });
  return htmlResponse(
    html`<!doctype html><meta charset="utf-8"><title>Authorization failed</title><p id="error">${description}</p>`,
    { status },
  );
}

/**
 * Every answer of the endpoint: never in a frame (a consent page another site
 * frames can be clicked through, RFC 9700 §4.16), never cached, and, unless
 * the page brings its own, the default Content Security Policy: the consent
 * page shows names a client chose. Its form may post only here, and be
 * redirected only to `formTarget`, the client's redirect URI (browsers hold a
 * form's redirects to `form-action` too). A page's own policy keeps its rules,
 * gains `frame-ancestors 'none'`, and `formTarget` where it limits forms.
 */
function asPage(response: Response, https: boolean, formTarget?: string): Response {
  return withHeaders(response, (headers) => {
    headers.set("x-frame-options", "DENY");
    headers.set("cache-control", "no-store");
    const own = headers.get("content-security-policy");
    headers.set(
      "content-security-policy",
      own === null
        ? defaultPolicyWith(
            {
              "frame-ancestors": ["'none'"],
              "form-action": formTarget === undefined ? ["'self'"] : ["'self'", formTarget],
            },
            https,
          )
        : withFramingAndForms(own, formTarget),
    );
  });
}

/** A page's own policy with `frame-ancestors 'none'` added when absent, and `formTarget` to each `form-action`. */
function withFramingAndForms(policy: string, formTarget: string | undefined): string {
  const policies = policy.split(",").map((one) =>
    one
      .split(";")
      .map((directive) => {
        const [name, ...sources] = directive.trim().split(/\s+/);
        if (formTarget === undefined || name?.toLowerCase() !== "form-action") return directive;
        if (sources.includes("'none'") || sources.includes(formTarget)) return directive;
        return `${directive.trimEnd()} ${formTarget}`;
      })
      .join(";"),
  );
  const out = policies.join(",");
  return /frame-ancestors/i.test(out) ? out : `${out}; frame-ancestors 'none'`;
}

/**
 * The `form-action` source the consent form's redirect needs: the redirect
 * URI's origin; for an app's own scheme, or a host a CSP source cannot name
 * (an IPv6 literal), its scheme.
 */
function formSourceOf(redirectUri: string): string {
  const url = new URL(redirectUri);
  const web = url.protocol === "https:" || url.protocol === "http:";
  return web && /^[a-z0-9.-]+$/.test(url.hostname) ? url.origin : url.protocol;
}

/** The host the human goes back to, or the scheme of an app's own URI. */
function redirectHostOf(uri: string): string {
  const url = new URL(uri);
  return url.protocol === "https:" || url.protocol === "http:"
    ? url.host
    : url.protocol.slice(0, -1);
}

/**
 * Mints access tokens for the authorization-code grants: from the grant as
 * the store holds it now (active, the client's), the scope ∩ the grant, for
 * the resource; a revoked or expired grant is `invalid_grant`.
 */
export function codeTokenIssuer(
  runtime: AgentRuntime,
): (input: CodeGrantIssue) => Promise<IssuedToken | OAuthFailure> {
  return async ({ client, grantId, scope, resource, jkt, grantType: via }) => {
    const grant = await runtime.store(() => runtime.grants.get(grantId));
    if (
      grant === undefined ||
      grant.principalId !== client.clientId ||
      effectiveStatus(grant, runtime.now()) !== "active"
    )
      return { error: "invalid_grant", description: "the grant was revoked or has expired" };
    // A grant another approval bound to a key mints only for that key.
    if (!keyFits(grant, jkt))
      return { error: "invalid_grant", description: "the grant is bound to another key" };
    const held = scope.filter((name) => grant.capabilities.includes(name));
    const target = resourceTarget(runtime, held, resource);
    if (target === undefined || target.capabilities.length === 0)
      return { error: "invalid_grant", description: "the grant no longer holds what was asked" };
    const minted = await runtime.tokens.mint({
      principalId: client.clientId,
      grantId,
      capabilities: target.capabilities,
      audience: target.audience,
      ...(jkt === undefined ? {} : { jkt }),
    });
    runtime.emit({
      type: "token.issued",
      grantId,
      principalId: client.clientId,
      tokenId: minted.jti,
      capabilities: target.capabilities,
      audience: target.audience,
      via,
    });
    return {
      accessToken: minted.token,
      expiresIn: minted.expiresIn,
      scope: target.capabilities,
      tokenType: jkt === undefined ? "Bearer" : "DPoP",
    };
  };
}

/** Ends a grant a replayed code or refresh token came from. */
export function grantRevoker(runtime: AgentRuntime): (grantId: string) => Promise<void> {
  return async (grantId) => {
    const revoked = await runtime.store(() =>
      runtime.grants.revoke(grantId, undefined, runtime.now()),
    );
    if (revoked !== undefined)
      runtime.emit({
        type: "grant.revoked",
        grantId,
        principalId: revoked.principalId,
        capabilities: revoked.capabilities,
        whole: true,
      });
  };
}
