/**
 * Two processes sharing one Redis or one PostgreSQL race to redeem one
 * authorization code and to rotate one refresh token: across both, exactly
 * one wins and every other attempt is seen as reuse. And they race to make
 * one person's codes and families: across both, the person's quotas hold.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type {
  AuthorizationCodeStore,
  RefreshRotation,
  RefreshTokenRecord,
  RefreshTokenStore,
} from "../src/oauth2/index.ts";
import {
  PostgresAuthorizationCodeStore,
  PostgresRefreshTokenStore,
} from "../src/stores/postgres/index.ts";
import { RedisAuthorizationCodeStore, RedisRefreshTokenStore } from "../src/stores/redis/index.ts";
import { postgresForTests } from "./support/postgres.ts";
import { redisForTests } from "./support/redis.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const redis = redisForTests();
const postgres = postgresForTests("codes");
const COUNT = 25;
const CLIENT = "https://client.example/meta.json";

/** The racer fixture, started and connected, waiting for the word. */
async function racer(env: Record<string, string>) {
  const child: ChildProcess = spawn(
    process.execPath,
    ["--conditions=source", "--import", "tsx", "test/fixtures/code-store-racer.ts"],
    { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] },
  );
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  const seen = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(output);
        if (match) resolve(match[0]);
      };
      child.stdout?.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
        check();
      });
      child.stderr?.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
      });
      void exited.then(() => {
        check();
        reject(new Error(`racer exited:\n${output}`));
      });
    });
  await seen(/ready\n/);
  return {
    go: async (): Promise<string[]> => {
      child.stdin?.write("go\n");
      return JSON.parse(await seen(/\[.*\]/)) as string[];
    },
  };
}

const backends: [
  string,
  Record<string, string>,
  () => AuthorizationCodeStore,
  () => RefreshTokenStore,
][] = [
  [
    "Redis",
    { STORE: "redis", PREFIX: redis.prefix },
    () => new RedisAuthorizationCodeStore({ client: redis.client, prefix: `${redis.prefix}code:` }),
    () => new RedisRefreshTokenStore({ client: redis.client, prefix: `${redis.prefix}refresh:` }),
  ],
  [
    "PostgreSQL",
    { STORE: "postgres", PG_SCHEMA: postgres.schema },
    () => new PostgresAuthorizationCodeStore({ pool: postgres.pool, timeoutMs: 5000 }),
    () => new PostgresRefreshTokenStore({ pool: postgres.pool, timeoutMs: 5000 }),
  ],
];

describe.each(backends)("two processes on one %s", (_name, env, makeCodes, makeRefresh) => {
  it("redeem one code: exactly one redemption of 50 wins, the other 49 see reuse", async () => {
    const store = makeCodes();
    const now = Date.now();
    const codeHash = `code-${crypto.randomUUID()}`;
    await store.create(
      {
        codeHash,
        clientId: CLIENT,
        redirectUri: "http://127.0.0.1:33418/callback",
        codeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        resource: "https://api.example.com/mcp",
        scope: ["count"],
        grantId: "g",
        approvedBy: "alice",
        expiresAt: now + 60_000,
      },
      now,
    );
    const other = await racer({ ...env, KIND: "code", HASH: codeHash, COUNT: String(COUNT) });
    const [theirs, ours] = await Promise.all([
      other.go(),
      Promise.all(
        Array.from({ length: COUNT }, async () => (await store.redeem(codeHash, now + 1)).outcome),
      ),
    ]);
    const outcomes = [...theirs, ...ours];
    expect(outcomes.filter((o) => o === "redeemed")).toHaveLength(1);
    expect(outcomes.filter((o) => o === "reused")).toHaveLength(2 * COUNT - 1);
  }, 30_000);

  it("rotate one refresh token: exactly one rotation of 50 wins, the other 49 see reuse", async () => {
    const store = makeRefresh();
    const now = Date.now();
    const first: RefreshTokenRecord = {
      tokenHash: `rt-${crypto.randomUUID()}`,
      familyId: `family-${crypto.randomUUID()}`,
      clientId: CLIENT,
      approvedBy: "alice",
      grantId: "g",
      scope: ["count"],
      resource: "https://api.example.com/mcp",
      expiresAt: now + 3_600_000,
    };
    await store.create(first, now);
    const other = await racer({
      ...env,
      KIND: "refresh",
      HASH: first.tokenHash,
      FAMILY: first.familyId,
      CLIENT,
      TAG: "theirs",
      COUNT: String(COUNT),
    });
    const nexts = Array.from({ length: COUNT }, (_, i) => ({
      ...first,
      tokenHash: `ours-${i}-${crypto.randomUUID()}`,
    }));
    const [theirs, ours] = await Promise.all([
      other.go(),
      Promise.all(nexts.map((next) => store.rotate(first.tokenHash, next, now + 1))),
    ]);
    const outcomes = [...theirs, ...ours.map((a: RefreshRotation) => a.outcome)];
    expect(outcomes.filter((o) => o === "rotated")).toHaveLength(1);
    expect(outcomes.filter((o) => o === "reused")).toHaveLength(2 * COUNT - 1);
    // The first token is spent for both processes.
    expect(
      (await store.rotate(first.tokenHash, nexts[0] as RefreshTokenRecord, now + 2)).outcome,
    ).toBe("reused");
  }, 30_000);

  it("one person's codes made by both at once: exactly maxCodesPerPerson of 50 are stored", async () => {
    const person = `person-${crypto.randomUUID()}`;
    const common = { ...env, KIND: "create-code", PERSON: person, COUNT: String(COUNT) };
    const [one, two] = await Promise.all([
      racer({ ...common, TAG: "one" }),
      racer({ ...common, TAG: "two" }),
    ]);
    const outcomes = (await Promise.all([one.go(), two.go()])).flat();
    expect(outcomes.filter((o) => o === "created")).toHaveLength(10);
    expect(outcomes.filter((o) => o === "ERR_STORE_FULL")).toHaveLength(2 * COUNT - 10);
  }, 30_000);

  it("one person's families of one client made by both at once: five of 50 stay live", async () => {
    const store = makeRefresh();
    const person = `person-${crypto.randomUUID()}`;
    const common = { ...env, KIND: "create-family", PERSON: person, CLIENT, COUNT: String(COUNT) };
    const [one, two] = await Promise.all([
      racer({ ...common, TAG: "one" }),
      racer({ ...common, TAG: "two" }),
    ]);
    const hashes = (await Promise.all([one.go(), two.go()])).flat();
    expect(hashes).toHaveLength(2 * COUNT);
    const found = await Promise.all(hashes.map((hash) => store.find(hash, Date.now())));
    expect(found.filter((record) => record !== undefined)).toHaveLength(5);
  }, 30_000);
});
