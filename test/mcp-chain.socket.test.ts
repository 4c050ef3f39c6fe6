/**
 * The MCP endpoint mounted behind the whole security chain (sessions, CSRF,
 * CORS, rate limit, authorization rules, browser denials), as applications
 * mount the agent endpoints: `/mcp` still answers in MCP's shape (its 401
 * challenge, its 403 for a foreign origin, tool results), never the chain's
 * pages or problem documents, and the chain's CSRF does not stand in the way
 * of a POST that carries a capability token.
 */
import {
  authz,
  cors,
  csrf,
  newHandler,
  nodeServerClientAddress,
  rateLimit,
  securityHeaders,
  sessions,
} from "portcullis";
import { afterAll, describe, expect, it } from "vitest";
import { activeGrant } from "./support/grants.ts";
import { AGENT_ID, AGENT_SECRET, connect, LINES, mcpSite, type Site } from "./support/mcp.ts";

const { match, routes } = authz;
const APP_ORIGIN = "https://app.example.test";
const PRM_PATH = "/.well-known/oauth-protected-resource/mcp";

const sites: Site[] = [];
afterAll(async () => {
  for (const site of sites) await site.close();
});

/** agentAuth and /mcp behind the chain, with the rules an application gives the agent paths. */
async function chained(): Promise<Site> {
  const s = await mcpSite({}, { allowedOrigins: [APP_ORIGIN] }, undefined, (router, agents) =>
    newHandler(router, {
      headers: securityHeaders(),
      cors: cors({
        origin: APP_ORIGIN,
        credentials: true,
        allowedHeaders: [
          "Content-Type",
          "Authorization",
          "X-CSRF-Token",
          "DPoP",
          "Mcp-Protocol-Version",
        ],
        exposedHeaders: ["DPoP-Nonce", "WWW-Authenticate"],
      }),
      clientAddress: nodeServerClientAddress,
      rateLimit: rateLimit({
        rules: [
          { name: "oauth", match: "/oauth/**", limit: 120, windowMs: 60_000 },
          { name: "mcp", match: "/mcp", limit: 240, windowMs: 60_000 },
        ],
      }),
      session: sessions({ secure: false }),
      authentication: [agents.authenticator],
      csrf: csrf({ trustedOrigins: [APP_ORIGIN] }),
      browserDenials: { signInPath: "/login" },
      authorization: routes([
        match("GET", "/.well-known/**").permitAll(),
        match("POST", "/oauth/token").permitAll(),
        match("POST", "/oauth/device_authorization").permitAll(),
        match("POST", "/capability/execute").permitAll(),
        // The endpoint authenticates every request itself.
        match("/mcp").permitAll(),
        match("GET", "/login").permitAll(),
      ]),
    }),
  );
  sites.push(s);
  return s;
}

function post(s: Site, headers: Record<string, string>) {
  return fetch(s.mcpUrl, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-11-25",
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "read_notes", arguments: {} },
    }),
  });
}

/** The JSON-RPC message of an answer: a JSON body, or the one `message` event of an SSE body (2025 era). */
async function message(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream"))
    return JSON.parse(text);
  const data = text.split("\n").find((line) => line.startsWith("data: "));
  return JSON.parse(data?.slice("data: ".length) ?? "null");
}

async function mcpToken(s: Site): Promise<string> {
  const response = await fetch(`${s.base}/oauth/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${btoa(`${AGENT_ID}:${AGENT_SECRET}`)}`,
    },
    body: new URLSearchParams({ grant_type: "client_credentials", resource: s.mcpUrl }).toString(),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

describe("/mcp behind the whole chain", () => {
  it("answers a request without a token with MCP's 401 challenge, even one that asks for HTML", async () => {
    const s = await chained();
    for (const accept of ["application/json, text/event-stream", "text/html"]) {
      const refused = await post(s, { accept });
      expect(refused.status, accept).toBe(401);
      expect(refused.headers.get("www-authenticate"), accept).toMatch(
        new RegExp(`^Bearer resource_metadata="${s.base}${PRM_PATH}", scope="`),
      );
      expect(refused.headers.get("content-type")).toBe("application/json");
      expect(refused.headers.get("location")).toBeNull();
    }
    const prm = await fetch(`${s.base}${PRM_PATH}`);
    expect(prm.status).toBe(200);
    expect(((await prm.json()) as { resource: string }).resource).toBe(s.mcpUrl);
  });

  it("lets a POST with a token and no session cookie through the chain's CSRF", async () => {
    const s = await chained();
    await activeGrant(s.agents.runtime.grants, Date.now(), ["read_notes"]);
    const token = await mcpToken(s);
    const ok = await post(s, { authorization: `Bearer ${token}` });
    expect(ok.status).toBe(200);
    expect(await message(ok)).toMatchObject({
      result: { structuredContent: { notes: ["first"] } },
    });
    // The allowed browser origin, as the chain's CORS and CSRF know it.
    const fromApp = await post(s, { authorization: `Bearer ${token}`, origin: APP_ORIGIN });
    expect(fromApp.status).toBe(200);
    expect(fromApp.headers.get("access-control-allow-origin")).toBe(APP_ORIGIN);
    expect(s.ran).toEqual(["read_notes", "read_notes"]);
    // With the session cookie of a browser on the site, the chain wants its CSRF token, as
    // for any POST that could ride on the session.
    const visit = await fetch(`${s.base}/csrf`);
    const cookie = (visit.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
    const { token: csrfToken } = (await visit.json()) as { token: string };
    const withCookie = await post(s, { authorization: `Bearer ${token}`, cookie });
    expect(withCookie.status).toBe(403);
    expect(s.ran).toHaveLength(2);
    const withBoth = await post(s, {
      authorization: `Bearer ${token}`,
      cookie,
      "x-csrf-token": csrfToken,
    });
    expect(withBoth.status).toBe(200);
    expect(s.ran).toHaveLength(3);
  });

  it("refuses a foreign origin 403 before the handler (the chain's CSRF answers first)", async () => {
    const s = await chained();
    await activeGrant(s.agents.runtime.grants, Date.now(), ["read_notes"]);
    const token = await mcpToken(s);
    const refused = await post(s, {
      authorization: `Bearer ${token}`,
      origin: "https://evil.example",
    });
    // Streamable HTTP asks for 403 and allows any body; the chain's is a problem document.
    expect(refused.status).toBe(403);
    expect(s.ran).toEqual([]);
  });

  for (const line of LINES)
    it(`serves the ${line} client: tools, results, a step-up refusal, through the chain`, async () => {
      const s = await chained();
      await activeGrant(s.agents.runtime.grants, Date.now(), ["read_notes", "add_note", "fail"]);
      const client = await connect(line, s.base, s.mcpUrl);
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual([
        "add_note",
        "count_notes",
        "fail",
        "read_notes",
      ]);
      const added = await client.callTool({ name: "add_note", arguments: { text: "chain" } });
      expect(added.structuredContent).toEqual({ count: 2 });
      const failed = await client.callTool({ name: "fail", arguments: {} });
      expect(failed.isError).toBe(true);
      await expect(client.callTool({ name: "count_notes", arguments: {} })).rejects.toThrow(/403/);
      await client.close();
      expect(s.ran).toEqual(["add_note:chain", "fail"]);
    });
});
