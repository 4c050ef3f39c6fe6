/**
 * Two MCP endpoints on shared stores (Redis, and PostgreSQL), as behind one
 * load balancer: one issuer and signing key, each instance with its own
 * socket and its own store connection. An SDK client whose requests
 * alternate between them is cut off on the next call after a revocation on
 * either; a DPoP proof spent on one is refused on the other.
 */
import { DpopSession } from "@modelcontextprotocol/client";
import pg from "pg";
import type { GrantStore, ReplayStore } from "portcullis/agentauth";
import { generateKeySet, type KeySet } from "portcullis/jwt";
import { PostgresGrantStore, PostgresReplayStore } from "portcullis/stores/postgres";
import { RedisGrantStore, RedisReplayStore } from "portcullis/stores/redis";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { activeGrant } from "./support/grants.ts";
import { connect, LINES, mcpSite, type Site } from "./support/mcp.ts";
import { postgresForTests } from "./support/postgres.ts";
import { redisForTests } from "./support/redis.ts";

const redis = redisForTests();
const { pool, schema } = postgresForTests("mcp_shared");
// The second instance's own connections to the same Redis and schema.
const secondRedis = createClient({
  url: process.env.PORTCULLIS_REDIS_URL ?? "redis://127.0.0.1:6379",
});
const secondPool = new pg.Pool({
  connectionString: process.env.PORTCULLIS_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test",
  options: `-c search_path=${schema}`,
});
let keys: KeySet;
const sites: Site[] = [];

beforeAll(async () => {
  keys = await generateKeySet();
  await secondRedis.connect();
});

afterAll(async () => {
  for (const site of sites) await site.close();
  await secondRedis.quit();
  await secondPool.end();
});

type Stores = (second: boolean) => { grants: GrantStore; replay: ReplayStore };

const redisStores =
  (prefix: string): Stores =>
  (second) => {
    const client = second ? secondRedis : redis.client;
    return {
      grants: new RedisGrantStore({ client, prefix: `${prefix}grant:` }),
      replay: new RedisReplayStore({ client, prefix: `${prefix}jti:` }),
    };
  };

const postgresStores: Stores = (second) => {
  const shared = second ? secondPool : pool;
  return {
    grants: new PostgresGrantStore({ pool: shared }),
    replay: new PostgresReplayStore({ pool: shared }),
  };
};

/** Instances A and B for one issuer (A's address), and a fetch that alternates between them. */
async function pair(stores: Stores, dpop: boolean) {
  const common = { keys, ...(dpop ? { dpop: {} } : {}) };
  const a = await mcpSite({ ...common, stores: stores(false) });
  sites.push(a);
  const b = await mcpSite({ ...common, stores: stores(true) }, {}, a.base);
  sites.push(b);
  const balancer = { to: "both" as "both" | "a" | "b", turn: 0, hits: { a: 0, b: 0 } };
  // The load balancer: /mcp requests go to A and B in turn (or to one, when told); the rest to A.
  const balanced = (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (url.pathname !== "/mcp") return fetch(request);
    const toB = balancer.to === "both" ? balancer.turn++ % 2 === 1 : balancer.to === "b";
    balancer.hits[toB ? "b" : "a"]++;
    return toB
      ? fetch(new Request(`${b.socket}${url.pathname}${url.search}`, request))
      : fetch(request);
  };
  return { a, b, balanced, balancer };
}

describe.each([
  ["Redis", () => redisStores(`${redis.prefix}${crypto.randomUUID()}:`)],
  ["PostgreSQL", () => postgresStores],
])("two MCP endpoints on shared %s stores", (_name, stores) => {
  for (const line of LINES)
    it(`a revocation on one is seen by the next call on the other (${line})`, async () => {
      const { a, b, balanced, balancer } = await pair(stores(), false);
      const grant = await activeGrant(a.agents.runtime.grants, Date.now(), ["read_notes"]);
      const client = await connect(line, a.base, a.mcpUrl, { fetch: balanced });
      for (let i = 0; i < 4; i++)
        expect((await client.callTool({ name: "read_notes", arguments: {} })).isError).toBeFalsy();
      expect(a.ran.length).toBeGreaterThan(0);
      expect(b.ran.length).toBeGreaterThan(0);
      // Revoked through A; the next call lands on B, the one after on A: both refuse.
      await a.agents.revoke(grant.grantId);
      const before = a.ran.length + b.ran.length;
      balancer.to = "b";
      const bHits = balancer.hits.b;
      await expect(client.callTool({ name: "read_notes", arguments: {} })).rejects.toThrow();
      expect(balancer.hits.b).toBeGreaterThan(bHits);
      balancer.to = "a";
      await expect(client.callTool({ name: "read_notes", arguments: {} })).rejects.toThrow();
      await client.close();
      expect(a.ran.length + b.ran.length).toBe(before);
      expect(b.events).toContainEqual(
        expect.objectContaining({ type: "execute.denied", error: "grant_revoked", via: "mcp" }),
      );
    });

  it("refuses on one a DPoP proof spent on the other", async () => {
    const { a, b, balanced } = await pair(stores(), true);
    await activeGrant(a.agents.runtime.grants, Date.now(), ["read_notes"]);
    const dpop = await DpopSession.create();
    const client = await connect("client 2.4 (2026-07-28)", a.base, a.mcpUrl, {
      fetch: balanced,
      dpop,
    });
    await client.callTool({ name: "read_notes", arguments: {} });
    await client.close();
    const spentOnA = a.seen.filter((entry) => entry.path === "/mcp" && entry.headers.has("dpop"));
    const last = spentOnA.at(-1);
    expect(last).toBeDefined();
    const ran = a.ran.length + b.ran.length;
    const replayed = await fetch(`${b.socket}/mcp`, {
      method: "POST",
      headers: {
        authorization: last?.headers.get("authorization") ?? "",
        dpop: last?.headers.get("dpop") ?? "",
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "read_notes", arguments: {} },
      }),
    });
    expect(replayed.status).toBe(401);
    expect(((await replayed.json()) as { error: string }).error).toBe("invalid_dpop_proof");
    expect(a.ran.length + b.ran.length).toBe(ran);
  });
});
