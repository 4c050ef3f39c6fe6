import { describe, expect, it } from "vitest";
import { bindAuthentication, createAuthentication } from "../core/authentication.ts";
import { CLIENT_ADDRESS } from "../core/client-address.ts";
import { bindValue } from "../core/context.ts";
import { InvalidOptionsError, StoreUnavailableError } from "../core/errors.ts";
import { generateKeySet } from "../jwt/keys.ts";
import { type AuthorizationServerOptions, authorizationServer } from "./authorization-server.ts";
import {
  ALL_GRANT_TYPES,
  DEVICE_CODE_GRANT,
  generateClientSecret,
  MemoryClientStore,
} from "./clients.ts";
import { deviceApproveHandler } from "./device-approve.ts";
import { DeviceAuthorizationService } from "./device-authorization.ts";
import {
  type DeviceCodeRecord,
  type DeviceCodeStore,
  MemoryDeviceCodeStore,
} from "./device-code-store.ts";
import { generateUserCode, normalizeUserCode, USER_CODE_ALPHABET } from "./user-code.ts";

const ISSUER = "https://auth.example";
const SECRET = "s3cret-s3cret-s3cret";
const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

function human(name = "alice"): Request {
  const request = new Request(`${ISSUER}/device/approve`, { method: "POST" });
  bindAuthentication(request, createAuthentication(name, ["USER"]));
  return request;
}

async function setup(
  overrides: Partial<AuthorizationServerOptions> = {},
  serviceOptions: Partial<ConstructorParameters<typeof DeviceAuthorizationService>[0]> = {},
) {
  let t = 1_700_000_000_000;
  const clock = {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
  const clients = new MemoryClientStore();
  await clients.register({ clientId: "agent-1", secret: SECRET });
  await clients.register({ clientId: "key.id+/=", kind: "api_key", secret: `${SECRET}:%` });
  await clients.register({ clientId: "cli", public: true });
  await clients.register({
    clientId: "cc-only",
    secret: SECRET,
    grantTypes: ["client_credentials"],
  });
  const service = new DeviceAuthorizationService({
    verificationUri: `${ISSUER}/device`,
    now: clock.now,
    ...serviceOptions,
  });
  const issued: unknown[] = [];
  const server = authorizationServer({
    issuer: ISSUER,
    service,
    clients,
    scopes: ["read", "write"],
    issueAccessToken: async (grant) => {
      issued.push(grant);
      return { accessToken: `token-for-${grant.subject}`, expiresIn: 120 };
    },
    onError: () => {},
    ...overrides,
  });
  return { server, service, clients, clock, issued };
}

function form(
  path: string,
  params: Record<string, string>,
  headers: Record<string, string> = {},
): Request {
  return new Request(`${ISSUER}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(params).toString(),
  });
}

const post = { client_id: "agent-1", client_secret: SECRET };

async function answer(response: Response | undefined) {
  if (response === undefined) throw new Error("no endpoint answered");
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

describe("client authentication", () => {
  it("accepts client_secret_basic with form-urlencoded halves, as RFC 6749 2.3.1 has it", async () => {
    const { server } = await setup({
      clientCredentials: async ({ client }) => ({ accessToken: client.clientId, expiresIn: 1 }),
    });
    const basic = btoa(
      `${encodeURIComponent("key.id+/=")}:${encodeURIComponent(`${SECRET}:%`)}`.replace(
        /%20/g,
        "+",
      ),
    );
    const ok = await answer(
      await server.route(
        form(
          "/oauth/token",
          { grant_type: "client_credentials" },
          { authorization: `Basic ${basic}` },
        ),
      ),
    );
    expect(ok.status).toBe(200);
    expect(ok.body.access_token).toBe("key.id+/=");
  });

  it("answers 401 invalid_client with a Basic challenge however the client tried", async () => {
    const { server } = await setup();
    const viaHeader = await answer(
      await server.route(
        form(
          "/oauth/device_authorization",
          {},
          { authorization: `Basic ${btoa("agent-1:wrong-wrong-wrong")}` },
        ),
      ),
    );
    expect([viaHeader.status, viaHeader.body.error]).toEqual([401, "invalid_client"]);
    expect(viaHeader.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
    const viaBody = await answer(
      await server.route(
        form("/oauth/device_authorization", { client_id: "agent-1", client_secret: "wrong-wrong" }),
      ),
    );
    expect([viaBody.status, viaBody.body.error]).toEqual([401, "invalid_client"]);
    // RFC 9110 §15.5.2: a 401 names a scheme the client can use.
    expect(viaBody.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
    const bare = await answer(
      await server.route(form("/oauth/device_authorization", { client_id: "agent-1" })),
    );
    expect([bare.status, bare.headers.get("www-authenticate")]).toEqual([
      401,
      'Basic realm="oauth", charset="UTF-8"',
    ]);
    for (const header of ["Basic !!!", "Bearer abc", `Basic ${btoa("no-colon")}`, "Basic"]) {
      const malformed = await answer(
        await server.route(form("/oauth/device_authorization", {}, { authorization: header })),
      );
      expect([malformed.status, malformed.body.error], header).toEqual([401, "invalid_client"]);
    }
  });

  it("refuses two methods at once and a body client_id that differs from the header", async () => {
    const { server } = await setup();
    const basic = `Basic ${btoa(`agent-1:${SECRET}`)}`;
    const both = await answer(
      await server.route(
        form("/oauth/device_authorization", { client_secret: SECRET }, { authorization: basic }),
      ),
    );
    expect(both.body.error).toBe("invalid_request");
    const other = await answer(
      await server.route(
        form("/oauth/device_authorization", { client_id: "cli" }, { authorization: basic }),
      ),
    );
    expect(other.body.error).toBe("invalid_client");
  });

  it("refuses unknown clients, missing authentication and public clients unless allowed", async () => {
    const { server } = await setup();
    const attempts: Record<string, string>[] = [
      { client_id: "nobody", client_secret: SECRET },
      { client_id: "cli" },
      { client_id: "agent-1" },
      {},
    ];
    for (const params of attempts) {
      const refused = await answer(await server.route(form("/oauth/device_authorization", params)));
      expect([refused.status, refused.body.error], JSON.stringify(params)).toEqual([
        401,
        "invalid_client",
      ]);
    }
    const open = await setup({ publicClients: true });
    const accepted = await answer(
      await open.server.route(form("/oauth/device_authorization", { client_id: "cli" })),
    );
    expect(accepted.status).toBe(200);
    expect(open.server.metadata.token_endpoint_auth_methods_supported).toContain("none");
    // A confidential client never gets in without its secret, public clients on or not.
    const bare = await answer(
      await open.server.route(form("/oauth/device_authorization", { client_id: "agent-1" })),
    );
    expect(bare.body.error).toBe("invalid_client");
  });

  it("never lets a public client use client_credentials", async () => {
    // RFC 6749 §4.4: the grant stands on the client's own authentication.
    const clients = new MemoryClientStore();
    await expect(
      clients.register({ clientId: "x", public: true, grantTypes: ["client_credentials"] }),
    ).rejects.toThrow(InvalidOptionsError);
    expect((await clients.register({ clientId: "y", public: true })).grantTypes).toEqual([
      DEVICE_CODE_GRANT,
    ]);
    const clientCredentials = async () => ({ accessToken: "cc-token", expiresIn: 60 });
    const open = await setup({ publicClients: true, clientCredentials });
    const refused = await answer(
      await open.server.route(
        form("/oauth/token", { client_id: "cli", grant_type: "client_credentials" }),
      ),
    );
    expect([refused.status, refused.body.error]).toEqual([400, "unauthorized_client"]);
    // A store of one's own may list the grant for a public client anyway.
    const lax = await setup({
      publicClients: true,
      clientCredentials,
      clients: {
        get: async (clientId: string) =>
          clientId === "cli"
            ? {
                clientId,
                kind: "oauth2_client" as const,
                public: true,
                grantTypes: ALL_GRANT_TYPES,
              }
            : undefined,
      },
    });
    const stillRefused = await answer(
      await lax.server.route(
        form("/oauth/token", { client_id: "cli", grant_type: "client_credentials" }),
      ),
    );
    expect([stillRefused.status, stillRefused.body.error]).toEqual([401, "invalid_client"]);
    expect(stillRefused.body.access_token).toBeUndefined();
  });

  it("keeps every error_description to the characters RFC 6749 allows", async () => {
    const { server } = await setup();
    const body = "%22%5C%C3%A9%0A=1&%22%5C%C3%A9%0A=2&grant_type=client_credentials";
    const repeated = await answer(
      await server.route(
        new Request(`${ISSUER}/oauth/token`, {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            authorization: `Basic ${btoa(`agent-1:${SECRET}`)}`,
          },
          body,
        }),
      ),
    );
    expect(repeated.body.error).toBe("invalid_request");
    expect(repeated.body.error_description).toBe("a parameter is repeated");
    const failing = await setup({
      clientCredentials: async () => ({ error: "invalid_scope", description: 'no "é"\n\\' }),
    });
    const answered = await answer(
      await failing.server.route(
        form(
          "/oauth/token",
          { grant_type: "client_credentials" },
          { authorization: `Basic ${btoa(`agent-1:${SECRET}`)}` },
        ),
      ),
    );
    expect(answered.body.error_description).toBe("no ?????");
  });

  it("refuses a grant the client is not registered for", async () => {
    const { server } = await setup();
    const refused = await answer(
      await server.route(
        form("/oauth/device_authorization", { client_id: "cc-only", client_secret: SECRET }),
      ),
    );
    expect(refused.body.error).toBe("unauthorized_client");
  });

  it("stores only a hash of each secret and refuses short ones", async () => {
    const clients = new MemoryClientStore();
    const client = await clients.register({ clientId: "a", secret: SECRET });
    expect(JSON.stringify(client)).not.toContain(SECRET);
    expect(client.secretHash).toMatch(/^sha256:/);
    await expect(clients.register({ clientId: "b", secret: "short" })).rejects.toThrow(
      InvalidOptionsError,
    );
    await expect(clients.register({ clientId: "c" })).rejects.toThrow(InvalidOptionsError);
    await expect(clients.register({ clientId: "d", public: true, secret: SECRET })).rejects.toThrow(
      InvalidOptionsError,
    );
    await expect(clients.register({ clientId: "e", secrett: SECRET } as never)).rejects.toThrow(
      InvalidOptionsError,
    );
    await expect(
      clients.register({ clientId: "f", secret: SECRET, dpopBoundAccessTokens: "yes" } as never),
    ).rejects.toThrow(/dpopBoundAccessTokens/);
    expect(
      (await clients.register({ clientId: "g", secret: SECRET, dpopBoundAccessTokens: true }))
        .dpopBoundAccessTokens,
    ).toBe(true);
    expect(generateClientSecret()).toHaveLength(43);
    const small = new MemoryClientStore({ maxEntries: 1 });
    await small.register({ clientId: "a", secret: SECRET });
    await expect(small.register({ clientId: "b", secret: SECRET })).rejects.toThrow(
      InvalidOptionsError,
    );
  });

  it("registers redirect URIs under the same rules as metadata documents", async () => {
    const clients = new MemoryClientStore();
    const app = (clientId: string, uri: string) =>
      clients.register({ clientId, public: true, redirectUris: [uri] });
    await app("native", "com.example.app:/callback");
    await app("loopback", "http://127.0.0.1/callback");
    // A single-label scheme is the server's to accept or refuse where it is used.
    await app("single-label", "myapp:/callback");
    for (const uri of [
      "https2://evil.example/cb",
      "http://evil.example/cb",
      "ws://127.0.0.1/cb",
      "javascript:alert(1)",
    ])
      await expect(app("refused", uri)).rejects.toThrow(InvalidOptionsError);
  });
});

describe("user codes", () => {
  it("are eight letters of the base-20 alphabet, drawn without bias", () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) {
      const code = generateUserCode();
      expect(code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{8}$/);
      for (const char of code) counts.set(char, (counts.get(char) ?? 0) + 1);
    }
    expect(counts.size).toBe(20);
    // 16 000 draws: each letter about 800 times.
    for (const char of USER_CODE_ALPHABET) expect(counts.get(char)).toBeGreaterThan(650);
  });

  it("match case- and dash-insensitively, and nothing else", () => {
    expect(normalizeUserCode("bcdf-ghjk")).toBe("BCDFGHJK");
    expect(normalizeUserCode(" BCDF GHJK ")).toBe("BCDFGHJK");
    for (const bad of ["BCDF-GHJ", "BCDF-GHJKL", "ABCD-EFGH", "BCDF-GHJ1", "", 42, "B".repeat(40)])
      expect(normalizeUserCode(bad)).toBeUndefined();
    // Unicode upper-cases these to letters of the alphabet: "ß" to "SS", "ſ" to "S", "ﬀ" to "FF".
    for (const lookalike of ["BCDFGHß", "KMXſ-FHZD", "bcdf-ghﬀ", "ﬆﬆﬆﬆ"])
      expect(normalizeUserCode(lookalike), lookalike).toBeUndefined();
  });
});

describe("device authorization", () => {
  it("hands out 256-bit device codes and keeps neither code in the store", async () => {
    const created: DeviceCodeRecord[] = [];
    const memory = new MemoryDeviceCodeStore();
    const recording: DeviceCodeStore = {
      create: (record, now) => {
        created.push(record);
        return memory.create(record, now);
      },
      findByUserCode: (hash, now) => memory.findByUserCode(hash, now),
      decide: (hash, decision, now) => memory.decide(hash, decision, now),
      poll: (hash, client, now, slow) => memory.poll(hash, client, now, slow),
    };
    const service = new DeviceAuthorizationService({
      verificationUri: `${ISSUER}/device`,
      store: recording,
    });
    const begun = await service.begin("agent-1", ["read"]);
    expect(begun.device_code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const stored = JSON.stringify(created);
    expect(stored).not.toContain(begun.device_code);
    expect(stored).not.toContain(begun.user_code.replace("-", ""));
    expect(stored).not.toContain(begun.user_code);
  });

  it("uses interval 5 s and lifetime 10 minutes by default, and never an interval under 1", async () => {
    const { server } = await setup();
    const begun = await answer(
      await server.route(form("/oauth/device_authorization", { ...post, scope: "read" })),
    );
    expect(begun.body).toMatchObject({ interval: 5, expires_in: 600 });
    expect(begun.headers.get("cache-control")).toBe("no-store");
    expect(
      () => new DeviceAuthorizationService({ verificationUri: `${ISSUER}/d`, intervalSeconds: 0 }),
    ).toThrow(InvalidOptionsError);
  });

  it("enforces slow_down per code, adding 5 s each time", async () => {
    const { server, clock } = await setup({}, { intervalSeconds: 2 });
    const begun = await answer(await server.route(form("/oauth/device_authorization", post)));
    const poll = async () =>
      (
        await answer(
          await server.route(
            form("/oauth/token", {
              ...post,
              grant_type: DEVICE_GRANT,
              device_code: begun.body.device_code as string,
            }),
          ),
        )
      ).body.error;
    expect(await poll()).toBe("authorization_pending");
    clock.advance(1000);
    expect(await poll()).toBe("slow_down"); // interval now 7 s
    clock.advance(6000);
    expect(await poll()).toBe("slow_down"); // 6 s < 7 s; now 12 s
    clock.advance(12_000);
    expect(await poll()).toBe("authorization_pending");
    // Another code of the same client keeps its own interval.
    const other = await answer(await server.route(form("/oauth/device_authorization", post)));
    const first = await answer(
      await server.route(
        form("/oauth/token", {
          ...post,
          grant_type: DEVICE_GRANT,
          device_code: other.body.device_code as string,
        }),
      ),
    );
    expect(first.body.error).toBe("authorization_pending");
  });

  it("decides once when approvals and denials race", async () => {
    const { service } = await setup();
    const begun = await service.begin("agent-1", ["read"]);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0
          ? service.authorize(human(`h${i}`), begun.user_code, `agent-1`)
          : service.deny(human(`h${i}`), begun.user_code),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(1);
  });

  it("refuses an approval from a request nobody signed in on", async () => {
    const { service } = await setup();
    const begun = await service.begin("agent-1", ["read"]);
    await expect(
      service.authorize(new Request(ISSUER), begun.user_code, "agent-1"),
    ).rejects.toMatchObject({ code: "ERR_AUTHENTICATION_REQUIRED" });
  });

  it("counts wrong user codes per approver and overall", async () => {
    const { service } = await setup({}, { userCodeAttempts: { perApprover: 2, overall: 3 } });
    const begun = await service.begin("agent-1", ["read"]);
    expect((await service.lookup(human("a"), "BBBB-BBBB")).ok).toBe(false);
    expect((await service.lookup(human("a"), "nonsense")).ok).toBe(false);
    expect(await service.lookup(human("a"), begun.user_code)).toMatchObject({
      ok: false,
      reason: "too_many_attempts",
    });
    expect(await service.lookup(human("b"), begun.user_code)).toMatchObject({
      ok: true,
      clientId: "agent-1",
      scope: ["read"],
    });
    expect((await service.lookup(human("b"), "BBBB-BBBB")).ok).toBe(false);
    // Three wrong entries overall: now nobody may try, however few they tried themselves.
    expect(await service.lookup(human("c"), begun.user_code)).toMatchObject({
      reason: "too_many_attempts",
    });
  });

  it("lets no crowd of approvers deny the others: one address's budget never refuses an approver's first entry", async () => {
    const { service } = await setup({}, { userCodeAttempts: { perApprover: 5, perAddress: 20 } });
    const begun = await service.begin("agent-1", ["read"]);
    const from = (name: string, address: string) => {
      const request = human(name);
      bindValue(request, CLIENT_ADDRESS, address);
      return request;
    };
    // 200 accounts, 5 wrong codes each, from one address and from 200.
    let counted = 0;
    for (let i = 0; i < 200; i++)
      for (let j = 0; j < 5; j++) {
        const one = await service.lookup(from(`m${i}`, "203.0.113.9"), "BBBB-BBBB");
        const many = await service.lookup(from(`n${i}`, `198.51.${i}.1`), "BBBB-BBBB");
        for (const outcome of [one, many])
          if (!outcome.ok && outcome.reason === "invalid_code") counted++;
      }
    // From one address: a first entry per account plus the address's 20; from many, 5 each.
    expect(counted).toBe(200 + 20 + 1000);
    // A human behind the flooded address, and one elsewhere, still approve.
    expect(await service.lookup(from("alice", "203.0.113.9"), begun.user_code)).toMatchObject({
      ok: true,
    });
    expect(await service.lookup(from("bob", "192.0.2.1"), begun.user_code)).toMatchObject({
      ok: true,
    });
    // The one who guessed is refused, even the right code.
    expect(await service.lookup(from("m0", "192.0.2.1"), begun.user_code)).toMatchObject({
      reason: "too_many_attempts",
    });
  });

  it("looks nothing up, and counts nothing, for a code that came in a link or from another site", async () => {
    const { service } = await setup({}, { userCodeAttempts: { perApprover: 1 } });
    const begun = await service.begin("agent-1", ["read"]);
    for (const site of ["cross-site", "same-site", "none", undefined]) {
      const request = new Request(`${ISSUER}/device?user_code=BBBB-BBBB`, {
        headers: site === undefined ? {} : { "sec-fetch-site": site },
      });
      bindAuthentication(request, createAuthentication("alice", ["USER"]));
      for (let i = 0; i < 5; i++)
        expect(await service.lookup(request, "bbbb bbbb")).toEqual({
          ok: false,
          reason: "unconfirmed",
          userCode: "BBBB-BBBB",
        });
    }
    const submitted = new Request(`${ISSUER}/device`, {
      headers: { "sec-fetch-site": "same-origin" },
    });
    bindAuthentication(submitted, createAuthentication("alice", ["USER"]));
    expect(await service.lookup(submitted, begun.user_code)).toMatchObject({ ok: true });
  });

  it("tells an approver that a code ran out rather than that it is not valid", async () => {
    const { service, clock } = await setup();
    const begun = await service.begin("agent-1", ["read"]);
    clock.advance(601_000);
    expect(await service.authorize(human(), begun.user_code, "agent-1")).toMatchObject({
      ok: false,
      reason: "expired",
    });
  });

  it("lets one client's flood push out only its own pending codes", async () => {
    const store = new MemoryDeviceCodeStore({ maxEntries: 10, maxPendingPerClient: 3 });
    const service = new DeviceAuthorizationService({ verificationUri: `${ISSUER}/d`, store });
    const victim = await service.begin("victim", ["read"]);
    for (let i = 0; i < 50; i++) await service.begin("flooder", ["read"]);
    expect(await service.lookup(human(), victim.user_code)).toMatchObject({ ok: true });
    for (let i = 0; i < 6; i++) await service.begin(`other-${i}`, ["read"]);
    await expect(service.begin("one-too-many", ["read"])).rejects.toMatchObject({
      code: "ERR_STORE_FULL",
      status: 503,
      quota: "store",
      held: 10,
      limit: 10,
    });
    expect(await service.lookup(human(), victim.user_code)).toMatchObject({ ok: true });
  });
});

describe("device-code store capacity", () => {
  it("leaves room for everyone else at its defaults when 2,100 clients start five flows each", async () => {
    const service = new DeviceAuthorizationService({ verificationUri: `${ISSUER}/d` });
    for (let client = 0; client < 2100; client++)
      for (let flow = 0; flow < 5; flow++) await service.begin(`flooder-${client}`, ["read"]);
    const other = await service.begin("someone-else", ["read"]);
    expect(await service.lookup(human(), other.user_code)).toMatchObject({ ok: true });
  });

  it("counts a client's approved codes it has not collected against its quota", async () => {
    const store = new MemoryDeviceCodeStore({ maxEntries: 20 });
    const service = new DeviceAuthorizationService({ verificationUri: `${ISSUER}/d`, store });
    for (let i = 0; i < 50; i++) {
      const begun = await service.begin("hoarder", ["read"]);
      expect((await service.authorize(human(), begun.user_code, "hoarder")).ok).toBe(true);
    }
    expect(store.size).toBe(1);
    const other = await service.begin("someone-else", ["read"]);
    expect(await service.lookup(human(), other.user_code)).toMatchObject({ ok: true });
  });

  it("refuses only the newcomer when every record is live, and takes ended ones first", async () => {
    let now = 1_000_000;
    const store = new MemoryDeviceCodeStore({ maxEntries: 3 });
    const service = new DeviceAuthorizationService({
      verificationUri: `${ISSUER}/d`,
      store,
      now: () => now,
      lifetimeSeconds: 60,
    });
    const held = [];
    for (const client of ["a", "b", "c"]) held.push(await service.begin(client, ["read"]));
    await expect(service.begin("d", ["read"])).rejects.toMatchObject({
      code: "ERR_STORE_FULL",
    });
    for (const begun of held)
      expect(await service.lookup(human(), begun.user_code)).toMatchObject({ ok: true });
    now += 61_000; // every code has expired, though still lingering for late polls
    await service.begin("d", ["read"]);
    expect(store.size).toBe(1);
  });
});

describe("endpoints", () => {
  it("answer 503 temporarily_unavailable in bounded time when the store stalls", async () => {
    const stalled: DeviceCodeStore = {
      create: () => new Promise(() => {}),
      findByUserCode: () => new Promise(() => {}),
      decide: () => new Promise(() => {}),
      poll: () => new Promise(() => {}),
    };
    const { server } = await setup(
      {},
      { store: stalled, storeTimeoutMs: 50, onStoreError: () => {} },
    );
    const started = Date.now();
    const begun = await answer(await server.route(form("/oauth/device_authorization", post)));
    expect([begun.status, begun.body.error]).toEqual([503, "temporarily_unavailable"]);
    expect(begun.headers.get("retry-after")).toBe("1");
    const polled = await answer(
      await server.route(
        form("/oauth/token", { ...post, grant_type: DEVICE_GRANT, device_code: "x" }),
      ),
    );
    expect(polled.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(2000);

    const failing = await setup({
      clients: { get: () => Promise.reject(new Error("connection refused")) },
    });
    const refused = await answer(
      await failing.server.route(form("/oauth/device_authorization", post)),
    );
    expect(refused.status).toBe(503);
  });

  it("answer 500 server_error without the failure's text when the issuer throws", async () => {
    const { server, service } = await setup({
      issueAccessToken: async () => {
        throw new Error("database password is hunter2");
      },
    });
    const begun = await service.begin("agent-1", ["read"]);
    await service.authorize(human(), begun.user_code, "agent-1");
    const failed = await server.route(
      form("/oauth/token", { ...post, grant_type: DEVICE_GRANT, device_code: begun.device_code }),
    );
    const text = await (failed as Response).text();
    expect((failed as Response).status).toBe(500);
    expect(text).toContain("server_error");
    expect(text).not.toContain("hunter2");
  });

  it("give an approval back when its token fails, so the retry the 503 invites gets it", async () => {
    let failures = 1;
    const { server, service, clock } = await setup({
      issueAccessToken: async (grant) => {
        if (failures-- > 0) throw new StoreUnavailableError("grants store down");
        return { accessToken: `token-for-${grant.subject}`, expiresIn: 120 };
      },
    });
    const begun = await service.begin("agent-1", ["read"]);
    await service.authorize(human(), begun.user_code, "agent-1");
    const poll = () =>
      server.route(
        form("/oauth/token", { ...post, grant_type: DEVICE_GRANT, device_code: begun.device_code }),
      );
    const first = await answer(await poll());
    expect([first.status, first.body.error]).toEqual([503, "temporarily_unavailable"]);
    clock.advance(5000);
    const retried = await answer(await poll());
    expect([retried.status, retried.body.access_token]).toEqual([200, "token-for-agent-1"]);
    clock.advance(5000);
    expect((await answer(await poll())).body.error).toBe("invalid_grant"); // once, still
  });

  it("say the approval is spent when it cannot be given back", async () => {
    // A store of one's own without release: the retry could only fail, so the client restarts.
    const memory = new MemoryDeviceCodeStore();
    const store: DeviceCodeStore = {
      create: (...args) => memory.create(...args),
      findByUserCode: (...args) => memory.findByUserCode(...args),
      decide: (...args) => memory.decide(...args),
      poll: (...args) => memory.poll(...args),
    };
    const reported: unknown[] = [];
    const { server, service } = await setup(
      {
        issueAccessToken: async () => {
          throw new Error("boom");
        },
        onError: (error) => reported.push(error),
      },
      { store },
    );
    const begun = await service.begin("agent-1", ["read"]);
    await service.authorize(human(), begun.user_code, "agent-1");
    const failed = await answer(
      await server.route(
        form("/oauth/token", { ...post, grant_type: DEVICE_GRANT, device_code: begun.device_code }),
      ),
    );
    expect([failed.status, failed.body.error]).toEqual([400, "expired_token"]);
    expect(reported).toHaveLength(1);
  });

  it("issue the token to the subject bound at approval, with the approved scope", async () => {
    const { server, service, issued } = await setup();
    const begun = await service.begin("agent-1", ["read", "write"]);
    expect((await service.authorize(human("alice"), begun.user_code, "agent-1")).ok).toBe(true);
    const token = await answer(
      await server.route(
        form("/oauth/token", { ...post, grant_type: DEVICE_GRANT, device_code: begun.device_code }),
      ),
    );
    expect(token.body).toEqual({
      access_token: "token-for-agent-1",
      token_type: "Bearer",
      expires_in: 120,
      scope: "read write",
    });
    expect(token.headers.get("cache-control")).toBe("no-store");
    expect(issued).toMatchObject([
      { subject: "agent-1", approvedBy: "alice", scope: ["read", "write"] },
    ]);
  });

  it("answer precise errors for malformed requests", async () => {
    const { server } = await setup();
    const cases: [Request, number, string][] = [
      [form("/oauth/token", post), 400, "invalid_request"],
      [form("/oauth/token", { ...post, grant_type: DEVICE_GRANT }), 400, "invalid_request"],
      [form("/oauth/token", { ...post, grant_type: "password" }), 400, "unsupported_grant_type"],
      [
        form("/oauth/token", { ...post, grant_type: "client_credentials" }),
        400,
        "unsupported_grant_type",
      ],
      [
        form("/oauth/token", { ...post, grant_type: DEVICE_GRANT, device_code: "nope" }),
        400,
        "invalid_grant",
      ],
      [form("/oauth/device_authorization", { ...post, scope: 'read "x"' }), 400, "invalid_scope"],
      [
        new Request(`${ISSUER}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new Uint8Array([0x63, 0x3d, 0xff]),
        }),
        400,
        "invalid_request",
      ],
      [
        new Request(`${ISSUER}/oauth/token`, {
          method: "POST",
          headers: { "content-type": "multipart/form-data; boundary=x" },
          body: "--x--",
        }),
        400,
        "invalid_request",
      ],
    ];
    for (const [request, status, error] of cases) {
      const got = await answer(await server.route(request));
      expect([got.status, got.body.error], request.url).toEqual([status, error]);
      expect(got.headers.get("cache-control")).toBe("no-store");
    }
    expect((await server.route(new Request(`${ISSUER}/oauth/token`)))?.status).toBe(405);
    expect(
      (
        await server.route(
          new Request(`${ISSUER}/.well-known/oauth-authorization-server`, { method: "POST" }),
        )
      )?.status,
    ).toBe(405);
    expect(await server.route(new Request(`${ISSUER}/elsewhere`))).toBeUndefined();
  });

  it("place the metadata after the well-known segment for an issuer with a path (RFC 8414 3)", async () => {
    const { server } = await setup({ issuer: "https://auth.example/tenant-1" });
    expect(server.paths.metadata).toBe("/.well-known/oauth-authorization-server/tenant-1");
    expect(server.metadata.issuer).toBe("https://auth.example/tenant-1");
  });

  it("throw on bad configuration when built", async () => {
    const { service, clients } = await setup();
    const base: AuthorizationServerOptions = {
      issuer: ISSUER,
      service,
      clients,
      scopes: ["read"],
      issueAccessToken: async () => ({ accessToken: "t", expiresIn: 1 }),
    };
    const keys = await generateKeySet();
    const fn = async () => true;
    expect(() => authorizationServer({ ...base, keys })).not.toThrow();
    for (const bad of [
      { issuer: "http://auth.example" },
      { issuer: "auth.example" },
      { issuer: "https://auth.example?x=1" },
      { scopes: ["has space"] },
      { scopes: "read" },
      { issueAccessToken: undefined },
      { paths: { token: "oauth/token" } },
      { paths: { token: "/oauth/../token" } },
      { paths: { token: "/same", deviceAuthorization: "/same" } },
      { paths: { tokn: "/t" } },
      { publicClient: true },
      { maxBodyBytes: 10 },
      { dpop: { verifyProof: async () => ({}), algorithms: ["ES256"] } },
      { dpop: { verifyProof: fn, consumeProof: fn, algorithms: ["HS256"] } },
      { dpop: { verifyProof: fn, consumeProof: fn, algorithms: ["none"] } },
      { dpop: { verifyProof: fn, consumeProof: fn, algorithms: ["ES256"], requird: true } },
    ]) {
      expect(() => authorizationServer({ ...base, ...bad } as never), JSON.stringify(bad)).toThrow(
        InvalidOptionsError,
      );
    }
    expect(() => authorizationServer({ ...base, issuer: "http://localhost:3000" })).not.toThrow();
    expect(() =>
      authorizationServer({
        ...base,
        dpop: { verifyProof: fn, consumeProof: fn, algorithms: ["ES256", "EdDSA", "Ed25519"] },
      } as never),
    ).not.toThrow();
    expect(
      () =>
        new DeviceAuthorizationService({ verificationUri: `${ISSUER}/d`, intervall: 5 } as never),
    ).toThrow(InvalidOptionsError);
    expect(() => new DeviceAuthorizationService({ verificationUri: "/device" })).toThrow(
      InvalidOptionsError,
    );
  });
});

describe("the token endpoint with a DPoP proof", () => {
  it("never hands out a bearer token for a request that carried a proof: an issuer that ignores jkt is a server error", async () => {
    let reported = 0;
    const { server } = await setup({
      clientCredentials: async () => ({ accessToken: "a-bearer-token", expiresIn: 60 }),
      dpop: {
        verifyProof: async () => ({ jkt: "k".repeat(43), jti: "j".repeat(16), iat: 0 }),
        consumeProof: async () => true,
        algorithms: ["ES256"],
      },
      onError: () => {
        reported++;
      },
    } as never);
    const refused = await answer(
      await server.route(
        form("/oauth/token", { ...post, grant_type: "client_credentials" }, { dpop: "a.b.c" }),
      ),
    );
    expect(refused.status).toBe(500);
    expect(JSON.stringify(refused.body)).not.toContain("a-bearer-token");
    expect(reported).toBe(1);
  });
});

describe("deviceApproveHandler", () => {
  async function approveSetup() {
    const context = await setup();
    const handler = deviceApproveHandler({ service: context.service });
    const begun = await context.service.begin("tv", ["read"]);
    return { ...context, handler, begun };
  }

  function approveRequest(body: Record<string, string>, name: string | null = "alice") {
    const request = form("/device/approve", body);
    if (name !== null) bindAuthentication(request, createAuthentication(name, ["USER"]));
    return request;
  }

  it("binds the approving human as the subject", async () => {
    const { handler, begun, service } = await approveSetup();
    const response = await handler(
      approveRequest({ user_code: begun.user_code, action: "approve" }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const polled = await service.poll(begun.device_code, "tv");
    expect(polled).toMatchObject({ outcome: "approved", subject: "alice", approvedBy: "alice" });
  });

  it("denies, refuses GET, anonymous callers and incomplete forms", async () => {
    const { handler, begun, service } = await approveSetup();
    expect((await handler(new Request(`${ISSUER}/device/approve`))).status).toBe(405);
    expect(
      (await handler(approveRequest({ user_code: begun.user_code, action: "approve" }, null)))
        .status,
    ).toBe(401);
    expect((await handler(approveRequest({ user_code: begun.user_code }))).status).toBe(400);
    expect(
      (await handler(approveRequest({ user_code: begun.user_code, action: "deny" }))).status,
    ).toBe(200);
    expect(await service.poll(begun.device_code, "tv")).toEqual({ outcome: "denied" });
  });
});
