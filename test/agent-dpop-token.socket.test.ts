/**
 * DPoP (RFC 9449) at the token endpoint of `agentAuth({ dpop })`, over a real
 * socket: openid-client's own DPoP support drives the device flow, the
 * `client_credentials` refresh and execute; the `dpop` package makes the
 * proofs of the adversarial cases, sent by hand.
 */
import * as dpop from "dpop";
import { decodeJwt } from "jose";
import * as oidc from "openid-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentAuth,
  type AgentAuthStores,
  type AgentDpopOptions,
  agentAuth,
  MemoryGrantStore,
  MemoryReplayStore,
} from "../src/agentauth/index.ts";
import { bindAuthentication, createAuthentication } from "../src/core/authentication.ts";
import { generateKeySet, type KeySet } from "../src/jwt/index.ts";
import { MemoryClientStore } from "../src/oauth2/index.ts";
import { PostgresReplayStore } from "../src/stores/postgres/index.ts";
import { RedisReplayStore } from "../src/stores/redis/index.ts";
import { discover } from "./oauth-helpers.ts";
import { type Served, serveFetch } from "./serve.ts";
import { postgresForTests } from "./support/postgres.ts";
import { redisForTests } from "./support/redis.ts";

const redis = redisForTests();
const { pool } = postgresForTests("dpop_token");

const NONCE_SECRET = "a-dpop-nonce-secret-of-32-characters-or-more";
const SECRET = "agent-one-secret-0123456789";
const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

let keys: KeySet;
let key: dpop.KeyPair;
let thief: dpop.KeyPair;
const servers: Served[] = [];

beforeAll(async () => {
  keys = await generateKeySet();
  key = await dpop.generateKeyPair("ES256");
  thief = await dpop.generateKeyPair("ES256");
});

afterAll(async () => {
  for (const server of servers) await server.close();
});

interface Site {
  readonly base: string;
  /** The configured token URL. */
  readonly token: string;
  /** This server's own token socket address (differs from `token` when configured with another issuer). */
  readonly socket: string;
  readonly execute: string;
  readonly agents: AgentAuth;
}

async function site(
  options: AgentDpopOptions | undefined,
  shared: { stores?: AgentAuthStores; issuer?: string } = {},
): Promise<Site> {
  let route: (request: Request) => Promise<Response> = async () => new Response(null);
  const served = await serveFetch((request) => route(request));
  servers.push(served);
  const issuer = shared.issuer ?? served.url;
  const clients = new MemoryClientStore();
  await clients.register({ clientId: "agent-1", secret: SECRET });
  await clients.register({ clientId: "agent-bound", secret: SECRET, dpopBoundAccessTokens: true });
  const agents = await agentAuth({
    issuer,
    clients,
    ...(shared.stores === undefined ? {} : { stores: shared.stores }),
    keys,
    pollIntervalSeconds: 1,
    ...(options === undefined ? {} : { dpop: options }),
    capabilities: [{ name: "read", description: "Reads.", handler: () => "read" }],
  });
  route = async (request) => (await agents.route(request)) ?? new Response(null, { status: 404 });
  return {
    base: served.url,
    token: `${issuer}/oauth/token`,
    execute: `${issuer}/capability/execute`,
    socket: `${served.url}/oauth/token`,
    agents,
  };
}

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly nonce: string | null;
}

/** A token request with client_secret_post and the given proofs. */
async function tokenRequest(
  at: Site,
  form: Record<string, string>,
  proof?: string,
  clientId = "agent-1",
): Promise<Answer> {
  const headers = new Headers({ "content-type": "application/x-www-form-urlencoded" });
  if (proof !== undefined) headers.set("dpop", proof);
  const response = await fetch(at.socket, {
    method: "POST",
    headers,
    body: new URLSearchParams({ ...form, client_id: clientId, client_secret: SECRET }),
  });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    nonce: response.headers.get("dpop-nonce"),
  };
}

const proofAt = (pair: dpop.KeyPair, url: string, nonce?: string) =>
  dpop.generateProof(pair, url, "POST", nonce);

/** Begins a device authorization as `clientId` and has alice approve it; the device code. */
async function approvedDeviceCode(at: Site, clientId = "agent-1"): Promise<string> {
  const begun = await tokenRequestAt(
    at,
    "/oauth/device_authorization",
    { scope: "read" },
    clientId,
  );
  const human = new Request(`${at.base}/agent/approve`);
  bindAuthentication(human, createAuthentication("alice", ["USER"]));
  const approved = await at.agents.service.authorize(human, begun.user_code as string, clientId);
  expect(approved.ok).toBe(true);
  return begun.device_code as string;
}

async function tokenRequestAt(
  at: Site,
  path: string,
  form: Record<string, string>,
  clientId: string,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${at.base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...form, client_id: clientId, client_secret: SECRET }),
  });
  return (await response.json()) as Record<string, unknown>;
}

async function execute(at: Site, token: string, proof: string): Promise<number> {
  const response = await fetch(at.execute, {
    method: "POST",
    headers: { authorization: `DPoP ${token}`, dpop: proof, "content-type": "application/json" },
    body: JSON.stringify({ capability: "read" }),
  });
  await response.body?.cancel();
  return response.status;
}

function claims(token: string): Record<string, unknown> {
  // Read only, never trusted: the server verified it.
  return decodeJwt(token);
}

describe.each([
  ["nonces off", {}],
  ["nonces required", { nonce: { secret: NONCE_SECRET, required: true } }],
])("openid-client with DPoP, end to end (%s)", (_name, options: AgentDpopOptions) => {
  it("device flow, execute, client_credentials refresh, execute: every token bound to the key", async () => {
    const at = await site(options);
    const config = await discover(at.base, "agent-1", SECRET);
    const handle = oidc.getDPoPHandle(config, key);
    const begun = await oidc.initiateDeviceAuthorization(config, { scope: "read" });
    const human = new Request(`${at.base}/agent/approve`);
    bindAuthentication(human, createAuthentication("alice", ["USER"]));
    expect((await at.agents.service.authorize(human, begun.user_code, "agent-1")).ok).toBe(true);
    const first = await oidc.pollDeviceAuthorizationGrant(config, begun, undefined, {
      DPoP: handle,
    });
    const jkt = await dpop.calculateThumbprint(key.publicKey);
    expect(first.token_type).toBe("dpop");
    expect(claims(first.access_token).cnf).toEqual({ jkt });
    const headers = new Headers({ "content-type": "application/json" });
    const body = JSON.stringify({ capability: "read" });
    const ran = await oidc.fetchProtectedResource(
      config,
      first.access_token,
      new URL(at.execute),
      "POST",
      body,
      headers,
      { DPoP: handle },
    );
    expect(ran.status).toBe(200);
    const refreshed = await oidc.clientCredentialsGrant(
      config,
      { scope: "read" },
      { DPoP: handle },
    );
    expect(refreshed.token_type).toBe("dpop");
    expect(claims(refreshed.access_token).cnf).toEqual({ jkt });
    const again = await oidc.fetchProtectedResource(
      config,
      refreshed.access_token,
      new URL(at.execute),
      "POST",
      body,
      headers,
      { DPoP: handle },
    );
    expect(again.status).toBe(200);
  });
});

describe("the token endpoint with dpop on", () => {
  it("a bad proof on the approved poll spends no device code: the next good poll gets the token", async () => {
    const at = await site({});
    const deviceCode = await approvedDeviceCode(at);
    const form = { grant_type: DEVICE_GRANT, device_code: deviceCode };
    for (const bad of [
      await proofAt(key, `${at.base}/elsewhere`),
      await dpop.generateProof(key, at.token, "GET"),
      "not.a.proof",
    ]) {
      const refused = await tokenRequest(at, form, bad);
      expect(refused.status).toBe(400);
      expect(refused.body.error).toBe("invalid_dpop_proof");
    }
    const ok = await tokenRequest(at, form, await proofAt(key, at.token));
    expect(ok.status).toBe(200);
    expect(ok.body.token_type).toBe("DPoP");
    expect(claims(ok.body.access_token as string).cnf).toEqual({
      jkt: await dpop.calculateThumbprint(key.publicKey),
    });
  });

  it("refuses a replayed proof, even for another grant type", async () => {
    const at = await site({});
    const deviceCode = await approvedDeviceCode(at);
    const proof = await proofAt(key, at.token);
    const form = { grant_type: DEVICE_GRANT, device_code: deviceCode };
    expect((await tokenRequest(at, form, proof)).status).toBe(200);
    const replayed = await tokenRequest(at, { grant_type: "client_credentials" }, proof);
    expect(replayed.status).toBe(400);
    expect(replayed.body.error).toBe("invalid_dpop_proof");
  });

  it("records a proof only for a token handed out: requests that mint nothing cannot fill the replay store", async () => {
    // A store this small would be full after eight recorded proofs.
    const at = await site({}, { stores: { replay: new MemoryReplayStore({ maxEntries: 8 }) } });
    for (let i = 0; i < 20; i++) {
      const refused = await tokenRequest(
        at,
        { grant_type: DEVICE_GRANT, device_code: `no-such-code-${i}` },
        await proofAt(key, at.token),
      );
      expect(refused.body.error).toBe("invalid_grant");
    }
    const deviceCode = await approvedDeviceCode(at);
    const form = { grant_type: DEVICE_GRANT, device_code: deviceCode };
    const served = await tokenRequest(at, form, await proofAt(key, at.token));
    expect([served.status, served.body.token_type]).toEqual([200, "DPoP"]);
  });

  it("a replayed proof on an approved poll gives the approval back: the next poll with a fresh proof is served", async () => {
    const at = await site({});
    const proof = await proofAt(key, at.token);
    const first = await approvedDeviceCode(at);
    const form = (code: string) => ({ grant_type: DEVICE_GRANT, device_code: code });
    expect((await tokenRequest(at, form(first), proof)).status).toBe(200);
    const second = await approvedDeviceCode(at);
    const replayed = await tokenRequest(at, form(second), proof);
    expect([replayed.status, replayed.body.error]).toEqual([400, "invalid_dpop_proof"]);
    // The poll interval (1 s here) applies to the retry as to any poll.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const served = await tokenRequest(at, form(second), await proofAt(key, at.token));
    expect([served.status, served.body.error]).toEqual([200, undefined]);
  });

  it("without a proof: a Bearer token as before, unless the client or dpop.required needs one", async () => {
    const at = await site({ bindGrant: false });
    await approvedDeviceCode(at).then((code) =>
      tokenRequest(at, { grant_type: DEVICE_GRANT, device_code: code }),
    );
    const bearer = await tokenRequest(at, { grant_type: "client_credentials" });
    expect(bearer.status).toBe(200);
    expect(bearer.body.token_type).toBe("Bearer");
    expect(claims(bearer.body.access_token as string).cnf).toBeUndefined();
    const code = await approvedDeviceCode(at, "agent-bound");
    const form = { grant_type: DEVICE_GRANT, device_code: code };
    const refused = await tokenRequest(at, form, undefined, "agent-bound");
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe("invalid_dpop_proof");
    // The refusal spent nothing: the same code with a proof is served.
    const ok = await tokenRequest(at, form, await proofAt(key, at.token), "agent-bound");
    expect(ok.body.token_type).toBe("DPoP");

    const strict = await site({ required: true });
    const strictCode = await approvedDeviceCode(strict);
    const needed = await tokenRequest(strict, {
      grant_type: DEVICE_GRANT,
      device_code: strictCode,
    });
    expect(needed.status).toBe(400);
    expect(needed.body.error).toBe("invalid_dpop_proof");
  });

  it("a client registered for bound tokens gets none from a server without dpop", async () => {
    const at = await site(undefined);
    const code = await approvedDeviceCode(at, "agent-bound");
    const form = { grant_type: DEVICE_GRANT, device_code: code };
    const refused = await tokenRequest(at, form, await proofAt(key, at.token), "agent-bound");
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe("invalid_dpop_proof");
  });

  it("nonce required: use_dpop_nonce with DPoP-Nonce, spending nothing; the retry with it is served", async () => {
    const at = await site({ nonce: { secret: NONCE_SECRET, required: true } });
    const deviceCode = await approvedDeviceCode(at);
    const form = { grant_type: DEVICE_GRANT, device_code: deviceCode };
    const first = await tokenRequest(at, form, await proofAt(key, at.token));
    expect(first.status).toBe(400);
    expect(first.body.error).toBe("use_dpop_nonce");
    expect(first.nonce).toMatch(/^[A-Za-z0-9_-]{54}$/);
    const stale = await tokenRequest(at, form, await proofAt(key, at.token, "x".repeat(54)));
    expect(stale.body.error).toBe("use_dpop_nonce");
    const ok = await tokenRequest(at, form, await proofAt(key, at.token, first.nonce as string));
    expect(ok.status).toBe(200);
    expect(ok.body.token_type).toBe("DPoP");
    expect(ok.nonce).toBe(first.nonce);
    expect(
      await execute(
        at,
        ok.body.access_token as string,
        await dpop.generateProof(
          key,
          at.execute,
          "POST",
          first.nonce as string,
          ok.body.access_token as string,
        ),
      ),
    ).toBe(200);
  });
});

describe("a grant bound to the approval poll's key (bindGrant)", () => {
  async function boundGrant(options: AgentDpopOptions = {}) {
    const at = await site(options);
    const deviceCode = await approvedDeviceCode(at);
    const first = await tokenRequest(
      at,
      { grant_type: DEVICE_GRANT, device_code: deviceCode },
      await proofAt(key, at.token),
    );
    expect(first.status).toBe(200);
    return at;
  }

  it("stores the key on the grant; a refresh must prove it", async () => {
    const at = await boundGrant();
    const jkt = await dpop.calculateThumbprint(key.publicKey);
    const [grant] = await at.agents.grantsApprovedBy("alice");
    expect(grant?.jkt).toBe(jkt);
    const ok = await tokenRequest(
      at,
      { grant_type: "client_credentials" },
      await proofAt(key, at.token),
    );
    expect(ok.status).toBe(200);
    expect(claims(ok.body.access_token as string).cnf).toEqual({ jkt });
  });

  it("a leaked client secret with another key, or with none, mints nothing", async () => {
    const at = await boundGrant();
    const other = await tokenRequest(
      at,
      { grant_type: "client_credentials" },
      await proofAt(thief, at.token),
    );
    expect(other.status).toBe(400);
    expect(other.body).toMatchObject({
      error: "invalid_grant",
      error_description: "the grant is bound to another key",
    });
    const none = await tokenRequest(at, { grant_type: "client_credentials" });
    expect(none.status).toBe(400);
    expect(none.body).toMatchObject({
      error: "invalid_dpop_proof",
      error_description: "this grant needs a DPoP proof",
    });
    // Nor through the refresh a channel of the application calls.
    const refreshed = await at.agents.refresh("agent-1");
    expect(refreshed).toEqual({ ok: false, reason: "dpop_proof_required" });
  });

  it("openid-client refreshing with another key is refused", async () => {
    const at = await boundGrant();
    const config = await discover(at.base, "agent-1", SECRET);
    await expect(
      oidc.clientCredentialsGrant(
        config,
        { scope: "read" },
        { DPoP: oidc.getDPoPHandle(config, thief) },
      ),
    ).rejects.toMatchObject({ error: "invalid_grant" });
  });

  it("bindGrant: false leaves the grant unbound: each token is bound to its own request's key", async () => {
    const at = await boundGrant({ bindGrant: false });
    const [grant] = await at.agents.grantsApprovedBy("alice");
    expect(grant?.jkt).toBeUndefined();
    const other = await tokenRequest(
      at,
      { grant_type: "client_credentials" },
      await proofAt(thief, at.token),
    );
    expect(claims(other.body.access_token as string).cnf).toEqual({
      jkt: await dpop.calculateThumbprint(thief.publicKey),
    });
  });
});

describe("several approvals of one agent", () => {
  /** A device flow as openid-client runs it, approved by `human`; the poll with `handle` when given. */
  async function approvedByDeviceFlow(
    config: oidc.Configuration,
    at: Site,
    human: string,
    handle?: oidc.DPoPHandle,
  ) {
    const begun = await oidc.initiateDeviceAuthorization(config, { scope: "read" });
    const approver = new Request(`${at.base}/agent/approve`);
    bindAuthentication(approver, createAuthentication(human, ["USER"]));
    expect((await at.agents.service.authorize(approver, begun.user_code, "agent-1")).ok).toBe(true);
    return oidc.pollDeviceAuthorizationGrant(
      config,
      begun,
      undefined,
      handle === undefined ? undefined : { DPoP: handle },
    );
  }

  it("a bound grant takes its human's next approval only from a poll proving its key; a refused poll spends nothing", async () => {
    const at = await site({});
    const bound = await approvedDeviceCode(at);
    const form = (code: string) => ({ grant_type: DEVICE_GRANT, device_code: code });
    expect((await tokenRequest(at, form(bound), await proofAt(key, at.token))).status).toBe(200);
    const again = await approvedDeviceCode(at);
    const none = await tokenRequest(at, form(again));
    expect([none.status, none.body.error]).toEqual([400, "invalid_dpop_proof"]);
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // the poll interval
    const other = await tokenRequest(at, form(again), await proofAt(thief, at.token));
    expect([other.status, other.body.error]).toEqual([400, "invalid_dpop_proof"]);
    const [grant] = await at.agents.grantsApprovedBy("alice");
    expect(grant?.jkt).toBe(await dpop.calculateThumbprint(key.publicKey));
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const served = await tokenRequest(at, form(again), await proofAt(key, at.token));
    expect([served.status, served.body.token_type]).toEqual([200, "DPoP"]);
    expect(await at.agents.grantsApprovedBy("alice")).toHaveLength(1);
  });

  for (const [name, humans] of [
    ["the same human", ["alice", "alice"]],
    ["two humans", ["alice", "bob"]],
  ] as const)
    it(`approved without a key, then with one (${name}): the client secret alone mints nothing`, async () => {
      const at = await site({});
      const config = await discover(at.base, "agent-1", SECRET);
      const handle = oidc.getDPoPHandle(config, key);
      const bearer = await approvedByDeviceFlow(config, at, humans[0]);
      expect(bearer.token_type).toBe("bearer");
      const bound = await approvedByDeviceFlow(config, at, humans[1], handle);
      expect(bound.token_type).toBe("dpop");
      await expect(oidc.clientCredentialsGrant(config, { scope: "read" })).rejects.toMatchObject({
        error: "invalid_dpop_proof",
      });
      expect(await at.agents.refresh("agent-1")).toEqual({
        ok: false,
        reason: "dpop_proof_required",
      });
      // With the key, a bound token.
      const refreshed = await oidc.clientCredentialsGrant(
        config,
        { scope: "read" },
        { DPoP: handle },
      );
      expect(claims(refreshed.access_token).cnf).toEqual({
        jkt: await dpop.calculateThumbprint(key.publicKey),
      });
    });
});

describe("metadata", () => {
  it("publishes dpop_signing_alg_values_supported in RFC 8414 metadata and discovery only when on", async () => {
    const on = await site({});
    const off = await site(undefined);
    const read = async (at: Site, path: string) =>
      (await (await fetch(`${at.base}${path}`)).json()) as Record<string, unknown>;
    for (const path of [
      "/.well-known/oauth-authorization-server",
      "/.well-known/agent-configuration",
    ]) {
      expect((await read(on, path)).dpop_signing_alg_values_supported, path).toEqual([
        "ES256",
        "EdDSA",
        "Ed25519",
      ]);
      expect(await read(off, path), path).not.toHaveProperty("dpop_signing_alg_values_supported");
    }
  });
});

describe.each([
  ["Redis", () => new RedisReplayStore({ client: redis.client, prefix: `${redis.prefix}jti:` })],
  ["PostgreSQL", () => new PostgresReplayStore({ pool })],
])("two instances sharing the replay store (%s)", (_name, replay) => {
  it("a token-endpoint proof spent on one is refused on the other", async () => {
    const stores = { grants: new MemoryGrantStore(), replay: replay() };
    const a = await site({ bindGrant: false }, { stores });
    // Behind one load balancer: B is configured with A's URLs, whatever its socket.
    const b = await site({ bindGrant: false }, { stores, issuer: a.base });
    expect(b.token).toBe(a.token);
    const code = await approvedDeviceCode(a);
    await tokenRequest(a, { grant_type: DEVICE_GRANT, device_code: code });
    const proof = await proofAt(key, a.token);
    expect((await tokenRequest(a, { grant_type: "client_credentials" }, proof)).status).toBe(200);
    const replayed = await tokenRequest(b, { grant_type: "client_credentials" }, proof);
    expect(replayed.status).toBe(400);
    expect(replayed.body.error).toBe("invalid_dpop_proof");
    const fresh = await tokenRequest(
      b,
      { grant_type: "client_credentials" },
      await proofAt(key, b.token),
    );
    expect(fresh.status).toBe(200);
  });
});
