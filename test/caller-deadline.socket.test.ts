/**
 * Every agent-store call the library makes starts within its caller's
 * deadline (`callerDeadline()` is set as the store's method is entered):
 * a shared store then has its server refuse the work once the caller has
 * given up. A call started after an `await` inside a caller's operation
 * would lose that deadline and fall back to the store's own limit, which may
 * end after the caller has answered 503. The stores here are memory stores
 * seen through a wrapper, so the library times them as it would Redis.
 */
import * as oauth from "oauth4webapi";
import {
  MemoryGrantStore,
  MemoryPendingRequestStore,
  MemoryReplayStore,
} from "portcullis/agentauth";
import {
  MemoryAuthorizationCodeStore,
  MemoryDeviceCodeStore,
  MemoryRefreshTokenStore,
} from "portcullis/oauth2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerDeadline } from "../src/core/deadline.ts";
import { MemoryLoginAttemptStore } from "../src/core/login-attempt-store.ts";
import { type CodeSite, codeSite, refreshRequest, tokensFor } from "./support/code-flow.ts";
import { AGENT_ID, AGENT_SECRET, approveAs, postMcp } from "./support/mcp.ts";

const calls: { store: string; method: string; deadline: number | undefined }[] = [];

/** `store` as the library sees a shared one (not a built-in memory store), recording each call. */
function watched<T extends object>(name: string, store: T): T {
  return new Proxy(store, {
    getPrototypeOf: () => Object.prototype,
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push({ store: name, method: String(property), deadline: callerDeadline() });
        return value.apply(target, args);
      };
    },
  });
}

let site: CodeSite;
beforeAll(async () => {
  site = await codeSite({
    stores: {
      grants: watched("grants", new MemoryGrantStore()),
      replay: watched("replay", new MemoryReplayStore()),
      pending: watched("pending", new MemoryPendingRequestStore()),
      deviceCodes: watched("deviceCodes", new MemoryDeviceCodeStore()),
      userCodeAttempts: watched("userCodeAttempts", new MemoryLoginAttemptStore()),
      authorizationCodes: watched("authorizationCodes", new MemoryAuthorizationCodeStore()),
      refreshTokens: watched("refreshTokens", new MemoryRefreshTokenStore()),
    },
  });
});
afterAll(async () => {
  await site?.close();
});

const agent = { authorization: `Basic ${btoa(`${AGENT_ID}:${AGENT_SECRET}`)}` };

async function form(path: string, body: Record<string, string>) {
  const response = await fetch(`${site.base}${path}`, {
    method: "POST",
    headers: { ...agent, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(body).toString(),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function execute(token: string): Promise<number> {
  const response = await fetch(`${site.base}/capability/execute`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ capability: "read_notes" }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function callTool(token: string): Promise<number> {
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "read_notes", arguments: {} },
  });
  const response = await postMcp(site, token, "2025-11-25", body);
  await response.arrayBuffer();
  return response.status;
}

describe("store calls and their caller's deadline", () => {
  it("starts every call of the device flow, the code flow, refreshes, tool calls and revocation within one", async () => {
    // The device flow, then a fresh token for the approved grant, used.
    const begun = await form("/oauth/device_authorization", { scope: "read_notes" });
    expect(begun.status).toBe(200);
    await approveAs(site.agents, begun.body.user_code as string);
    const polled = await form("/oauth/token", {
      grant_type: "urn:ietf:params:oauth:grant-type:device_code",
      device_code: begun.body.device_code as string,
    });
    expect(polled.status).toBe(200);
    expect(await execute(polled.body.access_token as string)).toBe(200);
    const fresh = await form("/oauth/token", { grant_type: "client_credentials" });
    expect(fresh.status).toBe(200);
    expect(await execute(fresh.body.access_token as string)).toBe(200);

    // The authorization-code flow, a refresh, and the grant revoked.
    const tokens = await tokensFor(site, { scope: "read_notes" });
    const refreshed = await refreshRequest(site, tokens.refresh_token as string);
    const body = await oauth.processRefreshTokenResponse(
      site.as,
      { client_id: "desktop-client" },
      refreshed,
    );
    expect(await callTool(body.access_token)).toBe(200);
    const grantId = JSON.parse(atob(body.access_token.split(".")[1] as string)).grant_id;
    await site.agents.revoke(grantId);

    const stores = new Set(calls.map((call) => call.store));
    expect(stores).toEqual(
      new Set([
        "grants",
        "replay",
        "pending",
        "deviceCodes",
        "userCodeAttempts",
        "authorizationCodes",
        "refreshTokens",
      ]),
    );
    const without = calls.filter((call) => call.deadline === undefined);
    expect(without.map((call) => `${call.store}.${call.method}`)).toEqual([]);
  });
});
