/**
 * One instance with imported keys, grants in PostgreSQL and the memory replay
 * store, restarted: the token it saw used before the restart is still refused
 * after it, while the grant (durable) still yields fresh tokens.
 */
import { exportJWK, generateKeyPair } from "jose";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ServerProcess, startServer } from "./processes.ts";

const ISSUER = "http://127.0.0.1:9";
const SECRET = "agent-one-secret-0123456789";

import { postgresForTests } from "./support/postgres.ts";

const { schema } = postgresForTests("restart");
let env: Record<string, string>;
let server: ServerProcess | undefined;

beforeAll(async () => {
  const { privateKey } = await generateKeyPair("EdDSA", { extractable: true });
  env = {
    ISSUER,
    KEY_JWK: JSON.stringify(await exportJWK(privateKey)),
    PG_SCHEMA: schema,
    PREFIX: `portcullis-restart:${crypto.randomUUID()}:`,
    GRANTS: "postgres",
    REPLAY: "memory",
  };
});

afterAll(async () => {
  await server?.stop();
});

async function post(base: string, path: string, form: Record<string, string>) {
  const response = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ client_id: "agent-1", client_secret: SECRET, ...form }).toString(),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function execute(base: string, token: string) {
  const response = await fetch(`${base}/capability/execute`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ capability: "count" }),
  });
  return [response.status, ((await response.json()) as { error?: string }).error];
}

it("refuses after a restart a token used before it, and still serves the durable grant", async () => {
  server = await startServer(env, "test/fixtures/agent-server.ts");
  const begun = await post(server.base, "/oauth/device_authorization", { scope: "count" });
  expect(begun.status).toBe(200);
  const approved = await fetch(`${server.base}/test/approve`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ user_code: begun.body.user_code, human: "alice" }),
  });
  expect(approved.status).toBe(200);
  const issued = await post(server.base, "/oauth/token", {
    grant_type: "urn:ietf:params:oauth:grant-type:device_code",
    device_code: begun.body.device_code as string,
  });
  expect(issued.status).toBe(200);
  const token = issued.body.access_token as string;
  expect(await execute(server.base, token)).toEqual([200, undefined]);

  await server.stop();
  server = await startServer(env, "test/fixtures/agent-server.ts");

  expect(await execute(server.base, token)).toEqual([401, "invalid_jwt"]);
  const fresh = await post(server.base, "/oauth/token", { grant_type: "client_credentials" });
  expect([fresh.status, fresh.body.error]).toEqual([200, undefined]);
  expect(await execute(server.base, fresh.body.access_token as string)).toEqual([200, undefined]);
}, 60_000);
