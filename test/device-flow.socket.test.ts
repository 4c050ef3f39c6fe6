/**
 * The RFC 8628 device flow driven by openid-client, an independent OAuth
 * client, over a real socket, with the endpoints mounted behind the full chain
 * (sessions, CSRF, default-deny authorization) and a human approving through a
 * signed-in session.
 */
import * as oidc from "openid-client";
import * as authz from "portcullis/authz";
import { generateKeySet, jwtSigner, jwtVerifier } from "portcullis/jwt";
import {
  type AuthorizationServer,
  authorizationServer,
  DeviceAuthorizationService,
  deviceApproveHandler,
  MemoryClientStore,
} from "portcullis/oauth2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decide as decideAs, discover as discoverClient, socketClient } from "./oauth-helpers.ts";
import { type Served, serveFetch } from "./serve.ts";
import { pollToken } from "./support/approval-attack.ts";
import {
  type Client,
  defaultRouter,
  defaultRules,
  PASSWORDS,
  testApp,
} from "./support/session-app.ts";

const TYP = "example-device+jwt";
const SECRET = "agent-one-secret-0123456789";

let served: Served;
let issuer: string;
let server: AuthorizationServer;
let human: Client;
const tokenOutcomes: string[] = [];

beforeAll(async () => {
  let route: ((request: Request) => Promise<Response>) | undefined;
  served = await serveFetch((request) => (route as (r: Request) => Promise<Response>)(request));
  issuer = served.url;

  const clients = new MemoryClientStore();
  await clients.register({ clientId: "agent-1", secret: SECRET, name: "Agent one" });
  await clients.register({ clientId: "agent-2", secret: `${SECRET}-2` });
  const keys = await generateKeySet();
  const sign = jwtSigner({ keys, typ: TYP, issuer });
  const service = new DeviceAuthorizationService({
    verificationUri: `${issuer}/device`,
    intervalSeconds: 1,
    lifetimeSeconds: 30,
  });
  server = authorizationServer({
    issuer,
    service,
    clients,
    keys,
    scopes: ["read", "write"],
    issueAccessToken: async ({ subject, scope }) => {
      const { token } = await sign({
        subject,
        audience: `${issuer}/api`,
        claims: { scope: scope.join(" ") },
      });
      return { accessToken: token, expiresIn: 120 };
    },
    clientCredentials: async ({ client, scope }) => {
      if (scope?.includes("write"))
        return { error: "invalid_scope", description: "write needs a human" };
      const { token } = await sign({ subject: client.clientId, audience: `${issuer}/api` });
      return { accessToken: token, expiresIn: 60, scope: ["read"] };
    },
  });
  const approve = deviceApproveHandler({ service });
  const app = await testApp({
    clock: { now: Date.now, advance: () => {} },
    session: { secure: false },
    rules: [
      authz.match("GET", "/.well-known/**").permitAll(),
      authz.match("POST", "/oauth/device_authorization").permitAll(),
      authz.match("POST", "/oauth/token").permitAll(),
      authz.match("POST", "/device/approve").authenticated(),
      ...defaultRules(),
    ],
    router: async (request) => {
      const answered = await server.route(request);
      if (answered !== undefined) {
        if (new URL(request.url).pathname === "/oauth/token")
          tokenOutcomes.push((await answered.clone().json()).error ?? "token");
        return answered;
      }
      if (new URL(request.url).pathname === "/device/approve") return approve(request);
      return defaultRouter(request);
    },
  });
  route = app.handler;
  // The human's browser, over the same socket.
  human = socketClient(issuer, app.cookieName);
  expect((await human.login("alice", PASSWORDS.alice)).status).toBeLessThan(400);
});

afterAll(() => served.close());

function discover(clientId = "agent-1", secret = SECRET, basic = false) {
  return discoverClient(issuer, clientId, secret, basic ? "basic" : "post");
}

function decide(userCode: string, action: "approve" | "deny"): Promise<Response> {
  return decideAs(human, "/device/approve", userCode, action);
}

function rawPoll(deviceCode: string, clientId = "agent-1", secret = SECRET) {
  return pollToken(issuer, deviceCode, clientId, secret);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean): Promise<void> {
  while (!check()) await sleep(25);
}

describe("device flow with openid-client", () => {
  it("discovers the RFC 8414 metadata; every URL is absolute and built from the issuer", async () => {
    const config = await discover();
    const metadata = config.serverMetadata();
    expect(metadata.issuer).toBe(issuer);
    expect(metadata.device_authorization_endpoint).toBe(`${issuer}/oauth/device_authorization`);
    expect(metadata.token_endpoint).toBe(`${issuer}/oauth/token`);
    expect(metadata.jwks_uri).toBe(`${issuer}/.well-known/jwks.json`);
    expect(metadata.grant_types_supported).toEqual([
      "urn:ietf:params:oauth:grant-type:device_code",
      "client_credentials",
    ]);
    const spoofed = await fetch(`${issuer}/.well-known/oauth-authorization-server`, {
      headers: { host: "evil.example", "x-forwarded-host": "evil.example" },
    });
    expect(JSON.stringify(await spoofed.json())).not.toContain("evil");
    const jwks = (await (await fetch(`${issuer}/.well-known/jwks.json`)).json()) as {
      keys: { alg: string; d?: string }[];
    };
    expect(jwks.keys[0]?.alg).toBe("EdDSA");
    expect(jwks.keys[0]).not.toHaveProperty("d");
  });

  it("polls through authorization_pending to a token once the human approves", async () => {
    const config = await discover();
    const authorization = await oidc.initiateDeviceAuthorization(config, { scope: "read write" });
    expect(authorization.user_code).toMatch(
      /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/,
    );
    expect(authorization.verification_uri).toBe(`${issuer}/device`);
    expect(authorization.verification_uri_complete).toContain(
      encodeURIComponent(authorization.user_code),
    );
    expect(authorization.interval).toBe(1);
    const before = tokenOutcomes.length;
    const polled = oidc.pollDeviceAuthorizationGrant(config, authorization);
    await until(
      () => tokenOutcomes.slice(before).filter((o) => o === "authorization_pending").length >= 2,
    );
    // The human types the code in lower case without its dash.
    const approved = await decide(
      authorization.user_code.replace("-", "").toLowerCase(),
      "approve",
    );
    expect(approved.status).toBe(200);
    const tokens = await polled;
    expect(tokens.token_type).toBe("bearer");
    expect(tokens.scope).toBe("read write");
    expect(tokens.refresh_token).toBeUndefined();
    const verified = await jwtVerifier({
      keys: await keysOfServer(),
      typ: TYP,
      issuer,
    })(tokens.access_token, { audience: `${issuer}/api` });
    expect(verified.claims.sub).toBe("alice");

    // Re-polling the consumed code: invalid_grant, for openid-client and for a raw client.
    await expect(oidc.pollDeviceAuthorizationGrant(config, authorization)).rejects.toMatchObject({
      error: "invalid_grant",
    });
    expect((await rawPoll(authorization.device_code)).body.error).toBe("invalid_grant");
  });

  it("answers slow_down to a client polling faster than the interval, and adds 5 s to it", async () => {
    const config = await discover("agent-1", SECRET, true);
    const authorization = await oidc.initiateDeviceAuthorization(config, { scope: "read" });
    const before = tokenOutcomes.length;
    // openid-client waits one interval (1 s) before its first poll; another
    // poll half-way through makes that first poll come too soon.
    const polled = oidc.pollDeviceAuthorizationGrant(config, authorization);
    await sleep(500);
    expect((await rawPoll(authorization.device_code)).body.error).toBe("authorization_pending");
    await until(() => tokenOutcomes.slice(before).includes("slow_down"));
    expect(tokenOutcomes.slice(before)).toEqual(["authorization_pending", "slow_down"]);
    expect((await decide(authorization.user_code, "approve")).status).toBe(200);
    const started = Date.now();
    const tokens = await polled;
    // openid-client waited its interval plus five seconds before polling again.
    expect(Date.now() - started).toBeGreaterThan(4000);
    expect(tokens.access_token).toBeTruthy();
  });

  it("answers access_denied once the human denies", async () => {
    const config = await discover();
    const authorization = await oidc.initiateDeviceAuthorization(config, { scope: "read" });
    expect((await decide(authorization.user_code, "deny")).status).toBe(200);
    await expect(oidc.pollDeviceAuthorizationGrant(config, authorization)).rejects.toMatchObject({
      error: "access_denied",
    });
    // A denial is final: approving afterwards changes nothing.
    expect((await decide(authorization.user_code, "approve")).status).toBe(400);
  });

  it("answers expired_token once the device code has lived its lifetime", async () => {
    const short = new DeviceAuthorizationService({
      verificationUri: `${issuer}/device`,
      intervalSeconds: 1,
      lifetimeSeconds: 1,
    });
    const clients = new MemoryClientStore();
    await clients.register({ clientId: "agent-1", secret: SECRET });
    const expiring = authorizationServer({
      issuer,
      service: short,
      clients,
      scopes: ["read"],
      paths: { deviceAuthorization: "/short/device_authorization", token: "/short/token" },
      issueAccessToken: async () => ({ accessToken: "never", expiresIn: 1 }),
    });
    const answer = (path: string, body: Record<string, string>) =>
      expiring.route(
        new Request(`${issuer}${path}`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ client_id: "agent-1", client_secret: SECRET, ...body }),
        }),
      ) as Promise<Response>;
    const begun = (await (
      await answer("/short/device_authorization", { scope: "read" })
    ).json()) as {
      device_code: string;
    };
    await sleep(1100);
    const polled = await answer("/short/token", {
      grant_type: "urn:ietf:params:oauth:grant-type:device_code",
      device_code: begun.device_code,
    });
    expect(polled.status).toBe(400);
    expect(await polled.json()).toMatchObject({ error: "expired_token" });
  });

  it("serves client_credentials through the integrator's callback", async () => {
    const config = await discover();
    const tokens = await oidc.clientCredentialsGrant(config, { scope: "read" });
    expect(tokens.scope).toBe("read");
    expect(tokens.expires_in).toBe(60);
    await expect(oidc.clientCredentialsGrant(config, { scope: "write" })).rejects.toMatchObject({
      error: "invalid_scope",
    });
    await expect(oidc.clientCredentialsGrant(config, { scope: "admin" })).rejects.toMatchObject({
      error: "invalid_scope",
    });
  });

  it("refuses a wrong secret with 401 invalid_client and a Basic challenge", async () => {
    const config = await discover("agent-1", "wrong-secret-0123456789", true);
    const refused = await oidc.clientCredentialsGrant(config, { scope: "read" }).catch((e) => e);
    expect(refused).toBeInstanceOf(oidc.WWWAuthenticateChallengeError);
    expect(refused.response.status).toBe(401);
    expect(await refused.response.json()).toMatchObject({ error: "invalid_client" });
    const response = await fetch(`${issuer}/oauth/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${btoa("agent-1:wrong-secret-0123456789")}`,
      },
      body: "grant_type=client_credentials",
    });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toMatch(/^Basic /);
    expect(response.headers.get("cache-control")).toBe("no-store");
  });
});

describe("device flow under attack, over the socket", () => {
  async function begin(clientId = "agent-1", secret = SECRET) {
    const response = await fetch(`${issuer}/oauth/device_authorization`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: clientId, client_secret: secret, scope: "read" }),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as { device_code: string; user_code: string };
  }

  it("hands out exactly one token to 20 concurrent polls after approval", async () => {
    const { device_code, user_code } = await begin();
    expect((await decide(user_code, "approve")).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 20 }, () => rawPoll(device_code)));
    const tokens = answers.filter((answer) => answer.status === 200);
    expect(tokens).toHaveLength(1);
    for (const answer of answers.filter((a) => a.status !== 200))
      expect(["slow_down", "invalid_grant"]).toContain(answer.body.error);
  });

  it("refuses a device code polled by another client, and keeps it usable by its own", async () => {
    const { device_code, user_code } = await begin();
    expect((await decide(user_code, "approve")).status).toBe(200);
    expect((await rawPoll(device_code, "agent-2", `${SECRET}-2`)).body.error).toBe("invalid_grant");
    const own = await rawPoll(device_code);
    expect(own.status).toBe(200);
    expect(own.body.access_token).toBeTruthy();
  });

  it("stops a human guessing user codes after the budget, even with the right code next", async () => {
    const guesser = socketClient(issuer, human.cookieName);
    expect((await guesser.login("ada", PASSWORDS.ada)).status).toBeLessThan(400);
    const { user_code } = await begin();
    const token = await guesser.csrf();
    const guess = (code: string) =>
      guesser.fetch("/device/approve", {
        method: "POST",
        token,
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ user_code: code, action: "approve" }).toString(),
      });
    const wrong = await Promise.all(Array.from({ length: 8 }, () => guess("BBBB-BBBB")));
    expect(wrong.map((r) => r.status).sort()).toEqual([400, 400, 400, 400, 400, 429, 429, 429]);
    const right = await guess(user_code);
    expect(right.status).toBe(429);
    expect(Number(right.headers.get("retry-after"))).toBeGreaterThan(0);
    // Another human's budget is their own.
    expect((await decide(user_code, "approve")).status).toBe(200);
  });

  it("refuses JSON bodies, repeated parameters and unknown scopes with precise errors", async () => {
    const post = (body: string, type = "application/x-www-form-urlencoded") =>
      fetch(`${issuer}/oauth/device_authorization`, {
        method: "POST",
        headers: { "content-type": type },
        body,
      });
    const auth = `client_id=agent-1&client_secret=${SECRET}`;
    const json = await post(JSON.stringify({ client_id: "agent-1" }), "application/json");
    expect([json.status, ((await json.json()) as { error: string }).error]).toEqual([
      400,
      "invalid_request",
    ]);
    const repeated = await post(`${auth}&scope=read&scope=write`);
    expect(((await repeated.json()) as { error: string }).error).toBe("invalid_request");
    const unknown = await post(`${auth}&scope=read%20admin`);
    expect([unknown.status, ((await unknown.json()) as { error: string }).error]).toEqual([
      400,
      "invalid_scope",
    ]);
    const huge = await post(`${auth}&scope=${"read%20".repeat(3000)}`);
    expect([huge.status, ((await huge.json()) as { error: string }).error]).toEqual([
      413,
      "invalid_request",
    ]);
    const grant = await fetch(`${issuer}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `${auth}&grant_type=password`,
    });
    expect(((await grant.json()) as { error: string }).error).toBe("unsupported_grant_type");
  });
});

async function keysOfServer() {
  const { importKeySet } = await import("portcullis/jwt");
  const jwks = (await (await fetch(`${issuer}/.well-known/jwks.json`)).json()) as {
    keys: { kid: string }[];
  };
  const key = jwks.keys[0] as { kid: string };
  return importKeySet({ keys: [{ kid: key.kid, alg: "EdDSA", publicKey: key as never }] });
}
