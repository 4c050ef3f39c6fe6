/**
 * RFC 7591 dynamic client registration of `agentAuth`, over real sockets:
 * the MCP SDK's own `registerClient` registers, oauth4webapi runs the
 * authorization-code flow with the id it was given; bad metadata, floods
 * from one address, the overall budget, a full store and expiry are refused
 * in RFC 7591's shape. Registrations come from 127.0.0.1 and 127.0.0.2
 * (the loopback network), so the budgets see two real client addresses.
 */
import { request as httpRequest } from "node:http";
import { registerClient } from "@modelcontextprotocol/client";
import * as oauth from "oauth4webapi";
import { authz, basicAuth, csrf, newHandler, passwordCredentials, sessions } from "portcullis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentAuth, agentAuth } from "../src/agentauth/index.ts";
import { bindAuthentication, createAuthentication } from "../src/core/authentication.ts";
import { nodeServerClientAddress, peerAddress } from "../src/core/client-address.ts";
import { generateKeySet, type KeySet } from "../src/jwt/index.ts";
import {
  type DynamicRegistrationOptions,
  MemoryClientStore,
  type RedirectUriOptions,
} from "../src/oauth2/index.ts";
import { type Served, serveFetch } from "./serve.ts";

const REDIRECT = "http://127.0.0.1/callback";
const insecure = { [oauth.allowInsecureRequests]: true };

let keys: KeySet;
const servers: Served[] = [];

beforeAll(async () => {
  keys = await generateKeySet();
});

afterAll(async () => {
  for (const server of servers) await server.close();
});

interface Site {
  readonly base: string;
  readonly agents: AgentAuth;
  /** Moves this site's clock. */
  advance(ms: number): void;
}

async function site(
  dynamicRegistration?: DynamicRegistrationOptions,
  redirectUris?: RedirectUriOptions,
): Promise<Site> {
  let offset = 0;
  let route: (request: Request) => Promise<Response> = async () => new Response(null);
  const bindPeer = peerAddress(nodeServerClientAddress);
  const served = await serveFetch(bindPeer((request) => route(request)));
  servers.push(served);
  const agents = await agentAuth({
    issuer: served.url,
    clients: new MemoryClientStore(),
    keys,
    now: () => Date.now() + offset,
    capabilities: [{ name: "read", description: "Reads.", handler: () => "read" }],
    authorizationCode: {
      // The consent page as JSON: the test reads the consent token from it.
      consentPage: (_request, consent) => Response.json(consent),
      signedInAt: () => Date.now() + offset,
      signInPath: "/login",
      ...(dynamicRegistration === undefined ? {} : { dynamicRegistration }),
      ...(redirectUris === undefined ? {} : { redirectUris }),
    },
  });
  route = async (request) => {
    // The chain would have signed alice in; only the authorization endpoint reads it.
    bindAuthentication(request, createAuthentication("alice", ["USER"]));
    return (await agents.route(request)) ?? new Response(null, { status: 404 });
  };
  return {
    base: served.url,
    agents,
    advance: (ms) => {
      offset += ms;
    },
  };
}

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: Record<string, unknown>;
}

/** A registration POST sent from `from` (a loopback address), raw. */
function post(
  at: Site,
  body: string,
  from = "127.0.0.1",
  type = "application/json",
  path = "/oauth/register",
): Promise<Answer> {
  const url = new URL(path, at.base);
  return new Promise((resolve, reject) => {
    const sent = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        localAddress: from,
        headers: { "content-type": type, "content-length": Buffer.byteLength(body) },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>),
          });
        });
      },
    );
    sent.on("error", reject);
    sent.end(body);
  });
}

const register = (at: Site, metadata: object, from?: string) =>
  post(at, JSON.stringify(metadata), from);

const goodMetadata = {
  client_name: "Desk MCP",
  redirect_uris: [REDIRECT],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
};

/** The authorization-code flow with oauth4webapi for `clientId`: the token response. */
async function codeFlow(at: Site, clientId: string): Promise<oauth.TokenEndpointResponse> {
  const issuer = new URL(at.base);
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }),
  );
  const client: oauth.Client = { client_id: clientId };
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const authorize = new URL(as.authorization_endpoint as string);
  for (const [name, value] of Object.entries({
    client_id: clientId,
    redirect_uri: "http://127.0.0.1:49152/callback",
    response_type: "code",
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    scope: "read",
    state,
  }))
    authorize.searchParams.set(name, value);
  const asked = await fetch(authorize);
  expect(asked.status).toBe(200);
  const consent = (await asked.json()) as { consentToken: string; clientName?: string };
  expect(consent.clientName).toBe("Desk MCP");
  const answered = await fetch(authorize.origin + authorize.pathname, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ consent: consent.consentToken, action: "approve" }),
  });
  expect(answered.status).toBe(303);
  const back = new URL(answered.headers.get("location") as string);
  const params = oauth.validateAuthResponse(as, client, back, state);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    oauth.None(),
    params,
    "http://127.0.0.1:49152/callback",
    verifier,
    insecure,
  );
  return oauth.processAuthorizationCodeResponse(as, client, response);
}

/** What the authorization endpoint makes of a request from `clientId`: its status. */
async function authorizeStatus(at: Site, clientId: string): Promise<number> {
  const authorize = new URL("/oauth/authorize", at.base);
  for (const [name, value] of Object.entries({
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: "code",
    code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
    code_challenge_method: "S256",
    scope: "read",
  }))
    authorize.searchParams.set(name, value);
  const response = await fetch(authorize, { redirect: "manual" });
  await response.body?.cancel();
  return response.status;
}

describe("dynamic client registration", () => {
  it("the MCP SDK registers; oauth4webapi runs the code flow and refreshes with the new id", async () => {
    const at = await site({});
    const metadata = (await (
      await fetch(`${at.base}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(metadata.registration_endpoint).toBe(`${at.base}/oauth/register`);
    const registered = await registerClient(at.base, {
      metadata: metadata as never,
      clientMetadata: {
        client_name: "Desk MCP",
        redirect_uris: [REDIRECT],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
        client_uri: "https://desk.example/",
      },
    });
    expect(registered.client_id).toMatch(/^dyn:[A-Za-z0-9_-]{22}$/);
    expect(registered.client_secret).toBeUndefined();
    expect(registered.client_id_issued_at).toBeTypeOf("number");
    expect(registered.redirect_uris).toEqual([REDIRECT]);
    expect(registered.token_endpoint_auth_method).toBe("none");
    // Unknown fields are ignored, not registered.
    expect((registered as Record<string, unknown>).client_uri).toBeUndefined();
    const tokens = await codeFlow(at, registered.client_id);
    expect(tokens.access_token).toBeTypeOf("string");
    expect(tokens.refresh_token).toBeTypeOf("string");
    const issuer = new URL(at.base);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }),
    );
    const client = { client_id: registered.client_id };
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(
        as,
        client,
        oauth.None(),
        tokens.refresh_token as string,
        insecure,
      ),
    );
    expect(refreshed.access_token).toBeTypeOf("string");
  });

  it("answers 201 with the registered metadata, defaults filled in", async () => {
    const at = await site({});
    const answer = await register(at, { redirect_uris: ["com.example.desk:/callback"] });
    expect(answer.status).toBe(201);
    expect(answer.headers["cache-control"]).toBe("no-store");
    const { client_id, client_id_issued_at, ...rest } = answer.body;
    expect(client_id).toMatch(/^dyn:/);
    expect(Math.abs((client_id_issued_at as number) - Date.now() / 1000)).toBeLessThan(60);
    expect(rest).toEqual({
      redirect_uris: ["com.example.desk:/callback"],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    });
  });

  it.each([
    ["no redirect_uris", { client_name: "x" }, "invalid_redirect_uri"],
    ["an empty redirect_uris", { redirect_uris: [] }, "invalid_redirect_uri"],
    [
      "http to a host other than loopback",
      { redirect_uris: ["http://evil.example/cb"] },
      "invalid_redirect_uri",
    ],
    [
      "a javascript: redirect URI",
      { redirect_uris: ["javascript:alert(1)"] },
      "invalid_redirect_uri",
    ],
    [
      "a redirect URI with a fragment",
      { redirect_uris: ["https://app.example/cb#x"] },
      "invalid_redirect_uri",
    ],
    [
      "a host a browser reads other than a DNS name",
      { redirect_uris: ["https://app;x.example/cb"] },
      "invalid_redirect_uri",
    ],
    [
      "client_secret_basic",
      { ...goodMetadata, token_endpoint_auth_method: "client_secret_basic" },
      "invalid_client_metadata",
    ],
    [
      "the client_credentials grant",
      { ...goodMetadata, grant_types: ["client_credentials"] },
      "invalid_client_metadata",
    ],
    [
      "client_credentials beside authorization_code",
      { ...goodMetadata, grant_types: ["authorization_code", "client_credentials"] },
      "invalid_client_metadata",
    ],
    [
      "refresh_token without authorization_code",
      { ...goodMetadata, grant_types: ["refresh_token"] },
      "invalid_client_metadata",
    ],
    [
      "the token response type",
      { ...goodMetadata, response_types: ["token"] },
      "invalid_client_metadata",
    ],
    [
      "a name with a bidi override",
      { ...goodMetadata, client_name: "Desk \u202eevil" },
      "invalid_client_metadata",
    ],
    [
      "a name too long",
      { ...goodMetadata, client_name: "x".repeat(201) },
      "invalid_client_metadata",
    ],
    ["a malformed scope", { ...goodMetadata, scope: 'read "x"' }, "invalid_client_metadata"],
    ["a JSON array", [goodMetadata], "invalid_client_metadata"],
  ])("refuses %s with 400 %s", async (_name, metadata, error) => {
    const at = await site({});
    const answer = await register(at, metadata);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe(error);
    expect(answer.body.client_id).toBeUndefined();
  });

  // RFC 8252 §7.1: a private-use scheme is a reversed domain name, and none may pass for http(s).
  it.each([
    "https2://evil.example/cb",
    "HTTPS2://evil.example/cb",
    "http-s://evil.example/cb",
    "httpx://evil.example/cb",
    "http+s://evil.example/cb",
    "https.evil.example:/cb",
    "myapp:/callback",
    "desk://callback",
  ])("refuses the private-use scheme of %s with 400 invalid_redirect_uri", async (uri) => {
    const at = await site({});
    const answer = await register(at, { redirect_uris: ["com.example.desk:/callback", uri] });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toBe("invalid_redirect_uri");
    expect(answer.body.client_id).toBeUndefined();
  });

  it("registers a single-label scheme the server names in privateUseSchemes, and no other", async () => {
    const at = await site({}, { privateUseSchemes: ["cursor"] });
    const cursor = "cursor://anysphere.cursor-retrieval/oauth/callback";
    const answer = await register(at, { client_name: "Cursor", redirect_uris: [cursor] });
    expect(answer.status).toBe(201);
    expect(answer.body.redirect_uris).toEqual([cursor]);
    for (const uri of ["myapp:/callback", "https2://evil.example/cb", "httpx://evil.example/cb"]) {
      const refused = await register(at, { redirect_uris: [cursor, uri] });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe("invalid_redirect_uri");
    }
    // Without the option, the same registration is refused.
    const plain = await site({});
    const refused = await register(plain, { client_name: "Cursor", redirect_uris: [cursor] });
    expect(refused.status).toBe(400);
    expect(refused.body.error_description).toMatch(/privateUseSchemes/);
  });

  it("refuses a body that is not JSON, or too large, with invalid_request", async () => {
    const at = await site({});
    const plain = await post(at, JSON.stringify(goodMetadata), "127.0.0.1", "text/plain");
    expect([plain.status, plain.body.error]).toEqual([400, "invalid_request"]);
    const broken = await post(at, "{redirect_uris:");
    expect([broken.status, broken.body.error]).toEqual([400, "invalid_request"]);
    const large = await register(at, { ...goodMetadata, padding: "x".repeat(70_000) });
    expect([large.status, large.body.error]).toEqual([413, "invalid_request"]);
  });

  it("answers only POST", async () => {
    const at = await site({});
    const response = await fetch(`${at.base}/oauth/register`);
    await response.body?.cancel();
    expect(response.status).toBe(405);
  });

  it("a flood from one address is refused with 429 and Retry-After; another address still registers", async () => {
    const at = await site({ perAddress: { limit: 3, windowSeconds: 600 } });
    for (let i = 0; i < 3; i++)
      expect((await register(at, goodMetadata, "127.0.0.1")).status).toBe(201);
    const refused = await register(at, goodMetadata, "127.0.0.1");
    expect(refused.status).toBe(429);
    expect(refused.body.error).toBe("temporarily_unavailable");
    const retry = Number(refused.headers["retry-after"]);
    expect(retry).toBeGreaterThan(500);
    expect(retry).toBeLessThanOrEqual(600);
    // Garbage counts too: the budget is spent before the body is read.
    expect((await post(at, "not json", "127.0.0.1")).status).toBe(429);
    expect((await register(at, goodMetadata, "127.0.0.2")).status).toBe(201);
  });

  it("the overall budget refuses every address once spent", async () => {
    const at = await site({ overall: { limit: 2, windowSeconds: 60 } });
    expect((await register(at, goodMetadata, "127.0.0.1")).status).toBe(201);
    expect((await register(at, goodMetadata, "127.0.0.2")).status).toBe(201);
    const refused = await register(at, goodMetadata, "127.0.0.3");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(60);
  });

  it("an address refused by the overall budget gets its count back", async () => {
    const at = await site({
      perAddress: { limit: 1, windowSeconds: 600 },
      overall: { limit: 1, windowSeconds: 60 },
    });
    expect((await register(at, goodMetadata, "127.0.0.1")).status).toBe(201);
    expect((await register(at, goodMetadata, "127.0.0.2")).status).toBe(429);
    at.advance(61_000);
    expect((await register(at, goodMetadata, "127.0.0.2")).status).toBe(201);
  });

  it("a full store refuses newcomers and keeps every registered client working", async () => {
    const at = await site({ maxClients: 2 });
    const first = await register(at, goodMetadata);
    expect((await register(at, goodMetadata)).status).toBe(201);
    const refused = await register(at, goodMetadata);
    expect(refused.status).toBe(503);
    expect(refused.body.error).toBe("temporarily_unavailable");
    expect(refused.headers["retry-after"]).toBeDefined();
    const tokens = await codeFlow(at, first.body.client_id as string);
    expect(tokens.access_token).toBeTypeOf("string");
  });

  it("a registered client expires after clientTtlSeconds, and its place is free again", async () => {
    const at = await site({ maxClients: 1, clientTtlSeconds: 3600 });
    const first = await register(at, goodMetadata);
    const id = first.body.client_id as string;
    expect(await authorizeStatus(at, id)).toBe(200);
    at.advance(3_601_000);
    expect(await authorizeStatus(at, id)).toBe(400);
    expect((await register(at, goodMetadata)).status).toBe(201);
  });

  it("an unregistered dyn: id is an unknown client", async () => {
    const at = await site({});
    expect(await authorizeStatus(at, "dyn:AAAAAAAAAAAAAAAAAAAAAA")).toBe(400);
  });

  it("is off by default: 404, and no registration_endpoint in the metadata", async () => {
    const at = await site();
    const metadata = (await (
      await fetch(`${at.base}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(metadata.authorization_endpoint).toBeDefined();
    expect(metadata.registration_endpoint).toBeUndefined();
    expect((await register(at, goodMetadata)).status).toBe(404);
  });

  it("serves another path when told", async () => {
    const at = await site({ path: "/connect/register" });
    expect(
      (
        await post(
          at,
          JSON.stringify(goodMetadata),
          "127.0.0.1",
          "application/json",
          "/connect/register",
        )
      ).status,
    ).toBe(201);
    expect((await register(at, goodMetadata)).status).toBe(404);
  });
});

describe("dynamic registration behind the chain", () => {
  /** Registration behind the chain, one proxy in front: the budgets count the address it forwards. */
  async function chained(): Promise<string> {
    let handler: (request: Request, ...rest: unknown[]) => Promise<Response> = async () =>
      new Response(null);
    const served = await serveFetch((request, ...rest) => handler(request, ...rest));
    servers.push(served);
    const agents = await agentAuth({
      issuer: served.url,
      clients: new MemoryClientStore(),
      keys,
      capabilities: [{ name: "read", description: "Reads.", handler: () => "read" }],
      authorizationCode: {
        consentPage: () => new Response(),
        signedInAt: () => undefined,
        signInPath: "/login",
        dynamicRegistration: { perAddress: { limit: 2, windowSeconds: 600 } },
      },
    });
    handler = newHandler(
      async (request) => (await agents.route(request)) ?? new Response(null, { status: 404 }),
      {
        clientAddress: nodeServerClientAddress,
        trustProxy: 1,
        session: sessions({ secure: false }),
        // Basic would answer a wrong Basic header with 401, but for the endpoints agents serves.
        authentication: [
          agents.authenticator,
          basicAuth({
            credentials: passwordCredentials({ findUser: () => undefined, throttle: false }),
            required: false,
          }),
        ],
        csrf: csrf({ trustedOrigins: ["https://app.example.test"] }),
        authorization: authz.routes([
          authz.match("GET", "/.well-known/**").permitAll(),
          authz.match("POST", "/oauth/register").permitAll(),
        ]),
      },
    );
    return served.url;
  }

  const registerVia = (base: string, forwardedFor: string, headers: Record<string, string> = {}) =>
    fetch(`${base}/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": forwardedFor, ...headers },
      body: JSON.stringify(goodMetadata),
    });

  it("the chain's authenticators leave it alone: a wrong Authorization header changes nothing", async () => {
    const base = await chained();
    const response = await registerVia(base, "203.0.113.5", {
      authorization: `Basic ${btoa("nobody:wrong-secret-0123456789")}`,
    });
    expect(response.status).toBe(201);
    expect(((await response.json()) as { client_id: string }).client_id).toMatch(/^dyn:/);
  });

  it("the budget is the address the chain resolved", async () => {
    const base = await chained();
    for (let i = 0; i < 2; i++) expect((await registerVia(base, "203.0.113.5")).status).toBe(201);
    const refused = await registerVia(base, "203.0.113.5");
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: "temporarily_unavailable" });
    expect((await registerVia(base, "203.0.113.6")).status).toBe(201);
  });
});

describe("dynamic registration options", () => {
  it.each([
    [{ maxClient: 5 }],
    [{ perAddress: { limit: 5, window: 60 } }],
    [{ overall: { limit: 0, windowSeconds: 60 } }],
    [{ clientTtlSeconds: 10 }],
    [{ path: "register" }],
    [{ path: "/oauth/token" }],
    [{ path: "/oauth/authorize" }],
  ])("throws on %j", async (options) => {
    await expect(
      agentAuth({
        issuer: "https://api.example.com",
        clients: new MemoryClientStore(),
        keys,
        capabilities: [{ name: "read", description: "Reads.", handler: () => "read" }],
        authorizationCode: {
          consentPage: () => new Response(),
          signedInAt: () => undefined,
          signInPath: "/login",
          dynamicRegistration: options as DynamicRegistrationOptions,
        },
      }),
    ).rejects.toThrow(/dynamicRegistration/);
  });
});

describe("the redirect-URI policy option", () => {
  it.each([
    [{ privateUseScheme: ["cursor"] }],
    [{ privateUseSchemes: ["https2"] }],
    [{ privateUseSchemes: ["com.example.app"] }],
    [{ localhostAnyPort: 1 }],
  ])("throws on %j when agentAuth is built, naming the key", async (options) => {
    await expect(
      agentAuth({
        issuer: "https://api.example.com",
        clients: new MemoryClientStore(),
        keys,
        capabilities: [{ name: "read", description: "Reads.", handler: () => "read" }],
        authorizationCode: {
          consentPage: () => new Response(),
          signedInAt: () => undefined,
          signInPath: "/login",
          redirectUris: options as RedirectUriOptions,
        },
      }),
    ).rejects.toThrow(/authorizationCode: redirectUris/);
  });
});
