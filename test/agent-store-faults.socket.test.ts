/**
 * Agent stores failing under a real server process: a Redis and a PostgreSQL
 * of the test's own (never the shared ones) are frozen and killed mid-traffic.
 * Nothing is minted and no handler runs without its store, nothing answers
 * 500, the process survives, and service resumes once the store is back.
 */
import { exportJWK, generateKeyPair } from "jose";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../src/core/errors.ts";
import { storeCaller } from "../src/core/store-call.ts";
import type { DeviceCodeRecord } from "../src/oauth2/index.ts";
import { migrate } from "../src/stores/postgres/index.ts";
import { createRedisClient, RedisDeviceCodeStore } from "../src/stores/redis/index.ts";
import {
  type PostgresProcess,
  type RedisProcess,
  type ServerProcess,
  startPostgres,
  startRedis,
  startServer,
} from "./processes.ts";

const SECRET = "agent-one-secret-0123456789";
const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
let redis: RedisProcess;
let postgres: PostgresProcess;
let server: ServerProcess;

beforeAll(async () => {
  [redis, postgres] = await Promise.all([startRedis(), startPostgres()]);
  const pool = new pg.Pool({ connectionString: postgres.url });
  await migrate(pool);
  await pool.end();
  const { privateKey } = await generateKeyPair("EdDSA", { extractable: true });
  server = await startServer(
    {
      ISSUER: "http://127.0.0.1:9",
      KEY_JWK: JSON.stringify(await exportJWK(privateKey)),
      REDIS_URL: redis.url,
      PG_URL: postgres.url,
      GRANTS: "postgres",
      REPLAY: "postgres",
      TIMEOUT_MS: "300",
    },
    "test/fixtures/agent-server.ts",
  );
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await Promise.allSettled([redis?.kill(), postgres?.kill()]);
});

async function post(path: string, form: Record<string, string>) {
  const started = performance.now();
  const response = await fetch(`${server.base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ client_id: "agent-1", client_secret: SECRET, ...form }).toString(),
  });
  const body = (await response.json()) as Record<string, unknown>;
  return { status: response.status, body, elapsed: performance.now() - started };
}

async function execute(token: string) {
  const started = performance.now();
  const response = await fetch(`${server.base}/capability/execute`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ capability: "count" }),
  });
  const body = (await response.json()) as Record<string, unknown>;
  return { status: response.status, body, elapsed: performance.now() - started };
}

const runs = async () =>
  ((await (await fetch(`${server.base}/test/runs`)).json()) as { runs: number }).runs;

async function approve(): Promise<void> {
  const begun = await post("/oauth/device_authorization", { scope: "count" });
  expect(begun.status).toBe(200);
  const approved = await fetch(`${server.base}/test/approve`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ user_code: begun.body.user_code, human: "alice" }),
  });
  expect(approved.status).toBe(200);
  const polled = await post("/oauth/token", {
    grant_type: DEVICE_GRANT,
    device_code: begun.body.device_code as string,
  });
  expect(polled.status).toBe(200);
}

async function tokens(count: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const fresh = await post("/oauth/token", { grant_type: "client_credentials" });
    expect(fresh.status).toBe(200);
    out.push(fresh.body.access_token as string);
  }
  return out;
}

async function until(check: () => Promise<boolean>, ms: number): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return performance.now() - started;
}

describe("agent stores failing under a running server", () => {
  it("answers 503 within the timeout while PostgreSQL accepts connections but never answers; no handler runs", async () => {
    await approve();
    const [token, later] = await tokens(2);
    const before = await runs();
    postgres.freeze();
    try {
      const answers = await Promise.all([
        execute(token as string),
        post("/oauth/token", { grant_type: "client_credentials" }),
      ]);
      for (const answer of answers) {
        expect(answer.status).toBe(503);
        expect(answer.body.error).toBe("temporarily_unavailable");
        expect(answer.elapsed).toBeLessThan(2000);
      }
    } finally {
      postgres.thaw();
    }
    expect(await runs()).toBe(before);
    expect((await execute(later as string)).status).toBe(200);
  });

  it("answers 503 while Redis is frozen, and the device flow works again once it thaws", async () => {
    redis.freeze();
    try {
      const begun = await post("/oauth/device_authorization", { scope: "count" });
      expect([begun.status, begun.body.error]).toEqual([503, "temporarily_unavailable"]);
      expect(begun.elapsed).toBeLessThan(2000);
    } finally {
      redis.thaw();
    }
    await approve();
  });

  it("leaves an approved device code to the poll after one answered 503 while Redis was frozen", async () => {
    const begun = await post("/oauth/device_authorization", { scope: "count" });
    const approved = await fetch(`${server.base}/test/approve`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user_code: begun.body.user_code, human: "alice" }),
    });
    expect(approved.status).toBe(200);
    const poll = { grant_type: DEVICE_GRANT, device_code: begun.body.device_code as string };
    redis.freeze();
    try {
      const given = await post("/oauth/token", poll);
      expect([given.status, given.body.error]).toEqual([503, "temporarily_unavailable"]);
    } finally {
      redis.thaw();
    }
    // The poll Redis held while frozen runs once it thaws; then the client polls again.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const again = await post("/oauth/token", poll);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.access_token).toBeTypeOf("string");
  });

  it("survives PostgreSQL killed mid-traffic: only 200 or 503, runs match the 200s, service resumes after restart", async () => {
    await approve();
    const batch = await tokens(40);
    const before = await runs();
    const traffic = Promise.all(
      batch.map(async (token, i) => {
        await new Promise((resolve) => setTimeout(resolve, i * 10));
        return execute(token);
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    await postgres.kill();
    const answers = await traffic;
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.every((status) => status === 200 || status === 503),
      statuses.join(","),
    ).toBe(true);
    expect(statuses).toContain(503);
    expect(server.alive()).toBe(true);
    expect((await runs()) - before).toBe(statuses.filter((s) => s === 200).length);

    await postgres.restart();
    const resumedIn = await until(async () => {
      const fresh = await post("/oauth/token", { grant_type: "client_credentials" });
      return (
        fresh.status === 200 && (await execute(fresh.body.access_token as string)).status === 200
      );
    }, 10_000);
    expect(resumedIn).toBeLessThan(10_000);
  }, 30_000);

  it("survives Redis killed mid-traffic: only 200 or 503, and device flows resume after restart", async () => {
    const traffic = Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        await new Promise((resolve) => setTimeout(resolve, i * 10));
        return post("/oauth/device_authorization", { scope: "count" });
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    await redis.kill();
    const statuses = (await traffic).map((a) => a.status);
    expect(
      statuses.every((s) => s === 200 || s === 503),
      statuses.join(","),
    ).toBe(true);
    expect(statuses).toContain(503);
    expect(server.alive()).toBe(true);
    await redis.restart();
    const resumedIn = await until(
      async () => (await post("/oauth/device_authorization", { scope: "count" })).status === 200,
      10_000,
    );
    expect(resumedIn).toBeLessThan(10_000);
    await approve();
  }, 30_000);
});

describe("a device-code store call the caller gave up on while Redis was frozen", () => {
  const call = storeCaller({
    what: "the device code store",
    timeoutMs: 300,
    report: () => {},
    timed: true,
  });
  let client: ReturnType<typeof createRedisClient>;
  let store: RedisDeviceCodeStore;
  beforeAll(async () => {
    client = createRedisClient(redis.url, { onError: () => {} });
    await client.connect();
    store = new RedisDeviceCodeStore({ client, prefix: `faults:${crypto.randomUUID()}:` });
  });
  afterAll(() => client?.destroy());

  async function pending(): Promise<DeviceCodeRecord> {
    const now = Date.now();
    const record: DeviceCodeRecord = {
      deviceCodeHash: `dc-${crypto.randomUUID()}`,
      userCodeHash: `uc-${crypto.randomUUID()}`,
      clientId: `client-${crypto.randomUUID()}`,
      scope: ["count"],
      createdAt: now,
      expiresAt: now + 600_000,
      intervalMs: 0,
      status: "pending",
    };
    expect(await call(() => store.create(record, now))).toBe("created");
    return record;
  }

  async function givenUp(work: () => Promise<unknown>): Promise<void> {
    redis.freeze();
    try {
      await expect(call(work)).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      redis.thaw();
    }
    await until(
      async () => (await call(() => store.findByUserCode("none", Date.now()))) === undefined,
      10_000,
    );
  }

  it("approves nothing: the human was answered 503, and the agent's poll finds the code pending", async () => {
    const record = await pending();
    const approval = { status: "approved", subject: record.clientId, decidedBy: "alice" } as const;
    await givenUp(() => store.decide(record.userCodeHash, approval, Date.now()));
    expect(
      (await call(() => store.poll(record.deviceCodeHash, record.clientId, Date.now(), 5000)))
        .outcome,
    ).toBe("pending");
    expect(
      (await call(() => store.decide(record.userCodeHash, approval, Date.now()))).outcome,
    ).toBe("decided");
  });

  it("consumes no approval: the next poll collects it", async () => {
    const record = await pending();
    const approval = { status: "approved", subject: record.clientId, decidedBy: "alice" } as const;
    await call(() => store.decide(record.userCodeHash, approval, Date.now()));
    await givenUp(() => store.poll(record.deviceCodeHash, record.clientId, Date.now(), 5000));
    expect(
      (await call(() => store.poll(record.deviceCodeHash, record.clientId, Date.now(), 5000)))
        .outcome,
    ).toBe("approved");
  });
});
