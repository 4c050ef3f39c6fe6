/**
 * agentAuth checks its options once, where the user called it: every error
 * names the key the user wrote (`agentAuth: tokenTtlSeconds ...`), never an
 * option of a piece it builds inside (`capabilityTokens: ttlSeconds ...`).
 */
import { describe, expect, it } from "vitest";
import { agentAuth } from "../src/agentauth/index.ts";
import { InvalidOptionsError } from "../src/core/index.ts";
import { generateKeySet } from "../src/jwt/index.ts";
import { MemoryClientStore } from "../src/oauth2/index.ts";

const keys = await generateKeySet();
const base = {
  issuer: "https://agents.example",
  capabilities: [{ name: "ping", description: "Answers pong.", handler: () => "pong" }],
  clients: new MemoryClientStore(),
  keys,
};

async function refusal(bad: Record<string, unknown>): Promise<string> {
  const error = await agentAuth({ ...base, ...bad } as never).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error, JSON.stringify(bad)).toBeInstanceOf(InvalidOptionsError);
  return (error as Error).message;
}

describe("agentAuth option errors", () => {
  it.each([
    [{ tokenTtlSeconds: 0 }, "agentAuth: tokenTtlSeconds"],
    [{ tokenTtlSeconds: 3601 }, "agentAuth: tokenTtlSeconds"],
    [{ deviceCodeLifetimeSeconds: 0 }, "agentAuth: deviceCodeLifetimeSeconds"],
    [{ pollIntervalSeconds: 301 }, "agentAuth: pollIntervalSeconds"],
    [{ storeTimeoutMs: 120_000 }, "agentAuth: storeTimeoutMs"],
    [{ maxBodyBytes: 10 }, "agentAuth: maxBodyBytes"],
    [{ approvalResponse: "page" }, "agentAuth: approvalResponse"],
    [{ issuer: "https://agents.example/?tenant=1" }, "agentAuth: issuer"],
    [{ clients: {} }, "agentAuth: clients"],
    [{ keys: {} }, "agentAuth: keys"],
    [{ paths: { token: "oauth/token" } }, "agentAuth: paths.token"],
    [{ stores: { deviceCodes: {} } }, "agentAuth: stores.deviceCodes"],
    [{ stores: { userCodeAttempts: {} } }, "agentAuth: stores.userCodeAttempts"],
  ])("%j fails naming %s", async (bad, named) => {
    const message = await refusal(bad);
    expect(message.startsWith(named), message).toBe(true);
  });

  it("refuses a malformed path of its own endpoints", async () => {
    expect(await refusal({ paths: { discovery: "agent-configuration" } })).toMatch(
      /^agentAuth: paths\.discovery /,
    );
  });

  it("refuses two endpoints on one path, which would hide one of them", async () => {
    expect(await refusal({ paths: { execute: "/oauth/token" } })).toMatch(
      /^agentAuth: two endpoints share a path/,
    );
  });

  it("refuses an endpoint on the path of the execute URL's resource metadata", async () => {
    expect(
      await refusal({
        paths: {
          execute: "/run",
          capabilities: "/.well-known/oauth-protected-resource/run",
        },
      }),
    ).toMatch(/^agentAuth: paths\.capabilities is where the execute URL's resource metadata/);
  });

  it("still builds with every option at its edge", async () => {
    const agents = await agentAuth({
      ...base,
      tokenTtlSeconds: 3600,
      deviceCodeLifetimeSeconds: 86_400,
      pollIntervalSeconds: 300,
      storeTimeoutMs: 60_000,
      maxBodyBytes: 256,
      grantTtlSeconds: 60,
    });
    expect(agents.runtime.tokens.ttlSeconds).toBe(3600);
    expect(agents.service.intervalSeconds).toBe(300);
  });
});
