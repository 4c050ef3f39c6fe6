/**
 * Two agentauth server processes sharing their stores (Redis, and PostgreSQL
 * for grants and replay), as behind one load balancer: single use, single
 * consumption and revocation hold across both.
 */
import { exportJWK, generateKeyPair } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServerProcess, startServer } from "./processes.ts";

const ISSUER = "http://127.0.0.1:9";
const SECRET = "agent-one-secret-0123456789";
const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

import { postgresForTests } from "./support/postgres.ts";

const { schema } = postgresForTests("shared");
let keyJwk = "";

beforeAll(async () => {
  const { privateKey } = await generateKeyPair("EdDSA", { extractable: true });
  keyJwk = JSON.stringify(await exportJWK(privateKey));
});

afterAll(async () => {});

async function post(base: string, path: string, form: Record<string, string>) {
  const response = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ client_id: "agent-1", client_secret: SECRET, ...form }).toString(),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function json(base: string, path: string, body: unknown) {
  const response = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return response;
}

async function execute(base: string, token: string) {
  const response = await fetch(`${base}/capability/execute`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ capability: "count" }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function runs(servers: ServerProcess[]): Promise<number> {
  let total = 0;
  for (const server of servers)
    total += ((await (await fetch(`${server.base}/test/runs`)).json()) as { runs: number }).runs;
  return total;
}

describe.each([
  ["Redis", { GRANTS: "redis", REPLAY: "redis" }],
  ["PostgreSQL grants and replay", { GRANTS: "postgres", REPLAY: "postgres" }],
])("two instances on shared stores (%s)", (_name, stores) => {
  let a: ServerProcess;
  let b: ServerProcess;

  beforeAll(async () => {
    const env = {
      ISSUER,
      KEY_JWK: keyJwk,
      PG_SCHEMA: schema,
      PREFIX: `portcullis-shared:${crypto.randomUUID()}:`,
      ...stores,
    };
    [a, b] = await Promise.all([
      startServer(env, "test/fixtures/agent-server.ts"),
      startServer(env, "test/fixtures/agent-server.ts"),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  /** Begun on A, approved on B, polled on both at once: the flow spans the instances. */
  async function approvedToken(): Promise<{
    token: string;
    answers: { status: number; body: Record<string, unknown> }[];
  }> {
    const begun = await post(a.base, "/oauth/device_authorization", { scope: "count" });
    expect(begun.status).toBe(200);
    const approved = await json(b.base, "/test/approve", {
      user_code: begun.body.user_code,
      human: "alice",
    });
    expect(approved.status).toBe(200);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        post(i % 2 === 0 ? a.base : b.base, "/oauth/token", {
          grant_type: DEVICE_GRANT,
          device_code: begun.body.device_code as string,
        }),
      ),
    );
    const tokens = answers.filter((answer) => answer.status === 200);
    expect(tokens).toHaveLength(1);
    return { token: tokens[0]?.body.access_token as string, answers };
  }

  it("begins on one instance, approves on the other, and hands out one token to 20 polls split across both", async () => {
    const { answers } = await approvedToken();
    for (const answer of answers.filter((x) => x.status !== 200))
      expect(["slow_down", "invalid_grant"]).toContain(answer.body.error);
  });

  it("refuses on one instance a token used on the other", async () => {
    const { token } = await approvedToken();
    expect((await execute(a.base, token)).status).toBe(200);
    const replayed = await execute(b.base, token);
    expect([replayed.status, replayed.body.error]).toEqual([401, "invalid_jwt"]);
  });

  it("runs the handler exactly once for 50 concurrent uses of one token split across both", async () => {
    const { token } = await approvedToken();
    const before = await runs([a, b]);
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => execute(i % 2 === 0 ? a.base : b.base, token)),
    );
    expect(answers.filter((x) => x.status === 200)).toHaveLength(1);
    expect((await runs([a, b])) - before).toBe(1);
  });

  it("ends consents of one client by one human, answered on both at once, in one grant holding both", async () => {
    for (let round = 0; round < 5; round++) {
      const human = `racer-${crypto.randomUUID()}`;
      const consentOn = async (base: string, scope: string) => {
        const url = new URL("/oauth/authorize", base);
        url.search = new URLSearchParams({
          response_type: "code",
          client_id: "desktop",
          redirect_uri: "http://127.0.0.1:7777/callback",
          code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
          code_challenge_method: "S256",
          scope,
          resource: `${ISSUER}/capability/execute`,
        }).toString();
        const page = await fetch(url, { headers: { "x-test-human": human } });
        expect(page.status).toBe(200);
        return ((await page.json()) as { consentToken: string }).consentToken;
      };
      const tokens = [await consentOn(a.base, "count"), await consentOn(b.base, "ping")];
      const answers = await Promise.all(
        [a, b].map((server, i) =>
          fetch(`${server.base}/oauth/authorize`, {
            method: "POST",
            headers: {
              "content-type": "application/x-www-form-urlencoded",
              "x-test-human": human,
            },
            body: new URLSearchParams({
              consent: tokens[i] as string,
              action: "approve",
            }).toString(),
            redirect: "manual",
          }),
        ),
      );
      expect(answers.map((answer) => answer.status)).toEqual([303, 303]);
      const grants = (await (await fetch(`${a.base}/test/grants?human=${human}`)).json()) as {
        grantId: string;
        capabilities: string[];
      }[];
      expect(grants).toHaveLength(1);
      expect([...(grants[0]?.capabilities ?? [])].sort()).toEqual(["count", "ping"]);
    }
  });

  it("sees on one instance a revocation made on the other", async () => {
    await approvedToken();
    const fresh = await post(b.base, "/oauth/token", { grant_type: "client_credentials" });
    expect(fresh.status).toBe(200);
    const grants = (await (await fetch(`${a.base}/test/grants?human=alice`)).json()) as {
      grantId: string;
      status: string;
    }[];
    for (const grant of grants.filter((g) => g.status === "active"))
      expect((await json(a.base, "/test/revoke", { grant_id: grant.grantId })).status).toBe(200);
    const refused = await execute(b.base, fresh.body.access_token as string);
    expect([refused.status, refused.body.error]).toEqual([403, "grant_revoked"]);
    const again = await post(b.base, "/oauth/token", { grant_type: "client_credentials" });
    expect(again.body.error).toBe("invalid_grant");
  });
});
