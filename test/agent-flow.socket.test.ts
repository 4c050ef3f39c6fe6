/**
 * Agents end to end, over a real socket, behind the full chain: an agent
 * holding an API key begins with openid-client, a signed-in human approves
 * by user code, the agent executes, refreshes by client_credentials, and
 * loses access when the human revokes.
 */
import * as oidc from "openid-client";
import { type AgentAuth, type AgentEvent, agentAuth, agentSessionFrom } from "portcullis/agentauth";
import * as authz from "portcullis/authz";
import { MemoryClientStore } from "portcullis/oauth2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decide as decideAs, discover as discoverClient, socketClient } from "./oauth-helpers.ts";
import { type Served, serveFetch } from "./serve.ts";
import {
  type Client,
  defaultRouter,
  defaultRules,
  PASSWORDS,
  testApp,
} from "./support/session-app.ts";

const KEY_ID = "key_research";
const KEY_SECRET = "research-agent-secret-0123456789";
const OTHER_ID = "key_other";
const OTHER_SECRET = "other-agent-secret-0123456789";

let served: Served;
let issuer: string;
let agents: AgentAuth;
let human: Client;
const events: AgentEvent[] = [];
const notes: string[] = [];
const sessionsSeen: unknown[] = [];

beforeAll(async () => {
  let route: ((request: Request) => Promise<Response>) | undefined;
  served = await serveFetch((request) => (route as (r: Request) => Promise<Response>)(request));
  issuer = served.url;
  const clients = new MemoryClientStore();
  await clients.register({
    clientId: KEY_ID,
    kind: "api_key",
    secret: KEY_SECRET,
    name: "Research agent",
  });
  await clients.register({
    clientId: OTHER_ID,
    kind: "api_key",
    secret: OTHER_SECRET,
    name: "Other agent",
  });
  agents = await agentAuth({
    issuer,
    clients,
    providerName: "Notes",
    pollIntervalSeconds: 1,
    onEvent: (event) => events.push(event),
    capabilities: [
      {
        name: "read_notes",
        description: "Lists the notes.",
        handler: (_args, session) => {
          sessionsSeen.push(session);
          return { notes };
        },
      },
      {
        name: "add_note",
        description: "Adds a note.",
        input: {
          type: "object",
          properties: { text: { type: "string", minLength: 1, maxLength: 200 } },
          required: ["text"],
          additionalProperties: false,
        },
        handler: (args) => {
          notes.push(args.text as string);
          return { count: notes.length };
        },
      },
      {
        name: "export_notes",
        description: "Exports the notes.",
        location: `${issuer}/files/export`,
      },
    ],
  });
  const exportGuard = agents.resolveSession(`${issuer}/files/export`);
  const app = await testApp({
    clock: { now: Date.now, advance: () => {} },
    session: { secure: false },
    authentication: agents.authenticator,
    rules: [
      authz.match("GET", "/.well-known/**").permitAll(),
      authz.match("POST", "/oauth/device_authorization").permitAll(),
      authz.match("POST", "/oauth/token").permitAll(),
      authz.match("GET", "/capability/list").permitAll(),
      authz.match("POST", "/capability/execute").permitAll(),
      authz.match("POST", "/agent/approve").authenticated(),
      authz.match("POST", "/agent/review").authenticated(),
      authz.match("/files/**").permitAll(),
      ...defaultRules(),
    ],
    router: async (request) => {
      const answered = await agents.route(request);
      if (answered !== undefined) return answered;
      const path = new URL(request.url).pathname;
      if (path === "/agent/approve") return agents.approve(request);
      // The review page, as JSON: what the code asks for and the token its form carries.
      if (path === "/agent/review")
        return Response.json(
          await agents.describe(request, (await request.formData()).get("user_code")),
        );
      if (path === "/files/export")
        return exportGuard(async (r) =>
          Response.json({ exportedFor: agentSessionFrom(r)?.principalId }),
        )(request);
      return defaultRouter(request);
    },
  });
  route = app.handler;
  human = socketClient(issuer, app.cookieName);
  expect((await human.login("alice", PASSWORDS.alice)).status).toBeLessThan(400);
});

afterAll(() => served.close());

function discover(id = KEY_ID, secret = KEY_SECRET) {
  return discoverClient(issuer, id, secret, "basic");
}

/** Reviews the code as the human would see it, then decides with the review's token. */
async function approve(userCode: string, action: "approve" | "deny" = "approve") {
  const review = (await (await decideAs(human, "/agent/review", userCode, action)).json()) as {
    reviewToken?: string;
  };
  return decideAs(human, "/agent/approve", userCode, action, {
    review: review.reviewToken ?? "",
  });
}

async function execute(token: string, capability: string, args?: unknown) {
  const response = await fetch(`${issuer}/capability/execute`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ capability, ...(args === undefined ? {} : { arguments: args }) }),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** Begins as an agent, has alice approve, and returns the first token. */
async function approvedAgent(scope: string, id = KEY_ID, secret = KEY_SECRET) {
  const config = await discover(id, secret);
  const authorization = await oidc.initiateDeviceAuthorization(config, { scope });
  const polled = oidc.pollDeviceAuthorizationGrant(config, authorization);
  expect((await approve(authorization.user_code)).status).toBe(200);
  return { config, tokens: await polled };
}

describe("an agent, end to end over the socket", () => {
  it("discovers, is approved, executes once per token, refreshes, and is cut off by revocation", async () => {
    const discovery = (await (
      await fetch(`${issuer}/.well-known/agent-configuration`)
    ).json()) as Record<string, unknown>;
    expect(discovery).toMatchObject({
      version: "1.0-draft",
      provider_name: "Notes",
      issuer,
      endpoints: {
        capabilities: `${issuer}/capability/list`,
        execute: `${issuer}/capability/execute`,
      },
      device_authorization_endpoint: `${issuer}/oauth/device_authorization`,
      token_endpoint: `${issuer}/oauth/token`,
      verification_uri: `${issuer}/agent/approve`,
      algorithms: [],
      modes: ["delegated"],
      approval_methods: ["device_authorization"],
    });

    // The agent lists capabilities with its API key through the chain's authenticator.
    const listed = await fetch(`${issuer}/capability/list`, {
      headers: { authorization: `Basic ${btoa(`${KEY_ID}:${KEY_SECRET}`)}` },
    });
    expect(listed.status).toBe(200);
    const list = (await listed.json()) as { capabilities: { name: string }[]; has_more: boolean };
    expect(list.capabilities.map((c) => c.name)).toEqual([
      "add_note",
      "export_notes",
      "read_notes",
    ]);

    const eventsBefore = events.length;
    const { config, tokens } = await approvedAgent("read_notes add_note");
    expect(tokens.scope).toBe("read_notes add_note");
    expect(tokens.expires_in).toBe(120);
    expect(tokens.refresh_token).toBeUndefined();

    const first = await execute(tokens.access_token, "read_notes");
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ data: { notes: [] } });
    expect(first.headers.get("cache-control")).toBe("no-store");
    const replayed = await execute(tokens.access_token, "read_notes");
    expect([replayed.status, replayed.body.error]).toEqual([401, "invalid_jwt"]);
    expect(replayed.headers.get("www-authenticate")).toContain('Bearer error="invalid_token"');
    expect(replayed.headers.get("www-authenticate")).toContain("AgentAuth discovery=");

    const refreshed = await oidc.clientCredentialsGrant(config, { scope: "add_note" });
    expect(refreshed.scope).toBe("add_note");
    const added = await execute(refreshed.access_token, "add_note", { text: "hello" });
    expect([added.status, added.body]).toEqual([200, { data: { count: 1 } }]);

    const spare = await oidc.clientCredentialsGrant(config);
    const grants = await agents.grantsApprovedBy("alice");
    const grant = grants.find((g) => g.principalId === KEY_ID && g.status === "active");
    expect(grant?.capabilities).toEqual(["read_notes", "add_note"]);
    expect(grant?.expiresAt).toBe((grant?.createdAt ?? 0) + 86_400_000);
    // Another person's "agents I approved" page cannot reach this grant, whatever id it posts.
    expect(await agents.revokeApprovedBy("mallory", grant?.grantId as string)).toBeUndefined();
    expect(await agents.revokeApprovedBy("mallory", grant?.grantId as string, ["read_notes"])).toBe(
      undefined,
    );
    const still = await execute(spare.access_token, "read_notes");
    expect(still.status).toBe(200);
    const another = await oidc.clientCredentialsGrant(config);
    expect((await agents.revokeApprovedBy("alice", grant?.grantId as string))?.status).toBe(
      "revoked",
    );
    const afterRevoke = await execute(another.access_token, "read_notes");
    expect([afterRevoke.status, afterRevoke.body.error]).toEqual([403, "grant_revoked"]);
    await expect(oidc.clientCredentialsGrant(config)).rejects.toMatchObject({
      error: "invalid_grant",
    });

    const seen = events.slice(eventsBefore).map((event) => event.type);
    expect(seen).toEqual(
      expect.arrayContaining([
        "grant.created",
        "token.issued",
        "capability.executed",
        "execute.denied",
        "grant.revoked",
      ]),
    );
    const text = JSON.stringify(events);
    for (const secret of [tokens.access_token, refreshed.access_token, KEY_SECRET])
      expect(text).not.toContain(secret);
  });

  it("gives two agents approved by one human two grants, each session exactly its intersection", async () => {
    const a = await approvedAgent("read_notes");
    const b = await approvedAgent("read_notes add_note", OTHER_ID, OTHER_SECRET);
    const mine = (await agents.grantsApprovedBy("alice")).filter((g) => g.status === "active");
    const ids = new Set(mine.map((g) => g.grantId));
    expect(mine.map((g) => g.principalId)).toEqual(expect.arrayContaining([KEY_ID, OTHER_ID]));
    expect(ids.size).toBe(mine.length);
    sessionsSeen.length = 0;
    expect((await execute(a.tokens.access_token, "read_notes")).status).toBe(200);
    expect((await execute(b.tokens.access_token, "read_notes")).status).toBe(200);
    expect(sessionsSeen).toMatchObject([
      { principalId: KEY_ID, capabilities: ["read_notes"], approvedBy: "alice" },
      { principalId: OTHER_ID, capabilities: ["read_notes", "add_note"], approvedBy: "alice" },
    ]);
  });

  it("publishes a description and the capability names as scopes_supported by default", async () => {
    const discovery = (await (
      await fetch(`${issuer}/.well-known/agent-configuration`)
    ).json()) as Record<string, unknown>;
    expect(discovery.description).toBe("Capabilities of Notes for agents a human has approved.");
    const metadata = (await (
      await fetch(`${issuer}/.well-known/oauth-authorization-server`)
    ).json()) as Record<string, unknown>;
    expect(metadata.scopes_supported).toEqual(["add_note", "export_notes", "read_notes"]);
    // openid-client reads the same metadata.
    const config = await discover();
    expect(config.serverMetadata().scopes_supported).toEqual([
      "add_note",
      "export_notes",
      "read_notes",
    ]);
  });

  it("mints the first token of a grant of location capabilities for their location", async () => {
    // A grant of the location capability alone: alice's earlier one of this agent ends first.
    for (const grant of await agents.grantsApprovedBy("alice"))
      if (grant.principalId === KEY_ID) await agents.revoke(grant.grantId);
    const { config, tokens } = await approvedAgent("export_notes");
    expect(tokens.scope).toBe("export_notes");
    const exported = await fetch(`${issuer}/files/export`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect([exported.status, await exported.json()]).toEqual([200, { exportedFor: KEY_ID }]);
    // A refresh without resource= is for the same place: nothing is executable here.
    const fresh = await oidc.clientCredentialsGrant(config);
    expect(fresh.scope).toBe("export_notes");
    const again = await fetch(`${issuer}/files/export`, {
      headers: { authorization: `Bearer ${fresh.access_token}` },
    });
    expect(again.status).toBe(200);
    await expect(
      oidc.clientCredentialsGrant(config, { resource: `${issuer}/capability/execute` }),
    ).rejects.toMatchObject({ error: "invalid_target" });
  });

  it("serves a location capability only through resolveSession, with a token minted for that location", async () => {
    const { config, tokens } = await approvedAgent("export_notes read_notes");
    // A mixed grant: the first token is for execute, with the executable capabilities only.
    expect(tokens.scope).toBe("read_notes");
    const dispatched = await execute(tokens.access_token, "export_notes");
    expect([dispatched.status, dispatched.body.error, dispatched.body.location]).toEqual([
      400,
      "wrong_location",
      `${issuer}/files/export`,
    ]);
    // A token for the execute URL is refused at the location...
    const { access_token: forExecute } = await oidc.clientCredentialsGrant(config);
    const wrongAudience = await fetch(`${issuer}/files/export`, {
      headers: { authorization: `Bearer ${forExecute}` },
    });
    expect(wrongAudience.status).toBe(401);
    // ...and one asked for with resource= is accepted, once.
    const located = await oidc.clientCredentialsGrant(config, {
      resource: `${issuer}/files/export`,
    });
    expect(located.scope).toBe("export_notes");
    const exported = await fetch(`${issuer}/files/export`, {
      headers: { authorization: `Bearer ${located.access_token}` },
    });
    expect([exported.status, await exported.json()]).toEqual([200, { exportedFor: KEY_ID }]);
    const again = await fetch(`${issuer}/files/export`, {
      headers: { authorization: `Bearer ${located.access_token}` },
    });
    expect(again.status).toBe(401);
    // A location token is no execute token either.
    const other = await oidc.clientCredentialsGrant(config, { resource: `${issuer}/files/export` });
    expect((await execute(other.access_token, "read_notes")).body.error).toBe("invalid_jwt");
    await expect(
      oidc.clientCredentialsGrant(config, { resource: `${issuer}/elsewhere` }),
    ).rejects.toMatchObject({ error: "invalid_target" });
    await expect(oidc.clientCredentialsGrant(config, { scope: "add_note" })).rejects.toMatchObject({
      error: "invalid_scope",
    });
  });

  it("runs the handler exactly once for 50 concurrent uses of one token", async () => {
    const { tokens } = await approvedAgent("add_note");
    const before = notes.length;
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => execute(tokens.access_token, "add_note", { text: "race" })),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.body.error === "invalid_jwt")).toHaveLength(49);
    expect(notes.length - before).toBe(1);
  });

  it("never lets an agent approve its own request with its key", async () => {
    const config = await discover();
    const request = await oidc.initiateDeviceAuthorization(config, { scope: "read_notes" });
    const selfApproval = await fetch(`${issuer}/agent/approve`, {
      method: "POST",
      headers: {
        authorization: `Basic ${btoa(`${KEY_ID}:${KEY_SECRET}`)}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ user_code: request.user_code, action: "approve" }).toString(),
    });
    expect(selfApproval.status).toBe(403);
    const poll = await fetch(`${issuer}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "urn:ietf:params:oauth:grant-type:device_code",
        device_code: request.device_code,
        client_id: KEY_ID,
        client_secret: KEY_SECRET,
      }).toString(),
    });
    expect(((await poll.json()) as { error: string }).error).toBe("authorization_pending");
  });

  it("lets a second begin by the same agent supersede the first user code", async () => {
    const config = await discover();
    const first = await oidc.initiateDeviceAuthorization(config, { scope: "read_notes" });
    const second = await oidc.initiateDeviceAuthorization(config, { scope: "read_notes" });
    const refused = await approve(first.user_code);
    expect(refused.status).toBe(400);
    expect((await approve(second.user_code)).status).toBe(200);
  });

  it("answers an anonymous capability list with 401 and the AgentAuth challenge; humans may list", async () => {
    const anonymous = await fetch(`${issuer}/capability/list`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: "authentication_required" });
    expect(anonymous.headers.get("www-authenticate")).toBe(
      `AgentAuth discovery="${issuer}/.well-known/agent-configuration"`,
    );
    const asHuman = await human.fetch("/capability/list?limit=2");
    const page = (await asHuman.json()) as {
      capabilities: { name: string }[];
      has_more: boolean;
      next_cursor: string;
    };
    expect(page.capabilities.map((c) => c.name)).toEqual(["add_note", "export_notes"]);
    expect(page.has_more).toBe(true);
    const next = (await (
      await human.fetch(`/capability/list?limit=2&cursor=${page.next_cursor}`)
    ).json()) as {
      capabilities: { name: string }[];
      has_more: boolean;
    };
    expect(next).toEqual({
      capabilities: [expect.objectContaining({ name: "read_notes" })],
      has_more: false,
    });
    // A wrong agent secret is 401, not a pass as anonymous.
    const wrong = await fetch(`${issuer}/capability/list`, {
      headers: { authorization: `Basic ${btoa(`${KEY_ID}:wrong`)}` },
    });
    expect(wrong.status).toBe(401);
  });

  it("never lets a capability token authenticate anything outside the agent endpoints", async () => {
    const { tokens } = await approvedAgent("read_notes");
    const home = await fetch(`${issuer}/`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(home.status).toBe(401);
    const list = await fetch(`${issuer}/capability/list`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(list.status).toBe(401);
    // Unused by those refusals: it still executes once.
    expect((await execute(tokens.access_token, "read_notes")).status).toBe(200);
  });

  it("refuses a revoked grant's tokens at the location as at execute: same answer, same event", async () => {
    const { config, tokens } = await approvedAgent(
      "export_notes read_notes",
      OTHER_ID,
      OTHER_SECRET,
    );
    const located = await oidc.clientCredentialsGrant(config, {
      resource: `${issuer}/files/export`,
    });
    for (const grant of await agents.grantsApprovedBy("alice"))
      if (grant.principalId === OTHER_ID && grant.status === "active")
        await agents.revoke(grant.grantId);
    const before = events.length;
    const atExecute = await execute(tokens.access_token, "read_notes");
    const atLocation = await fetch(`${issuer}/files/export`, {
      headers: { authorization: `Bearer ${located.access_token}` },
    });
    const refused = { error: "grant_revoked", message: "the grant was revoked" };
    expect([atExecute.status, atExecute.body]).toEqual([403, refused]);
    expect([atLocation.status, await atLocation.json()]).toEqual([403, refused]);
    const denied = events.slice(before);
    expect(denied).toEqual([
      expect.objectContaining({
        type: "execute.denied",
        error: "grant_revoked",
        principalId: OTHER_ID,
      }),
      expect.objectContaining({
        type: "execute.denied",
        error: "grant_revoked",
        principalId: OTHER_ID,
        location: `${issuer}/files/export`,
      }),
    ]);
    expect(denied[0]).not.toHaveProperty("location");
  });

  it("builds discovery URLs from the issuer, never from Host or X-Forwarded-*", async () => {
    const spoofed = await fetch(`${issuer}/.well-known/agent-configuration`, {
      headers: {
        host: "evil.example",
        "x-forwarded-host": "evil.example",
        "x-forwarded-proto": "https",
      },
    });
    const text = await spoofed.text();
    expect(text).not.toContain("evil");
    expect(spoofed.headers.get("cache-control")).toBe("public, max-age=3600");
  });
});
