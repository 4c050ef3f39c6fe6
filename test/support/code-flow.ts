/**
 * The authorization-code flow on a real socket: agentAuth with its MCP
 * resource and `authorizationCode` on, public clients registered with their
 * redirect URIs, a test consent page that hands back what it was given, and
 * a human bound per request (the chain's part, played by the test: the
 * `x-test-human` header names who is signed in, `x-test-signed-in` when).
 * oauth4webapi is the client: an implementation written apart from ours.
 */
import * as oauth from "oauth4webapi";
import {
  AuthenticationRequiredError,
  bindAuthentication,
  createAuthentication,
  type Handler,
} from "portcullis";
import type { AgentAuthOptions, ConsentRequest } from "portcullis/agentauth";
import { MemoryClientStore } from "portcullis/oauth2";
import { AGENT_ID, AGENT_SECRET, mcpSite, OTHER_ID, OTHER_SECRET, type Site } from "./mcp.ts";

export const DESKTOP = "desktop-client";
export const OTHER_DESKTOP = "other-desktop-client";
export const WEB = "web-client";
export const XSS_NAME = "<script>alert(1)</script>";
export const XSS_CLIENT = "named-client";
export const LOOPBACK_REDIRECT = "http://127.0.0.1:7777/callback";
export const WEB_REDIRECT = "https://app.example:8443/cb";
export const AUTHORIZE_PATH = "/oauth/authorize";
export const insecure = { [oauth.allowInsecureRequests]: true } as const;

export interface CodeSite extends Site {
  readonly clients: MemoryClientStore;
  /** Every consent page shown, in order. */
  readonly consents: ConsentRequest[];
  /** The server's clock is `Date.now() + clock.offset`. */
  readonly clock: { offset: number };
  readonly now: () => number;
  readonly as: oauth.AuthorizationServer;
}

/** Registers the clients every code-flow site knows. */
export async function codeClients(): Promise<MemoryClientStore> {
  const clients = new MemoryClientStore();
  await clients.register({ clientId: AGENT_ID, secret: AGENT_SECRET, name: "Agent one" });
  await clients.register({ clientId: OTHER_ID, secret: OTHER_SECRET, name: "Agent two" });
  await clients.register({
    clientId: DESKTOP,
    public: true,
    name: "Desktop client",
    redirectUris: [LOOPBACK_REDIRECT],
  });
  await clients.register({
    clientId: OTHER_DESKTOP,
    public: true,
    name: "Other desktop client",
    redirectUris: [LOOPBACK_REDIRECT],
  });
  await clients.register({
    clientId: WEB,
    public: true,
    name: "Web client",
    redirectUris: [WEB_REDIRECT],
  });
  await clients.register({
    clientId: XSS_CLIENT,
    public: true,
    name: XSS_NAME,
    redirectUris: [LOOPBACK_REDIRECT],
  });
  return clients;
}

/** The test consent page: the consent as JSON, so the test can read its token. */
export function jsonConsentPage(consents: ConsentRequest[]) {
  return (_request: Request, consent: ConsentRequest) => {
    consents.push(consent);
    return Response.json(consent);
  };
}

/** Binds the human the test names; maps what the chain would map a missing one to (401). */
export function testHuman(
  router: (request: Request) => Promise<Response>,
  agents: {
    authenticator: (next: Handler) => Handler;
  },
): Handler {
  const inner: Handler = async (request) => {
    const human = request.headers.get("x-test-human");
    if (human !== null) bindAuthentication(request, createAuthentication(human, ["USER"]));
    return router(request);
  };
  const authenticated = agents.authenticator(inner);
  return async (request, ...rest) => {
    try {
      return await authenticated(request, ...rest);
    } catch (error) {
      // The chain's exception translation answers this; without the chain, the test does.
      if (error instanceof AuthenticationRequiredError) return new Response(null, { status: 401 });
      throw error;
    }
  };
}

export function signedInHeader(request: Request): number | undefined {
  const at = request.headers.get("x-test-signed-in");
  return at === null ? undefined : Number(at);
}

/** A site with the authorization-code grant on, and its RFC 8414 metadata read by oauth4webapi. */
export async function codeSite(options: Partial<AgentAuthOptions> = {}): Promise<CodeSite> {
  const clients = await codeClients();
  const consents: ConsentRequest[] = [];
  const clock = { offset: 0 };
  const now = () => Date.now() + clock.offset;
  const site = await mcpSite(
    {
      clients,
      now,
      authorizationCode: {
        consentPage: jsonConsentPage(consents),
        signedInAt: signedInHeader,
        signInPath: "/login",
      },
      ...options,
    },
    {},
    undefined,
    testHuman,
  );
  const issuer = new URL(site.base);
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }),
  );
  return { ...site, clients, consents, clock, now, as };
}

export interface AuthorizeParams {
  clientId?: string;
  redirectUri?: string;
  challenge?: string;
  method?: string;
  scope?: string;
  resource?: string;
  state?: string;
  responseType?: string;
}

/** The authorization request URL, as a client would open it in the browser. */
export function authorizeUrl(site: CodeSite, params: AuthorizeParams): URL {
  const url = new URL(site.as.authorization_endpoint as string);
  const set = (name: string, value: string | undefined) => {
    if (value !== undefined) url.searchParams.set(name, value);
  };
  set("response_type", params.responseType ?? "code");
  set("client_id", params.clientId ?? DESKTOP);
  set("redirect_uri", params.redirectUri ?? LOOPBACK_REDIRECT);
  set("code_challenge", params.challenge);
  set("code_challenge_method", params.method ?? "S256");
  set("scope", params.scope);
  set("resource", params.resource ?? site.mcpUrl);
  set("state", params.state);
  return url;
}

export interface Browser {
  /** Who is signed in (none: nobody). */
  human?: string;
  /** When they signed in (default: the server's now). */
  signedInAt?: number;
  /** Extra headers, e.g. client credentials. */
  headers?: Record<string, string>;
}

function browserHeaders(site: CodeSite, browser: Browser): Record<string, string> {
  const human = "human" in browser ? browser.human : "alice";
  return {
    ...(human === undefined ? {} : { "x-test-human": human }),
    "x-test-signed-in": String(browser.signedInAt ?? site.now()),
    ...browser.headers,
  };
}

/** `GET` the authorization endpoint, redirects not followed. */
export function openAuthorize(site: CodeSite, url: URL | string, browser: Browser = {}) {
  return fetch(url, { headers: browserHeaders(site, browser), redirect: "manual" });
}

/** `POST` the consent form. */
export function postConsent(
  site: CodeSite,
  form: Record<string, string>,
  browser: Browser = {},
  action = `${site.base}${AUTHORIZE_PATH}`,
) {
  return fetch(action, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      ...browserHeaders(site, browser),
    },
    body: new URLSearchParams(form).toString(),
    redirect: "manual",
  });
}

/** The consent shown for an authorization request that passed. */
export async function consentFor(
  site: CodeSite,
  params: AuthorizeParams,
  browser: Browser = {},
): Promise<ConsentRequest> {
  const response = await openAuthorize(site, authorizeUrl(site, params), browser);
  if (response.status !== 200)
    throw new Error(`no consent page: ${response.status} ${response.headers.get("location")}`);
  return (await response.json()) as ConsentRequest;
}

/** A PKCE pair. */
export async function pkce() {
  const verifier = oauth.generateRandomCodeVerifier();
  return { verifier, challenge: await oauth.calculatePKCECodeChallenge(verifier) };
}

/** Authorize, consent (approve), and the callback URL the browser is sent to. */
export async function approvedCallback(
  site: CodeSite,
  params: AuthorizeParams & { challenge: string },
  browser: Browser = {},
): Promise<URL> {
  const consent = await consentFor(site, params, browser);
  const answer = await postConsent(
    site,
    { consent: consent.consentToken, action: "approve" },
    browser,
  );
  if (answer.status !== 303) throw new Error(`consent not redirected: ${answer.status}`);
  return new URL(answer.headers.get("location") as string);
}

/** Redeems the callback's code as oauth4webapi does; the raw response. */
export async function redeem(
  site: CodeSite,
  callback: URL,
  verifier: string | typeof oauth.nopkce,
  options: {
    clientId?: string;
    redirectUri?: string;
    state?: string | typeof oauth.expectNoState;
    resource?: string;
    DPoP?: oauth.DPoPHandle;
  } = {},
): Promise<Response> {
  const client = { client_id: options.clientId ?? DESKTOP };
  const params = oauth.validateAuthResponse(
    site.as,
    client,
    callback,
    options.state ?? oauth.expectNoState,
  );
  return oauth.authorizationCodeGrantRequest(
    site.as,
    client,
    oauth.None(),
    params,
    options.redirectUri ?? LOOPBACK_REDIRECT,
    verifier,
    {
      ...insecure,
      additionalParameters: { resource: options.resource ?? site.mcpUrl },
      ...(options.DPoP === undefined ? {} : { DPoP: options.DPoP }),
    },
  );
}

/**
 * The full happy path for `clientId`: authorize, approve, redeem; the token response. The code
 * is redeemed with a DPoP proof when given one, and at `redeemAt` (another instance) when given.
 */
export async function tokensFor(
  site: CodeSite,
  params: AuthorizeParams = {},
  { DPoP, redeemAt = site }: { DPoP?: oauth.DPoPHandle; redeemAt?: CodeSite } = {},
): Promise<oauth.TokenEndpointResponse> {
  const { verifier, challenge } = await pkce();
  const callback = await approvedCallback(site, { ...params, challenge });
  const response = await redeem(redeemAt, callback, verifier, {
    ...(params.clientId === undefined ? {} : { clientId: params.clientId }),
    ...(DPoP === undefined ? {} : { DPoP }),
  });
  return oauth.processAuthorizationCodeResponse(
    site.as,
    { client_id: params.clientId ?? DESKTOP },
    response,
  );
}

/** A refresh as oauth4webapi sends it; the raw response. */
export function refreshRequest(
  site: CodeSite,
  refreshToken: string,
  options: { clientId?: string; scope?: string; base?: string; DPoP?: oauth.DPoPHandle } = {},
) {
  const as =
    options.base === undefined
      ? site.as
      : { ...site.as, token_endpoint: `${options.base}/oauth/token` };
  return oauth.refreshTokenGrantRequest(
    as,
    { client_id: options.clientId ?? DESKTOP },
    oauth.None(),
    refreshToken,
    {
      ...insecure,
      ...(options.scope === undefined ? {} : { additionalParameters: { scope: options.scope } }),
      ...(options.DPoP === undefined ? {} : { DPoP: options.DPoP }),
    },
  );
}

/** The error of a refused token response, as oauth4webapi reads it. */
export async function tokenError(
  site: CodeSite,
  response: Response,
  clientId = DESKTOP,
): Promise<{ status: number; error: string }> {
  try {
    await oauth.processAuthorizationCodeResponse(site.as, { client_id: clientId }, response);
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError)
      return { status: error.status, error: error.error };
    throw error;
  }
  throw new Error("the token request was not refused");
}

let rpcId = 0;

/** `tools/list` at `/mcp` with `token`: the status (200 served, 401 refused). */
export async function mcpStatus(site: Site, token: string, url = site.mcpUrl): Promise<number> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method: "tools/list", params: {} }),
  });
  await response.arrayBuffer();
  return response.status;
}
