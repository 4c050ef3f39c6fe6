import { beforeEach, describe, expect, it } from "vitest";
import { activeGrant } from "../../test/support/grants.ts";
import { routes } from "../authz/routes.ts";
import { match } from "../authz/rules.ts";
import { newHandler } from "../chain/new-chain.ts";
import { bindAuthentication, createAuthentication } from "../core/authentication.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { generateKeySet, type KeySet } from "../jwt/keys.ts";
import { jwtSigner } from "../jwt/sign.ts";
import { basicAuth } from "../login/basic-auth.ts";
import { passwordCredentials } from "../login/credentials.ts";
import { MemoryClientStore } from "../oauth2/clients.ts";
import { type AgentAuth, type AgentAuthOptions, agentAuth } from "./agent-auth.ts";
import { type CapabilityDefinition, CapabilityRegistry } from "./capabilities.ts";
import type { AgentEvent } from "./events.ts";
import { type Grant, type GrantLimits, MemoryGrantStore } from "./grants.ts";
import { refreshCapabilityToken } from "./refresh.ts";
import { MemoryReplayStore, type ReplayStore } from "./replay.ts";
import type { AgentSession } from "./session.ts";

const ISSUER = "https://agents.example";
const EXECUTE = `${ISSUER}/capability/execute`;
const DAY = 86_400_000;

let keys: KeySet;
let t: number;
let calls: { name: string; args: unknown; session: AgentSession }[];
let events: AgentEvent[];

const handler =
  (name: string) =>
  (args: unknown, session: AgentSession): unknown => {
    calls.push({ name, args, session });
    return { ran: name };
  };

const object = (properties: Record<string, unknown>) => ({ type: "object", properties });

function definitions(): CapabilityDefinition[] {
  return [
    { name: "a", description: "A.", handler: handler("a") },
    { name: "b", description: "B.", handler: handler("b") },
    { name: "c", description: "C.", handler: handler("c") },
    { name: "d", description: "D.", handler: handler("d") },
    {
      name: "typed",
      description: "Takes a count.",
      input: {
        type: "object",
        properties: { count: { type: "integer", minimum: 1 }, tags: { type: "object" } },
        required: ["count"],
        additionalProperties: false,
      },
      handler: handler("typed"),
    },
    { name: "free", description: "Takes anything.", handler: handler("free") },
    {
      name: "boom",
      description: "Fails.",
      handler: () => {
        throw new Error("secret database detail");
      },
    },
    { name: "remote", description: "Elsewhere.", location: `${ISSUER}/remote` },
  ];
}

async function setup(overrides: Partial<AgentAuthOptions> = {}): Promise<AgentAuth> {
  return agentAuth({
    issuer: ISSUER,
    capabilities: definitions(),
    clients: new MemoryClientStore(),
    keys,
    now: () => t,
    onEvent: (event) => events.push(event),
    onError: () => {},
    onStoreError: () => {},
    ...overrides,
  });
}

function grant(agents: AgentAuth, capabilities: string[], principalId = "agent-1"): Promise<Grant> {
  return activeGrant(agents.runtime.grants, t, capabilities, principalId);
}

async function token(agents: AgentAuth, g: Grant, capabilities: string[], audience?: string) {
  return (
    await agents.runtime.tokens.mint({
      principalId: g.principalId,
      grantId: g.grantId,
      capabilities,
      ...(audience === undefined ? {} : { audience }),
    })
  ).token;
}

async function execute(
  agents: AgentAuth,
  bearer: string | undefined,
  body: unknown,
  init: { type?: string; raw?: string } = {},
) {
  const response = await agents.execute(
    new Request(EXECUTE, {
      method: "POST",
      headers: {
        "content-type": init.type ?? "application/json",
        ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
      },
      body: init.raw ?? JSON.stringify(body),
    }),
  );
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

beforeEach(async () => {
  keys ??= await generateKeySet();
  t = Date.now();
  calls = [];
  events = [];
});

describe("execute: token ∩ grant", () => {
  it("refuses a capability in the token but not the grant, and one in the grant but not the token", async () => {
    const agents = await setup();
    const narrowGrant = await grant(agents, ["a"]);
    const inTokenOnly = await execute(agents, await token(agents, narrowGrant, ["a", "b"]), {
      capability: "b",
    });
    expect([inTokenOnly.status, inTokenOnly.body.error]).toEqual([403, "capability_not_granted"]);
    const wideGrant = await grant(agents, ["a", "b"]);
    const inGrantOnly = await execute(agents, await token(agents, wideGrant, ["a"]), {
      capability: "b",
    });
    expect([inGrantOnly.status, inGrantOnly.body.error]).toEqual([403, "capability_not_granted"]);
    expect(calls).toHaveLength(0);
  });

  it("hands the handler a session whose capabilities are exactly the intersection", async () => {
    const agents = await setup();
    const g = await grant(agents, ["b", "c", "d"]);
    const ok = await execute(agents, await token(agents, g, ["a", "b", "c"]), { capability: "b" });
    expect([ok.status, ok.body]).toEqual([200, { data: { ran: "b" } }]);
    expect(calls[0]?.session).toMatchObject({
      principalId: "agent-1",
      grantId: g.grantId,
      approvedBy: "alice",
      capabilities: ["b", "c"],
    });
    expect(Object.keys(calls[0]?.session ?? {}).sort()).toEqual(
      ["approvedBy", "capabilities", "expiresAt", "grantId", "principalId", "tokenId"].sort(),
    );
  });

  it("answers an unknown capability 404 only after authentication", async () => {
    const agents = await setup();
    const g = await grant(agents, ["a"]);
    expect((await execute(agents, undefined, { capability: "nope" })).status).toBe(401);
    expect((await execute(agents, "not.a.token", { capability: "nope" })).body.error).toBe(
      "invalid_jwt",
    );
    const found = await execute(agents, await token(agents, g, ["a"]), { capability: "nope" });
    expect([found.status, found.body.error]).toEqual([404, "capability_not_found"]);
  });

  it("never dispatches a capability with a location", async () => {
    const agents = await setup();
    const g = await grant(agents, ["remote"]);
    const answer = await execute(agents, await token(agents, g, ["remote"]), {
      capability: "remote",
    });
    expect([answer.status, answer.body.error, answer.body.location]).toEqual([
      400,
      "wrong_location",
      `${ISSUER}/remote`,
    ]);
  });
});

describe("execute: grants", () => {
  it("refuses revoked grants, wholly or per capability, and revocation is idempotent and permanent", async () => {
    const agents = await setup();
    const g = await grant(agents, ["a", "b"]);
    await agents.revoke(g.grantId, ["b"]);
    await agents.revoke(g.grantId, ["b"]);
    expect(
      (await execute(agents, await token(agents, g, ["a", "b"]), { capability: "b" })).body.error,
    ).toBe("capability_not_granted");
    expect(
      (await execute(agents, await token(agents, g, ["a", "b"]), { capability: "a" })).status,
    ).toBe(200);
    await agents.revoke(g.grantId);
    const revoked = await execute(agents, await token(agents, g, ["a"]), { capability: "a" });
    expect([revoked.status, revoked.body.error]).toEqual([403, "grant_revoked"]);
    expect(events.filter((e) => e.type === "grant.revoked")).toHaveLength(2);
    const refreshed = await agents.refresh("agent-1");
    expect(refreshed).toEqual({ ok: false, reason: "no_active_grant" });
  });

  it("expires a grant at exactly 24 hours", async () => {
    const agents = await setup();
    const g = await grant(agents, ["a"]);
    t += DAY - 1;
    expect((await execute(agents, await token(agents, g, ["a"]), { capability: "a" })).status).toBe(
      200,
    );
    t += 1;
    const expired = await execute(agents, await token(agents, g, ["a"]), { capability: "a" });
    expect([expired.status, expired.body.error]).toEqual([403, "grant_expired"]);
    expect(await agents.refresh("agent-1")).toEqual({ ok: false, reason: "no_active_grant" });
  });

  it("refuses a token whose grant belongs to another agent", async () => {
    const agents = await setup();
    const g = await grant(agents, ["a"], "agent-2");
    const forged = await agents.runtime.tokens.mint({
      principalId: "agent-1",
      grantId: g.grantId,
      capabilities: ["a"],
    });
    expect((await execute(agents, forged.token, { capability: "a" })).body.error).toBe(
      "grant_revoked",
    );
  });
});

describe("execute: tokens", () => {
  it("refuses a replayed token, an expired one, and one for another audience or of another type", async () => {
    const agents = await setup();
    const g = await grant(agents, ["a"]);
    const once = await token(agents, g, ["a"]);
    expect((await execute(agents, once, { capability: "a" })).status).toBe(200);
    expect((await execute(agents, once, { capability: "a" })).body.error).toBe("invalid_jwt");
    const old = await token(agents, g, ["a"]);
    t += 126_000; // 120 s lifetime + 5 s tolerance
    expect((await execute(agents, old, { capability: "a" })).body.error).toBe("invalid_jwt");
    t = Date.now();
    expect(
      (
        await execute(agents, await token(agents, g, ["a"], `${ISSUER}/remote`), {
          capability: "a",
        })
      ).body.error,
    ).toBe("invalid_jwt");
    // Same keys, same issuer, another typ: an access token of some other kind.
    const other = await jwtSigner({ keys, typ: "at+jwt", issuer: ISSUER })({
      subject: "agent-1",
      audience: EXECUTE,
      claims: { grant_id: g.grantId, client_id: "agent-1", capabilities: ["a"] },
    });
    expect((await execute(agents, other.token, { capability: "a" })).body.error).toBe(
      "invalid_jwt",
    );
    expect(calls).toHaveLength(1);
  });

  it("fails closed with 503 when the replay store throws or stalls, without running the handler", async () => {
    const throwing: ReplayStore = { setIfAbsent: () => Promise.reject(new Error("down")) };
    const stalled: ReplayStore = { setIfAbsent: () => new Promise(() => {}) };
    for (const replay of [throwing, stalled]) {
      const agents = await setup({ stores: { replay }, storeTimeoutMs: 50 });
      const g = await grant(agents, ["a"]);
      const started = Date.now();
      const answer = await execute(agents, await token(agents, g, ["a"]), { capability: "a" });
      expect([answer.status, answer.body.error]).toEqual([503, "temporarily_unavailable"]);
      expect(Date.now() - started).toBeLessThan(1000);
    }
    expect(calls).toHaveLength(0);
  });

  it("fails closed when the memory replay store is full of live ids, never forgetting one", async () => {
    const agents = await setup({ stores: { replay: new MemoryReplayStore({ maxEntries: 2 }) } });
    const g = await grant(agents, ["a"]);
    expect((await execute(agents, await token(agents, g, ["a"]), { capability: "a" })).status).toBe(
      200,
    );
    expect((await execute(agents, await token(agents, g, ["a"]), { capability: "a" })).status).toBe(
      200,
    );
    expect((await execute(agents, await token(agents, g, ["a"]), { capability: "a" })).status).toBe(
      503,
    );
    t += 200_000;
    expect((await execute(agents, await token(agents, g, ["a"]), { capability: "a" })).status).toBe(
      200,
    );
  });
});

describe("execute: a restart with a memory replay store", () => {
  it("refuses a token used before the restart, even one made in the same second, and accepts the new process's own", async () => {
    // Keys and grants outlive the process; the memory replay store does not.
    const grants = new MemoryGrantStore();
    t = Math.floor(Date.now() / 1000) * 1000 + 100;
    const before = await setup({ stores: { grants } });
    const g = await grant(before, ["a"]);
    const used = await token(before, g, ["a"]);
    expect((await execute(before, used, { capability: "a" })).status).toBe(200);

    t += 500; // restarted within the same second
    const after = await setup({ stores: { grants } });
    const replayed = await execute(after, used, { capability: "a" });
    expect([replayed.status, replayed.body.error]).toEqual([401, "invalid_jwt"]);
    const own = await token(after, g, ["a"]);
    expect((await execute(after, own, { capability: "a" })).status).toBe(200);
    t += 1000;
    expect((await execute(after, await token(after, g, ["a"]), { capability: "a" })).status).toBe(
      200,
    );
    expect(calls).toHaveLength(3);
  });

  it("keeps accepting, after a restart, tokens of the instances sharing a replay store that outlives it", async () => {
    const grants = new MemoryGrantStore();
    const replay = new MemoryReplayStore(); // standing in for a shared store
    const before = await setup({ stores: { grants, replay } });
    const g = await grant(before, ["a"]);
    const minted = await token(before, g, ["a"]);
    t += 2000;
    const shared: ReplayStore = { setIfAbsent: (...args) => replay.setIfAbsent(...args) };
    const after = await setup({ stores: { grants, replay: shared } });
    expect((await execute(after, minted, { capability: "a" })).status).toBe(200);
  });
});

describe("execute: arguments and bodies", () => {
  it("answers a near-URL argument 400 at once, never reaching the handler", async () => {
    const link: CapabilityDefinition = {
      name: "link",
      description: "Takes a URL.",
      input: object({ u: { type: "string", format: "url", maxLength: 64 } }),
      handler: handler("link"),
    };
    const agents = await setup({ capabilities: [...definitions(), link] });
    const g = await grant(agents, ["link"]);
    // The old validator held the event loop for tens of seconds on this 40-byte value.
    const near = await execute(agents, await token(agents, g, ["link"]), {
      capability: "link",
      arguments: { u: `http://${"a".repeat(32)}_` },
    });
    expect([near.status, near.body.errors]).toEqual([
      400,
      [{ path: "/u", message: "must be a valid url" }],
    ]);
    expect(calls.filter((call) => call.name === "link")).toHaveLength(0);
    const fine = await execute(agents, await token(agents, g, ["link"]), {
      capability: "link",
      arguments: { u: "https://example.com/a" },
    });
    expect(fine.status).toBe(200);
  });

  it("never lets arguments that fail the schema reach the handler", async () => {
    const agents = await setup();
    const g = await grant(agents, ["typed", "free"]);
    const cases: [string, unknown][] = [
      ["typed", { count: 0 }],
      ["typed", { count: "3" }],
      ["typed", {}],
      ["typed", { count: 1, extra: true }],
    ];
    for (const [capability, args] of cases) {
      const answer = await execute(agents, await token(agents, g, ["typed", "free"]), {
        capability,
        arguments: args,
      });
      expect([answer.status, answer.body.error], JSON.stringify(args)).toEqual([
        400,
        "invalid_request",
      ]);
      expect(Array.isArray(answer.body.errors)).toBe(true);
    }
    const raw = [
      '{"capability":"typed","arguments":{"count":1,"tags":{"__proto__":{"admin":true}}}}',
      '{"capability":"free","arguments":{"__proto__":{"admin":true}}}',
      '{"capability":"free","arguments":{"x":{"constructor":{"prototype":{"admin":true}}}}}',
    ];
    for (const body of raw) {
      const answer = await execute(agents, await token(agents, g, ["typed", "free"]), undefined, {
        raw: body,
      });
      expect([answer.status, answer.body.error], body).toEqual([400, "invalid_request"]);
      expect(JSON.stringify(answer.body.errors)).toMatch(/__proto__|constructor/);
    }
    expect(calls).toHaveLength(0);
    const ok = await execute(agents, await token(agents, g, ["typed"]), {
      capability: "typed",
      arguments: { count: 2 },
    });
    expect(ok.status).toBe(200);
    expect(calls[0]?.args).toEqual({ count: 2 });
  });

  it("answers at most 20 errors, each clipped, however many and long the wrong keys", async () => {
    const agents = await setup();
    const g = await grant(agents, ["typed"]);
    // 28 keys of 2 KiB that the schema does not allow: 58 KiB asked, each error naming one key.
    const args: Record<string, unknown> = { count: 1 };
    for (let i = 0; i < 28; i++) args[`${String(i).padStart(4, "0")}${"k".repeat(2044)}`] = i;
    const asked = JSON.stringify({ capability: "typed", arguments: args });
    expect(asked.length).toBeGreaterThan(56 * 1024);
    const response = await agents.execute(
      new Request(EXECUTE, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${await token(agents, g, ["typed"])}`,
        },
        body: asked,
      }),
    );
    const answer = await response.text();
    expect(response.status).toBe(400);
    expect(answer.length).toBeLessThan(8 * 1024);
    const errors = (JSON.parse(answer) as { errors: { path: string; message: string }[] }).errors;
    expect(errors).toHaveLength(21);
    expect(errors[0]).toEqual({
      path: `/0000${"k".repeat(250)}…`,
      message: "the property is not allowed",
    });
    expect(errors[20]).toEqual({
      path: "",
      message: "more errors were found; only the first 20 are listed",
    });
    expect(calls).toHaveLength(0);
  });

  it("refuses numbers JSON cannot hold (1e400 parses as Infinity), with or without a schema", async () => {
    const agents = await setup();
    const g = await grant(agents, ["typed", "free"]);
    for (const raw of [
      '{"capability":"free","arguments":{"n":1e400}}',
      '{"capability":"free","arguments":{"n":[1,-1e400]}}',
      '{"capability":"typed","arguments":{"count":1,"tags":{"x":1e999}}}',
    ]) {
      const answer = await execute(agents, await token(agents, g, ["typed", "free"]), undefined, {
        raw,
      });
      expect([answer.status, answer.body.error], raw).toEqual([400, "invalid_request"]);
      expect((answer.body.errors as { message: string }[])[0]?.message).toBe(
        "must be a finite number",
      );
    }
    expect(calls).toHaveLength(0);
  });

  it("answers malformed bodies precisely", async () => {
    const agents = await setup({ maxBodyBytes: 1024 });
    const g = await grant(agents, ["a"]);
    const mint = () => token(agents, g, ["a"]);
    expect(
      (
        await execute(agents, await mint(), undefined, {
          raw: "x=1",
          type: "application/x-www-form-urlencoded",
        })
      ).status,
    ).toBe(415);
    expect(
      (
        await execute(agents, await mint(), undefined, {
          raw: `{"capability":"a","pad":"${"x".repeat(2000)}"}`,
        })
      ).status,
    ).toBe(413);
    for (const raw of [
      "{",
      "[]",
      '"a"',
      '{"capability":7}',
      '{"capability":"a","arguments":[1]}',
    ]) {
      const answer = await execute(agents, await mint(), undefined, { raw });
      expect([answer.status, answer.body.error], raw).toEqual([400, "invalid_request"]);
    }
    const get = await agents.execute(new Request(EXECUTE));
    expect(get.status).toBe(405);
  });

  it("answers a throwing handler 500 internal_error with a fixed message", async () => {
    const agents = await setup();
    const g = await grant(agents, ["boom"]);
    const answer = await execute(agents, await token(agents, g, ["boom"]), { capability: "boom" });
    expect(answer.status).toBe(500);
    expect(answer.body).toEqual({ error: "internal_error", message: "the capability failed" });
    expect(events.at(-1)).toMatchObject({
      type: "capability.executed",
      outcome: "error",
      capability: "boom",
    });
  });
});

describe("resolveSession", () => {
  it("ignores bearer tokens of other types, refuses other audiences, and binds the session", async () => {
    const agents = await setup();
    const g = await grant(agents, ["remote", "a"]);
    const guard = agents.resolveSession(`${ISSUER}/remote`);
    const behind = guard(async () => new Response("served"));
    const call = (authorization?: string, human?: string) => {
      const request = new Request(`${ISSUER}/remote`, {
        headers: authorization === undefined ? {} : { authorization },
      });
      if (human !== undefined) bindAuthentication(request, createAuthentication(human));
      return behind(request);
    };
    const foreign = await jwtSigner({ keys, typ: "at+jwt", issuer: ISSUER })({
      subject: "x",
      audience: `${ISSUER}/remote`,
    });
    const ignored = await call(`Bearer ${foreign.token}`);
    expect([ignored.status, ((await ignored.json()) as { error: string }).error]).toEqual([
      401,
      "authentication_required",
    ]);
    expect((await call(`Bearer ${foreign.token}`, "alice")).status).toBe(200);
    const forExecute = await call(`Bearer ${await token(agents, g, ["remote"])}`);
    expect(((await forExecute.json()) as { error: string }).error).toBe("invalid_jwt");
    const good = await token(agents, g, ["remote"], `${ISSUER}/remote`);
    expect((await call(`Bearer ${good}`)).status).toBe(200);
    expect((await call(`Bearer ${good}`)).status).toBe(401);
  });
});

describe("refreshCapabilityToken", () => {
  it("mints only from an active grant, never wider, never creating one", async () => {
    const agents = await setup();
    const grants = new MemoryGrantStore();
    const config = { tokens: agents.runtime.tokens, registry: agents.runtime.registry };
    expect(await refreshCapabilityToken(undefined, "agent-1", grants, config)).toEqual({
      ok: false,
      reason: "no_active_grant",
    });
    expect(await grants.listByPrincipal("agent-1")).toEqual([]);
    const g: Grant = {
      grantId: "g1",
      principalId: "agent-1",
      status: "active",
      capabilities: ["a", "b"],
      approvedBy: "alice",
      createdAt: t,
      expiresAt: t + DAY,
    };
    await grants.approve(g, { perApprover: 100, perPrincipal: 10_000 });
    const narrow = await refreshCapabilityToken(undefined, "agent-1", grants, config, {
      capabilities: ["a"],
    });
    expect(narrow.ok && narrow.capabilities).toEqual(["a"]);
    expect(
      await refreshCapabilityToken(undefined, "agent-1", grants, config, {
        capabilities: ["a", "c"],
      }),
    ).toEqual({
      ok: false,
      reason: "capability_not_granted",
    });
    expect(await refreshCapabilityToken(undefined, "agent-2", grants, config)).toEqual({
      ok: false,
      reason: "no_active_grant",
    });
  });
});

describe("capabilities", () => {
  it("throw when the registry is built badly", () => {
    const ok = { name: "ok", description: "Fine.", handler: () => 1 };
    const bad: unknown[][] = [
      [],
      [ok, ok],
      [{ ...ok, name: "Bad-Name" }],
      [{ ...ok, name: "" }],
      [{ ...ok, location: `${ISSUER}/x` }],
      [{ name: "n", description: "No handler." }],
      [{ ...ok, description: "" }],
      [{ ...ok, handler: undefined, location: "http://example.com/x" }],
      [{ ...ok, input: { type: "objekt" } }],
      [{ ...ok, input: { $ref: "https://example.com/schema.json" } }],
      [{ ...ok, input: { $schema: "https://example.com/my-draft" } }],
      [{ ...ok, input: "not a schema" }],
      [{ ...ok, input: { type: "object", properties: { f: { default: () => 1 } } } }],
      [{ ...ok, inputs: {} }],
    ];
    for (const definitions of bad) {
      expect(
        () => new CapabilityRegistry(definitions as never),
        JSON.stringify(definitions),
      ).toThrow(InvalidOptionsError);
    }
    const registry = new CapabilityRegistry([
      { ...ok, name: "zeta" },
      {
        ...ok,
        name: "alpha",
        input: {
          type: "object",
          $defs: { n: { type: "integer" } },
          properties: { x: { $ref: "#/$defs/n" } },
        },
      },
    ]);
    expect(registry.all().map((c) => c.name)).toEqual(["alpha", "zeta"]);
    expect(registry.get("alpha")?.check({ x: "no" })).toHaveLength(1);
    expect(registry.get("alpha")?.check({ x: 1 })).toEqual([]);
  });

  it("validate against a frozen copy: changing the caller's schema later changes nothing", () => {
    const input = { type: "object", properties: { n: { type: "integer" } } } as Record<
      string,
      unknown
    >;
    const registry = new CapabilityRegistry([
      { name: "x", description: "X.", input, handler: () => 1 },
    ]);
    (input.properties as Record<string, unknown>).n = { type: "string" };
    expect(registry.get("x")?.check({ n: 1 })).toEqual([]);
  });
});

describe("the device flow on the configured clock", () => {
  it("keeps a pending request alive on the service's clock, not the wall clock", async () => {
    const clients = new MemoryClientStore();
    await clients.register({ clientId: "agent-1", secret: "agent-one-secret-0123456789" });
    t = Date.now() + DAY;
    const agents = await setup({ clients });
    const begun = await agents.route(
      new Request(`${ISSUER}/oauth/device_authorization`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "client_id=agent-1&client_secret=agent-one-secret-0123456789&scope=a",
      }),
    );
    const { user_code } = (await (begun as Response).json()) as { user_code: string };
    const human = new Request(`${ISSUER}/device`, { headers: { "sec-fetch-site": "same-origin" } });
    bindAuthentication(human, createAuthentication("alice", ["USER"]));
    expect(await agents.describe(human, user_code)).toMatchObject({
      ok: true,
      principalId: "agent-1",
    });
  });
});

describe("the device flow when the grants store fails", () => {
  const SECRET = "agent-one-secret-0123456789";

  async function approved(grants: MemoryGrantStore) {
    const clients = new MemoryClientStore();
    await clients.register({ clientId: "agent-1", secret: SECRET });
    t = Date.now();
    const agents = await setup({ clients, stores: { grants } });
    const post = async (path: string, body: string) => {
      const answer = (await agents.route(
        new Request(`${ISSUER}${path}`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: `client_id=agent-1&client_secret=${SECRET}&${body}`,
        }),
      )) as Response;
      return { status: answer.status, body: (await answer.json()) as Record<string, string> };
    };
    const begun = await post("/oauth/device_authorization", "scope=a");
    const human = new Request(`${ISSUER}/device`);
    bindAuthentication(human, createAuthentication("alice", ["USER"]));
    expect((await agents.service.authorize(human, begun.body.user_code, "agent-1")).ok).toBe(true);
    const poll = () =>
      post(
        "/oauth/token",
        `grant_type=urn:ietf:params:oauth:grant-type:device_code&device_code=${begun.body.device_code}`,
      );
    return { poll };
  }

  /** The first poll fails (503), the retry gets a token, and one grant was made and told. */
  async function failsThenMakesOneGrant(grants: MemoryGrantStore) {
    const { poll } = await approved(grants);
    expect((await poll()).status).toBe(503);
    t += 6000;
    const retried = await poll();
    expect([retried.status, typeof retried.body.access_token]).toEqual([200, "string"]);
    expect(await grants.listByPrincipal("agent-1")).toHaveLength(1);
    expect(events.filter((event) => event.type === "grant.created")).toHaveLength(1);
  }

  it("gives the approval back when the grant cannot be made; the retry makes the one grant", async () => {
    const grants = new (class extends MemoryGrantStore {
      failures = 1;
      override async approve(grant: Grant, limits: GrantLimits) {
        if (this.failures-- > 0) throw new Error("grants store down");
        return super.approve(grant, limits);
      }
    })();
    await failsThenMakesOneGrant(grants);
  });

  it("finds the grant an approval that failed late had made, and makes no second one", async () => {
    // The write lands but its answer is lost.
    const grants = new (class extends MemoryGrantStore {
      failures = 1;
      override async approve(grant: Grant, limits: GrantLimits) {
        const approval = await super.approve(grant, limits);
        if (this.failures-- > 0) throw new Error("no answer in time");
        return approval;
      }
    })();
    await failsThenMakesOneGrant(grants);
  });
});

describe("agentAuth options", () => {
  it("throw when misconfigured", async () => {
    const base = {
      issuer: ISSUER,
      capabilities: definitions(),
      clients: new MemoryClientStore(),
      keys,
    };
    for (const bad of [
      { issuer: "http://agents.example" },
      { pathz: {} },
      { paths: { execut: "/x" } },
      { stores: { grant: new MemoryGrantStore() } },
      { stores: { replay: {} } },
      { grantTtlSeconds: 0 },
      { maxGrantsPerApprover: 0 },
      { maxGrantsPerApprover: "100" },
      { maxGrantsPerAgent: 1.5 },
      // A grant store written for `create`, before `approve`: refused when built, not per request.
      {
        stores: {
          grants: {
            create: async () => {},
            get: async () => undefined,
            listByPrincipal: async () => [],
            listByApprover: async () => [],
            revoke: async () => undefined,
          },
        },
      },
      { tokenTtlSeconds: 0 },
      { onEvent: "log" },
      { dpop: { bindGrants: false } },
      { dpop: { nonce: { secret: "short" } } },
      { dpop: { algorithms: ["HS256"] } },
    ]) {
      await expect(
        agentAuth({ ...base, ...bad } as never),
        JSON.stringify(Object.keys(bad)),
      ).rejects.toThrow(InvalidOptionsError);
    }
  });

  it("holds grants to 100 per human and 10 000 per agent unless told otherwise", async () => {
    const base = {
      issuer: ISSUER,
      capabilities: definitions(),
      clients: new MemoryClientStore(),
      keys,
    };
    expect((await agentAuth(base)).runtime.grantLimits).toEqual({
      perApprover: 100,
      perPrincipal: 10_000,
    });
    const set = await agentAuth({ ...base, maxGrantsPerApprover: 5, maxGrantsPerAgent: 7 });
    expect(set.runtime.grantLimits).toEqual({ perApprover: 5, perPrincipal: 7 });
  });

  it("names the misspelt dpop key, and leaves DPoP off unless asked", async () => {
    const base = {
      issuer: "https://agents.example",
      capabilities: definitions(),
      clients: new MemoryClientStore(),
      keys,
    };
    await expect(agentAuth({ ...base, dpop: { requird: true } } as never)).rejects.toThrow(
      /requird/,
    );
    expect((await agentAuth(base)).runtime.dpop).toBeUndefined();
    const on = await agentAuth({ ...base, dpop: {} });
    expect(on.runtime.dpop).toMatchObject({ required: false, bindGrant: true });
  });
});

describe("agentAuth behind a chain whose basicAuth comes first", () => {
  it("still leaves the agent and OAuth endpoints to answer a refused credential themselves", async () => {
    let checked = 0;
    const credentials = passwordCredentials({
      findUser: () => undefined,
      passwordEncoder: {
        hash: async (password) => `{plain}${password}`,
        verify: async () => {
          checked++;
          return false;
        },
        needsRehash: () => false,
      },
    });
    const clients = new MemoryClientStore();
    await clients.register({ clientId: "agent-1", secret: "agent-1-secret-0123456789" });
    const agents = await setup({ clients });
    const handle = newHandler(
      async (request) => (await agents.route(request)) ?? new Response(null, { status: 404 }),
      {
        authentication: [basicAuth({ credentials, required: false }), agents.authenticator],
        authorization: routes([
          match("POST", "/oauth/token").permitAll(),
          match("GET", "/capability/list").permitAll(),
        ]),
      },
    );
    const wrong = `Basic ${btoa("agent-1:wrong-secret-0123456789")}`;
    const token = await handle(
      new Request(`${ISSUER}/oauth/token`, {
        method: "POST",
        headers: { authorization: wrong, "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=client_credentials",
      }),
    );
    expect([token.status, await token.json()]).toMatchObject([401, { error: "invalid_client" }]);
    const list = await handle(
      new Request(`${ISSUER}/capability/list`, { headers: { authorization: wrong } }),
    );
    expect([list.status, await list.json()]).toMatchObject([
      401,
      { error: "authentication_required" },
    ]);
    expect(checked).toBe(0);
  });
});

describe("approving only what was reviewed", () => {
  const SECRET = "agent-one-secret-0123456789";

  async function begun(agents: AgentAuth, clientId: string, scope: string): Promise<string> {
    const answer = (await agents.route(
      new Request(`${ISSUER}/oauth/device_authorization`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `client_id=${clientId}&client_secret=${SECRET}&scope=${scope}`,
      }),
    )) as Response;
    return ((await answer.json()) as { user_code: string }).user_code;
  }

  function as(name: string, body?: Record<string, string>): Request {
    const request = new Request(`${ISSUER}/agent/approve`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      ...(body === undefined ? {} : { body: new URLSearchParams(body).toString() }),
    });
    bindAuthentication(request, createAuthentication(name, ["USER"]));
    return request;
  }

  it("refuses an approval carrying no review, another person's, another code's or a capability token", async () => {
    const clients = new MemoryClientStore();
    await clients.register({ clientId: "agent-1", secret: SECRET });
    await clients.register({ clientId: "agent-2", secret: SECRET });
    t = Date.now();
    const agents = await setup({ clients });
    const code = await begun(agents, "agent-1", "a");
    const other = await begun(agents, "agent-2", "a b");
    const mine = await agents.describe(as("alice"), code);
    const bobs = await agents.describe(as("bob"), code);
    const otherCode = await agents.describe(as("alice"), other);
    if (!mine.ok || !bobs.ok || !otherCode.ok) throw new Error("not described");
    const capability = await agents.runtime.tokens.mint({
      principalId: "agent-1",
      grantId: "g",
      capabilities: ["a"],
    });
    for (const review of ["", bobs.reviewToken, otherCode.reviewToken, capability.token]) {
      const refused = await agents.approve(
        as("alice", { user_code: code, action: "approve", review }),
      );
      expect(refused.status).toBe(400);
      expect(await refused.text()).toContain("check what the agent asks for");
    }
    const approved = await agents.approve(
      as("alice", { user_code: code, action: "approve", review: mine.reviewToken }),
    );
    expect(approved.status).toBe(200);
    // A review lasts no longer than its code.
    t += 601_000;
    const late = await agents.approve(
      as("alice", { user_code: other, action: "approve", review: otherCode.reviewToken }),
    );
    expect(late.status).toBe(400);
  });
});
