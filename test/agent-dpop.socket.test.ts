/**
 * DPoP-bound capability tokens (RFC 9449) at the execute URL and at a
 * capability's own location, over a real socket. The runtime is the one
 * `agentAuth({ dpop })` builds; tokens are minted on it with `jkt`. Proofs come
 * from the `dpop` package, and from jose where a proof must be crafted wrong.
 */
import * as dpop from "dpop";
import { exportJWK, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentDpopOptions,
  type AgentRuntime,
  agentAuth,
  agentSessionFrom,
  executeHandler,
  type Grant,
  type GrantStore,
  MemoryGrantStore,
  MemoryReplayStore,
  type ReplayStore,
  resolveSession,
} from "../src/agentauth/index.ts";
import { base64url } from "../src/core/encoding.ts";
import { generateKeySet, type KeySet } from "../src/jwt/index.ts";
import { MemoryClientStore } from "../src/oauth2/index.ts";
import { PostgresReplayStore } from "../src/stores/postgres/index.ts";
import { RedisReplayStore } from "../src/stores/redis/index.ts";
import { type Served, serveFetch } from "./serve.ts";
import { LIMITS } from "./support/grants.ts";
import { postgresForTests } from "./support/postgres.ts";
import { redisForTests } from "./support/redis.ts";

const redis = redisForTests();
const { pool } = postgresForTests("dpop");
const NONCE_SECRET = "a-dpop-nonce-secret-of-32-characters-or-more";
const ALGS = 'algs="ES256 EdDSA Ed25519"';
/** The pointer to the execute URL's protected resource metadata and its scopes, in its first challenge. */
const metadataOf = (site: { base: string }) =>
  `resource_metadata="${site.base}/.well-known/oauth-protected-resource/capability/execute", scope="read"`;

let keys: KeySet;
let es256: dpop.KeyPair;
let ed25519: dpop.KeyPair;
let thief: dpop.KeyPair;
const servers: Served[] = [];
const ran: string[] = [];

beforeAll(async () => {
  keys = await generateKeySet();
  es256 = await dpop.generateKeyPair("ES256");
  ed25519 = await dpop.generateKeyPair("Ed25519");
  thief = await dpop.generateKeyPair("ES256");
});

afterAll(async () => {
  for (const server of servers) await server.close();
});

interface Instance {
  readonly base: string;
  /** This server's own execute socket address (differs from `execute` when configured with another issuer). */
  readonly socket: string;
  readonly execute: string;
  readonly location: string;
  readonly runtime: AgentRuntime;
}

/** One server: agentAuth with `dpop` given, its execute handler and one location. */
async function instance(
  options: AgentDpopOptions | undefined,
  stores: { grants?: GrantStore; replay?: ReplayStore } = {},
  issuer?: string,
): Promise<Instance> {
  let route: (request: Request) => Promise<Response> = async () => new Response(null);
  const served = await serveFetch((request) => route(request));
  servers.push(served);
  const base = issuer ?? served.url;
  const location = `${base}/files/export`;
  const agents = await agentAuth({
    issuer: base,
    clients: new MemoryClientStore(),
    keys,
    stores,
    ...(options === undefined ? {} : { dpop: options }),
    onStoreError: () => {},
    capabilities: [
      { name: "read", description: "Reads.", handler: () => ran.push("read") && "read" },
      { name: "export", description: "Exports.", location },
    ],
  });
  const runtime = agents.runtime;
  const execute = executeHandler(runtime);
  const exported = resolveSession(
    runtime,
    location,
  )(async (request) => {
    ran.push(`export:${agentSessionFrom(request)?.principalId}`);
    return Response.json({ exported: true });
  });
  route = async (request) => {
    const path = new URL(request.url).pathname;
    if (path === "/capability/execute") return execute(request);
    if (path === "/files/export") return exported(request);
    return new Response(null, { status: 404 });
  };
  return {
    base,
    socket: `${served.url}/capability/execute`,
    execute: `${base}/capability/execute`,
    location,
    runtime,
  };
}

async function grant(runtime: AgentRuntime): Promise<Grant> {
  const created: Grant = {
    grantId: `g-${crypto.randomUUID()}`,
    principalId: "agent-1",
    status: "active",
    capabilities: ["read", "export"],
    approvedBy: "alice",
    createdAt: Date.now(),
    expiresAt: Date.now() + 3_600_000,
  };
  const approval = await runtime.grants.approve(created, LIMITS);
  if (approval.outcome === "refused") throw new Error(approval.reason);
  return approval.grant;
}

async function mint(
  site: Instance,
  key: dpop.KeyPair | undefined,
  where: "execute" | "location" = "execute",
  granted?: Grant,
): Promise<string> {
  const g = granted ?? (await grant(site.runtime));
  const minted = await site.runtime.tokens.mint({
    principalId: "agent-1",
    grantId: g.grantId,
    capabilities: [where === "execute" ? "read" : "export"],
    ...(where === "location" ? { audience: site.location } : {}),
    ...(key === undefined ? {} : { jkt: await dpop.calculateThumbprint(key.publicKey) }),
  });
  return minted.token;
}

interface Sent {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly challenges: string[];
  readonly nonce: string | null;
}

async function call(
  url: string,
  token: string,
  options: { scheme?: string; proof?: string | string[]; method?: string } = {},
): Promise<Sent> {
  const headers = new Headers({ authorization: `${options.scheme ?? "DPoP"} ${token}` });
  for (const proof of [options.proof ?? []].flat()) headers.append("dpop", proof);
  const method = options.method ?? (url.endsWith("/capability/execute") ? "POST" : "GET");
  if (method === "POST") headers.set("content-type", "application/json");
  const response = await fetch(url, {
    method,
    headers,
    ...(method === "POST" ? { body: JSON.stringify({ capability: "read" }) } : {}),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text === "" ? {} : JSON.parse(text),
    challenges: (response.headers.get("www-authenticate") ?? "").split(
      /, (?=[A-Z][A-Za-z]+ |[A-Z][A-Za-z]+$)/,
    ),
    nonce: response.headers.get("dpop-nonce"),
  };
}

const proofFor = (key: dpop.KeyPair, url: string, token: string, method = "POST", nonce?: string) =>
  dpop.generateProof(key, url, method, nonce, token);

/** Whether `proof`'s id is held by `replay` (recording it again is refused). */
async function proofRecorded(replay: ReplayStore, key: dpop.KeyPair, proof: string) {
  const { jti } = JSON.parse(
    atob((proof.split(".")[1] as string).replace(/-/g, "+").replace(/_/g, "/")),
  );
  const id = `dpop:${await dpop.calculateThumbprint(key.publicKey)}:${jti}`;
  return !(await replay.setIfAbsent(id, Date.now() + 60_000, Date.now()));
}

const ath = async (token: string) =>
  base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token))));

/** A proof crafted with jose: any header and claims, signed by `key`. */
async function crafted(
  key: dpop.KeyPair,
  url: string,
  token: string,
  change: { header?: Record<string, unknown>; claims?: Record<string, unknown> } = {},
): Promise<string> {
  const jwk = await exportJWK(key.publicKey);
  return new SignJWT({
    jti: crypto.randomUUID(),
    htm: "POST",
    htu: url,
    iat: Math.floor(Date.now() / 1000),
    ath: await ath(token),
    ...change.claims,
  })
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk, ...change.header })
    .sign(key.privateKey);
}

describe("DPoP at the execute URL", () => {
  let site: Instance;
  beforeAll(async () => {
    site = await instance({});
  });

  it("runs a bound token with a proof of its key, once", async () => {
    const token = await mint(site, es256);
    const ok = await call(site.execute, token, {
      proof: await proofFor(es256, site.execute, token),
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ data: "read" });
    expect(ok.nonce).toBeNull();
    // Single use stays the rule: a fresh proof does not revive a spent token.
    const again = await call(site.execute, token, {
      proof: await proofFor(es256, site.execute, token),
    });
    expect(again.status).toBe(401);
    expect(again.body.error).toBe("invalid_jwt");
  });

  it("records nothing for a spent token replayed with fresh proofs, so it cannot fill the replay store", async () => {
    // A small store: were a spent token's proofs recorded, these replays would fill it.
    const replay = new MemoryReplayStore({ maxEntries: 8 });
    const small = await instance({}, { replay });
    const token = await mint(small, es256);
    const first = await call(small.execute, token, {
      proof: await proofFor(es256, small.execute, token),
    });
    expect(first.status).toBe(200);
    for (let i = 0; i < 20; i++) {
      const replayed = await call(small.execute, token, {
        proof: await proofFor(es256, small.execute, token),
      });
      expect([replayed.status, replayed.body.error]).toEqual([401, "invalid_jwt"]);
    }
    // Another agent's fresh token still runs: the store was not filled.
    const fresh = await mint(small, ed25519);
    const ok = await call(small.execute, fresh, {
      proof: await proofFor(ed25519, small.execute, fresh),
    });
    expect(ok.status).toBe(200);
  });

  it('accepts an Ed25519 key signing with alg "Ed25519", and "dpop" in any case', async () => {
    const token = await mint(site, ed25519);
    const proof = await proofFor(ed25519, site.execute, token);
    expect(JSON.parse(atob(proof.split(".")[0] as string)).alg).toBe("Ed25519");
    const ok = await call(site.execute, token, { scheme: "dPoP", proof });
    expect(ok.status).toBe(200);
  });

  it("refuses every bad proof without spending the token, which then runs with a good one", async () => {
    const token = await mint(site, es256);
    const other = await mint(site, es256);
    const execute = site.execute;
    const now = Math.floor(Date.now() / 1000);
    const { d } = await exportJWK(
      (await dpop.generateKeyPair("ES256", { extractable: true })).privateKey,
    );
    const secret = new TextEncoder().encode("a".repeat(32));
    const bad: [string, string | string[]][] = [
      ["wrong htm", await proofFor(es256, execute, token, "PUT")],
      ["wrong htu (path)", await proofFor(es256, `${site.base}/capability/other`, token)],
      ["wrong htu (host)", await proofFor(es256, "http://localhost/capability/execute", token)],
      ["wrong ath", await proofFor(es256, execute, other)],
      ["no ath", await dpop.generateProof(es256, execute, "POST")],
      ["another key", await proofFor(thief, execute, token)],
      ["old iat", await crafted(es256, execute, token, { claims: { iat: now - 120 } })],
      ["future iat", await crafted(es256, execute, token, { claims: { iat: now + 60 } })],
      ["typ jwt", await crafted(es256, execute, token, { header: { typ: "jwt" } })],
      [
        "private key in the header",
        await crafted(es256, execute, token, {
          header: { jwk: { ...(await exportJWK(es256.publicKey)), d } },
        }),
      ],
      [
        "alg none",
        `${base64url(new TextEncoder().encode(JSON.stringify({ alg: "none", typ: "dpop+jwt", jwk: await exportJWK(es256.publicKey) })))}.${(await crafted(es256, execute, token)).split(".")[1]}.AAAA`,
      ],
      [
        "HS256",
        await new SignJWT({
          jti: crypto.randomUUID(),
          htm: "POST",
          htu: execute,
          ath: await ath(token),
        })
          .setIssuedAt()
          .setProtectedHeader({
            alg: "HS256",
            typ: "dpop+jwt",
            jwk: { kty: "oct", k: "YQ" } as never,
          })
          .sign(secret),
      ],
      [
        "two DPoP headers",
        [await proofFor(es256, execute, token), await proofFor(es256, execute, token)],
      ],
      ["a header over 4096 bytes", `${"a".repeat(4097)}`],
    ];
    for (const [name, proof] of bad) {
      const refused = await call(execute, token, { proof });
      expect(refused.status, name).toBe(401);
      expect(refused.body.error, name).toBe("invalid_dpop_proof");
      // Refused as a header before any parsing.
      if (name.startsWith("two") || name.includes("4096"))
        expect(refused.body.message, name).toMatch(/more than one DPoP header, or one over 4096/);
      expect(refused.challenges, name).toEqual([
        `Bearer ${metadataOf(site)}`,
        `DPoP error="invalid_dpop_proof", ${ALGS}`,
        `AgentAuth discovery="${site.base}/.well-known/agent-configuration"`,
      ]);
    }
    // A thief without the key burnt nothing.
    const ok = await call(execute, token, { proof: await proofFor(es256, execute, token) });
    expect(ok.status).toBe(200);
  });

  it("refuses a replayed proof, whose id was recorded once its token was spent", async () => {
    const token = await mint(site, es256);
    const proof = await proofFor(es256, site.execute, token);
    const first = await call(site.execute, token, { proof });
    expect(first.status).toBe(200);
    const replay = await call(site.execute, token, { proof });
    expect(replay.status).toBe(401);
    expect(replay.body.error).toBe("invalid_jwt");
    expect(await proofRecorded(site.runtime.replay, es256, proof)).toBe(true);
  });

  it("refuses a bound token presented as Bearer (downgrade), without spending it", async () => {
    const token = await mint(site, es256);
    for (const proof of [undefined, await proofFor(es256, site.execute, token)]) {
      const refused = await call(site.execute, token, {
        scheme: "Bearer",
        ...(proof ? { proof } : {}),
      });
      expect(refused.status).toBe(401);
      expect(refused.body.error).toBe("invalid_jwt");
      expect(refused.challenges[1]).toBe(`DPoP error="invalid_token", ${ALGS}`);
      expect(refused.challenges[0]).toBe(`Bearer ${metadataOf(site)}`);
    }
    const noProof = await call(site.execute, token);
    expect(noProof.body.error).toBe("invalid_jwt");
    const ok = await call(site.execute, token, {
      proof: await proofFor(es256, site.execute, token),
    });
    expect(ok.status).toBe(200);
  });

  it("refuses an unbound token presented with DPoP, and runs it as Bearer", async () => {
    const token = await mint(site, undefined);
    const proof = await proofFor(es256, site.execute, token);
    for (const sent of [{ proof }, { scheme: "Bearer", proof }, {}]) {
      const refused = await call(site.execute, token, sent);
      expect(refused.status).toBe(401);
      expect(refused.body.error).toBe("invalid_jwt");
      expect(refused.body.message).toMatch(/not sender-constrained/);
    }
    expect((await call(site.execute, token, { scheme: "Bearer" })).status).toBe(200);
  });
});

describe("DPoP at a location", () => {
  let site: Instance;
  beforeAll(async () => {
    site = await instance({});
  });

  it("opens the session with a proof for the location's configured URL and the request's method", async () => {
    const token = await mint(site, es256, "location");
    const wrongUrl = await call(site.location, token, {
      proof: await proofFor(es256, site.execute, token, "GET"),
    });
    expect(wrongUrl.body.error).toBe("invalid_dpop_proof");
    const wrongMethod = await call(site.location, token, {
      proof: await proofFor(es256, site.location, token, "POST"),
    });
    expect(wrongMethod.body.error).toBe("invalid_dpop_proof");
    const asBearer = await call(site.location, token, { scheme: "Bearer" });
    expect(asBearer.body.error).toBe("invalid_jwt");
    const before = ran.length;
    const ok = await call(site.location, `${token}`, {
      proof: await proofFor(es256, `${site.location}?format=csv`, token, "GET"),
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ exported: true });
    expect(ran.slice(before)).toEqual(["export:agent-1"]);
    const spent = await call(site.location, token, {
      proof: await proofFor(es256, site.location, token, "GET"),
    });
    expect(spent.body.error).toBe("invalid_jwt");
  });

  it("answers a request without a token with the DPoP challenge beside Bearer", async () => {
    const response = await fetch(site.location);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe(
      `Bearer, DPoP ${ALGS}, AgentAuth discovery="${site.base}/.well-known/agent-configuration"`,
    );
  });
});

describe("DPoP nonces", () => {
  let site: Instance;
  beforeAll(async () => {
    site = await instance({ nonce: { secret: NONCE_SECRET, required: true } });
  });

  for (const where of ["execute", "location"] as const) {
    it(`at the ${where}: no nonce gets use_dpop_nonce and the nonce; the retry with the same token runs`, async () => {
      const url = where === "execute" ? site.execute : site.location;
      const method = where === "execute" ? "POST" : "GET";
      const token = await mint(site, es256, where);
      const first = await call(url, token, { proof: await proofFor(es256, url, token, method) });
      expect(first.status).toBe(401);
      expect(first.body.error).toBe("use_dpop_nonce");
      expect(first.challenges[1]).toBe(`DPoP error="use_dpop_nonce", ${ALGS}`);
      expect(first.nonce).toMatch(/^[A-Za-z0-9_-]{54}$/);
      const retry = await call(url, token, {
        proof: await proofFor(es256, url, token, method, first.nonce as string),
      });
      expect(retry.status).toBe(200);
      expect(retry.nonce).toBe(first.nonce);
    });
  }

  it("refuses a stale or forged nonce with use_dpop_nonce, and a nonce from another secret", async () => {
    const token = await mint(site, es256);
    const other = await instance({ nonce: { secret: `${NONCE_SECRET}!`, required: true } });
    const foreign = (await call(other.execute, await mint(other, es256))).nonce as string;
    const current = (await call(site.execute, token)).nonce as string;
    const slot = new DataView(new Uint8Array(8).buffer);
    slot.setBigUint64(0, BigInt(Math.floor(Date.now() / 60_000) - 5));
    const stale = `${base64url(new Uint8Array(slot.buffer))}${current.slice(11)}`;
    const forged = `${current.slice(0, 30)}${current[30] === "A" ? "B" : "A"}${current.slice(31)}`;
    for (const nonce of [stale, forged, foreign]) {
      const refused = await call(site.execute, token, {
        proof: await proofFor(es256, site.execute, token, "POST", nonce),
      });
      expect(refused.body.error, nonce).toBe("use_dpop_nonce");
    }
    const ok = await call(site.execute, token, {
      proof: await proofFor(es256, site.execute, token, "POST", current),
    });
    expect(ok.status).toBe(200);
  });
});

describe("a replay store that fails", () => {
  it("answers 503 to a DPoP request when the proof's id cannot be recorded, and runs a fresh token once the store is back", async () => {
    const inner = new MemoryReplayStore();
    let failing = true;
    const replay: ReplayStore = {
      setIfAbsent: (jti, expiresAt, now) =>
        failing && jti.startsWith("dpop:")
          ? Promise.reject(new Error("down"))
          : inner.setIfAbsent(jti, expiresAt, now),
    };
    const site = await instance({}, { replay });
    const token = await mint(site, es256);
    const down = await call(site.execute, token, {
      proof: await proofFor(es256, site.execute, token),
    });
    expect(down.status).toBe(503);
    expect(down.body.error).toBe("temporarily_unavailable");
    failing = false;
    // Failing closed: the token was spent with the proof unrecorded, so it is refused now.
    const spent = await call(site.execute, token, {
      proof: await proofFor(es256, site.execute, token),
    });
    expect(spent.status).toBe(401);
    const fresh = await mint(site, es256);
    const ok = await call(site.execute, fresh, {
      proof: await proofFor(es256, site.execute, fresh),
    });
    expect(ok.status).toBe(200);
  });
});

describe("dpop.required", () => {
  it("refuses Bearer, and challenges with DPoP only", async () => {
    const site = await instance({ required: true });
    const token = await mint(site, undefined);
    const refused = await call(site.execute, token, { scheme: "Bearer" });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe("invalid_jwt");
    expect(refused.challenges[0]).toBe(`DPoP error="invalid_token", ${ALGS}, ${metadataOf(site)}`);
    expect(refused.challenges).toHaveLength(2);
    const bound = await mint(site, es256);
    const ok = await call(site.execute, bound, {
      proof: await proofFor(es256, site.execute, bound),
    });
    expect(ok.status).toBe(200);
  });
});

describe("without dpop", () => {
  it("a bound token is refused even with a proof, and the DPoP scheme is not a token", async () => {
    const site = await instance(undefined);
    const token = await mint(site, es256);
    const asBearer = await call(site.execute, token, { scheme: "Bearer" });
    expect(asBearer.status).toBe(401);
    expect(asBearer.body.error).toBe("invalid_jwt");
    const asDpop = await call(site.execute, token, {
      proof: await proofFor(es256, site.execute, token),
    });
    expect(asDpop.body.error).toBe("authentication_required");
  });
});

describe.each([
  ["Redis", () => new RedisReplayStore({ client: redis.client, prefix: `${redis.prefix}jti:` })],
  ["PostgreSQL", () => new PostgresReplayStore({ pool })],
])("two instances sharing the replay store (%s)", (_name, replay) => {
  it("a proof and token used on one are refused on the other, the proof's id recorded in the shared store", async () => {
    const stores = { grants: new MemoryGrantStore(), replay: replay() };
    const a = await instance({}, stores);
    // Behind one load balancer: B is configured with A's URLs, whatever its socket.
    const b = await instance({}, stores, a.base);
    expect(b.execute).toBe(a.execute);
    const token = await mint(a, es256);
    const proof = await proofFor(es256, a.execute, token);
    expect((await call(a.socket, token, { proof })).status).toBe(200);
    const replayed = await call(b.socket, token, { proof });
    expect(replayed.status).toBe(401);
    expect(replayed.body.error).toBe("invalid_jwt");
    // The proof's id is in the shared store, for every instance to refuse.
    expect(await proofRecorded(stores.replay, es256, proof)).toBe(true);
    // B serves the same token's sibling with a fresh proof: the store is shared, not broken.
    const fresh = await mint(a, es256);
    const ok = await call(b.socket, fresh, { proof: await proofFor(es256, b.execute, fresh) });
    expect(ok.status).toBe(200);
  });
});
