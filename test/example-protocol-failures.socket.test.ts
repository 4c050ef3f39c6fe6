/**
 * The example as it is mounted (the chain holds `agents.authenticator` and
 * `basicAuth`), over a real socket: every failure at a protocol endpoint is
 * answered in that protocol's shape, and a known client id with a wrong
 * secret cannot be told from an unknown one, by status, headers or work done.
 */
import {
  discoverOAuthProtectedResourceMetadata,
  extractResourceMetadataUrl,
} from "@modelcontextprotocol/sdk/client/auth.js";
import * as oidc from "openid-client";
import { type PasswordEncoder, ScryptPasswordEncoder } from "portcullis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { demoAgents } from "../examples/hono/agents.ts";
import { createExampleHandler } from "../examples/hono/app.ts";
import { basicHeader } from "./helpers.ts";
import { discover } from "./oauth-helpers.ts";
import { type Served, serveFetch } from "./serve.ts";

const AGENT = demoAgents()[0];
const KNOWN_WRONG = { id: AGENT.id, secret: "not-the-right-secret-at-all" };
const UNKNOWN = { id: "no-such-agent", secret: "not-the-right-secret-at-all" };
const MALFORMED = "Basic %%%not-base64%%%";

let served: Served;
let base: string;
let verifications = 0;

beforeAll(async () => {
  const scrypt = new ScryptPasswordEncoder({ logN: 10 });
  // Counts password checks: the deterministic measure of the work a request costs.
  const counting: PasswordEncoder = {
    hash: (password) => scrypt.hash(password),
    verify: (password, encoded) => {
      verifications++;
      return scrypt.verify(password, encoded);
    },
    needsRehash: (encoded) => scrypt.needsRehash(encoded),
  };
  let handler: ((request: Request) => Promise<Response>) | undefined;
  served = await serveFetch((request) => (handler as (r: Request) => Promise<Response>)(request));
  base = served.url;
  handler = await createExampleHandler({
    issuer: base,
    passwordEncoder: counting,
    pollIntervalSeconds: 1,
  });
}, 60_000);

afterAll(() => served?.close());

function basic(credentials: { id: string; secret: string }): string {
  return basicHeader(credentials.id, credentials.secret);
}

/** Status, the headers a client could tell apart, the body, and the password checks spent. */
async function observe(path: string, authorization: string, init: RequestInit = {}) {
  const before = verifications;
  const digest = vi.spyOn(crypto.subtle, "digest");
  try {
    const response = await fetch(`${base}${path}`, {
      ...init,
      headers: { ...(init.headers as Record<string, string>), authorization },
    });
    return {
      status: response.status,
      contentType: response.headers.get("content-type"),
      challenge: response.headers.get("www-authenticate"),
      body: await response.text(),
      passwordChecks: verifications - before,
      secretHashes: digest.mock.calls.length,
    };
  } finally {
    digest.mockRestore();
  }
}

const form = {
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
};

async function refusedByOpenidClient(
  credentials: { id: string; secret: string },
  call: (config: oidc.Configuration) => Promise<unknown>,
) {
  const config = await discover(base, credentials.id, credentials.secret, "basic");
  const error = await call(config).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(oidc.WWWAuthenticateChallengeError);
  const refused = error as oidc.WWWAuthenticateChallengeError;
  return {
    status: refused.status,
    challenges: refused.cause,
    body: (await refused.response.json()) as Record<string, unknown>,
  };
}

describe("the example's OAuth endpoints, as openid-client sees them", () => {
  it.each([
    ["device authorization", (c: oidc.Configuration) => oidc.initiateDeviceAuthorization(c, {})],
    ["token (client_credentials)", (c: oidc.Configuration) => oidc.clientCredentialsGrant(c)],
  ])(
    "%s: a wrong secret and an unknown client both get RFC 6749 invalid_client",
    async (_, call) => {
      const wrong = await refusedByOpenidClient(KNOWN_WRONG, call);
      const unknown = await refusedByOpenidClient(UNKNOWN, call);
      expect(wrong.status).toBe(401);
      expect(wrong.body).toMatchObject({ error: "invalid_client" });
      expect(wrong.challenges).toEqual([
        expect.objectContaining({
          scheme: "basic",
          parameters: expect.objectContaining({ realm: "oauth" }),
        }),
      ]);
      expect(unknown).toEqual(wrong);
    },
  );

  it("still serves the demo agent with its right secret", async () => {
    const config = await discover(base, AGENT.id, AGENT.secret, "basic");
    const started = await oidc.initiateDeviceAuthorization(config, { scope: "get_time" });
    expect(started.user_code).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
  });
});

describe("known and unknown client ids cannot be told apart", () => {
  it.each([
    ["/oauth/device_authorization", "scope=get_time"],
    ["/oauth/token", "grant_type=client_credentials"],
  ])("at %s: same answer, no password check, one secret hash each", async (path, body) => {
    const wrong = await observe(path, basic(KNOWN_WRONG), { ...form, body });
    const unknown = await observe(path, basic(UNKNOWN), { ...form, body });
    const malformed = await observe(path, MALFORMED, { ...form, body });
    expect(wrong.status).toBe(401);
    expect(wrong.contentType).toBe("application/json");
    expect(JSON.parse(wrong.body)).toMatchObject({ error: "invalid_client" });
    expect(wrong.challenge).toBe('Basic realm="oauth", charset="UTF-8"');
    expect(wrong.passwordChecks).toBe(0);
    expect(unknown).toEqual(wrong);
    expect(malformed.status).toBe(401);
    expect(JSON.parse(malformed.body)).toMatchObject({ error: "invalid_client" });
    expect(malformed.contentType).toBe("application/json");
  });

  it("on a page of the app: the same 401 and challenge, one password check each", async () => {
    const wrong = await observe("/", basic(KNOWN_WRONG));
    const unknown = await observe("/", basic(UNKNOWN));
    expect(wrong.status).toBe(401);
    expect(wrong.passwordChecks).toBe(1);
    expect(unknown).toEqual(wrong);
  });
});

describe("the example's agent endpoints answer in the agent shape", () => {
  it.each([
    ["a wrong secret", basic(KNOWN_WRONG)],
    ["an unknown client", basic(UNKNOWN)],
    ["malformed Basic", MALFORMED],
    ["a human's Basic", basicHeader("alice", "wrong-password")],
  ])("GET /capability/list with %s: 401 {error, message}", async (_, authorization) => {
    const answer = await observe("/capability/list", authorization);
    expect(answer.status).toBe(401);
    expect(answer.contentType).toBe("application/json");
    expect(answer.challenge).toMatch(/^AgentAuth discovery="/);
    const body = JSON.parse(answer.body) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["error", "message"]);
    expect(body.error).toBe("authentication_required");
    expect(answer.passwordChecks).toBe(0);
  });

  it("GET /capability/list: the same answer for a wrong secret and an unknown client", async () => {
    expect(await observe("/capability/list", basic(UNKNOWN))).toEqual(
      await observe("/capability/list", basic(KNOWN_WRONG)),
    );
  });

  it("GET /capability/list with the agent's right secret lists the capabilities", async () => {
    const response = await fetch(`${base}/capability/list`, {
      headers: { authorization: basic({ id: AGENT.id, secret: AGENT.secret }) },
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { capabilities: { name: string }[] };
    expect(body.capabilities.map((c) => c.name)).toContain("get_time");
  });

  it.each([
    ["a wrong secret", basic(KNOWN_WRONG)],
    ["an unknown client", basic(UNKNOWN)],
    ["malformed Basic", MALFORMED],
    ["the agent's right secret", basic({ id: AGENT.id, secret: AGENT.secret })],
  ])("POST /capability/execute with %s: 401 authentication_required", async (_, authorization) => {
    const answer = await observe("/capability/execute", authorization, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ capability: "get_time", arguments: {} }),
    });
    expect(answer.status).toBe(401);
    expect(answer.contentType).toBe("application/json");
    expect(JSON.parse(answer.body)).toMatchObject({ error: "authentication_required" });
    expect(answer.passwordChecks).toBe(0);
  });
});

describe("discovery probing the example", () => {
  it.each(["/.well-known/openid-configuration", "/.well-known/oauth-protected-resource"])(
    "GET %s answers 404 with no challenge",
    async (path) => {
      const response = await fetch(`${base}${path}`);
      expect(response.status).toBe(404);
      expect(response.headers.get("www-authenticate")).toBeNull();
    },
  );

  it("still serves the documents that exist", async () => {
    for (const path of [
      "/.well-known/agent-configuration",
      "/.well-known/oauth-authorization-server",
      "/.well-known/jwks.json",
      "/.well-known/oauth-protected-resource/capability/execute",
    ])
      expect((await fetch(`${base}${path}`)).status, path).toBe(200);
  });

  it("lets the MCP SDK discover the execute URL's metadata from execute's own 401", async () => {
    const refused = await fetch(`${base}/capability/execute`, { method: "POST" });
    expect(refused.status).toBe(401);
    const pointer = extractResourceMetadataUrl(refused);
    expect(pointer?.href).toBe(`${base}/.well-known/oauth-protected-resource/capability/execute`);
    const metadata = await discoverOAuthProtectedResourceMetadata(`${base}/capability/execute`, {
      resourceMetadataUrl: pointer as URL,
    });
    expect(metadata.resource).toBe(`${base}/capability/execute`);
    expect(metadata.authorization_servers).toEqual([base]);
  });
});
