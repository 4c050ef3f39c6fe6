import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentAuth,
  agentAuth,
  type Grant,
  MemoryGrantStore,
  MemoryReplayStore,
  type ReplayStore,
} from "../src/agentauth/index.ts";
import { generateKeySet, type KeySet } from "../src/jwt/index.ts";
import { MemoryClientStore } from "../src/oauth2/index.ts";
import { PostgresReplayStore } from "../src/stores/postgres/index.ts";
import { RedisReplayStore } from "../src/stores/redis/index.ts";
import { LIMITS } from "./support/grants.ts";
import { postgresForTests } from "./support/postgres.ts";
import { redisForTests } from "./support/redis.ts";

const ISSUER = "https://api.example.com";
// The verifier's default clock tolerance, in seconds.
const TOLERANCE = 5;
const redis = redisForTests();
const { pool } = postgresForTests("skew");
let keys: KeySet;

beforeAll(async () => {
  keys = await generateKeySet();
});

afterAll(async () => {});

const stores: [string, () => ReplayStore & { prune?(now: number): Promise<number> }][] = [
  ["memory", () => new MemoryReplayStore()],
  [
    "Redis",
    () =>
      new RedisReplayStore({
        client: redis.client,
        prefix: `${redis.prefix}jti:${crypto.randomUUID()}:`,
      }),
  ],
  ["PostgreSQL", () => new PostgresReplayStore({ pool })],
];

function instance(replay: ReplayStore, grants: MemoryGrantStore, now: () => number) {
  return agentAuth({
    issuer: ISSUER,
    clients: new MemoryClientStore(),
    keys,
    tokenTtlSeconds: 1,
    capabilities: [{ name: "count", description: "Counts.", handler: () => ({ ran: true }) }],
    stores: { replay, grants },
    now,
    onError: () => {},
    onStoreError: () => {},
  });
}

async function execute(agents: AgentAuth, token: string) {
  const response = await agents.execute(
    new Request(`${ISSUER}/capability/execute`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ capability: "count" }),
    }),
  );
  return [response.status, ((await response.json()) as { error?: string }).error];
}

describe.each(stores)("replay across instances with skewed clocks (%s)", (_name, makeStore) => {
  it.each([
    ["by the tolerance", TOLERANCE],
    ["by twice the tolerance, each within it of the true time", 2 * TOLERANCE],
  ])(
    "refuses on the instance behind a token used on the one ahead, clocks apart %s",
    async (_what, skewSeconds) => {
      const replay = makeStore();
      const grants = new MemoryGrantStore();
      let offset = 0;
      const ahead = await instance(replay, grants, () => Date.now() + offset);
      const behind = await instance(replay, grants, () => Date.now() + offset - skewSeconds * 1000);
      const grant: Grant = {
        grantId: crypto.randomUUID(),
        principalId: "agent-1",
        status: "active",
        capabilities: ["count"],
        approvedBy: "alice",
        createdAt: Date.now() - 60_000,
        expiresAt: Date.now() + 86_400_000,
      };
      await grants.approve(grant, LIMITS);
      const mint = async () =>
        ahead.runtime.tokens.mint({
          principalId: "agent-1",
          grantId: grant.grantId,
          capabilities: ["count"],
        });

      const used = await mint();
      // The instance ahead uses it 700 ms before it stops accepting it.
      offset = (used.expiresAt + TOLERANCE) * 1000 - 700 - Date.now();
      expect(await execute(ahead, used.token)).toEqual([200, undefined]);
      await new Promise((resolve) => setTimeout(resolve, 900));
      // The instance ahead goes on working, and prunes, by its own clock.
      expect(await execute(ahead, (await mint()).token)).toEqual([200, undefined]);
      await replay.prune?.(ahead.runtime.now());
      // The one behind still accepts the token for skew - 0.2 s more: it must know it was used.
      expect(await execute(behind, used.token)).toEqual([401, "invalid_jwt"]);
    },
  );
});
