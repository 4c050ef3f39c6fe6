/**
 * The agents quick start's own file (examples/agents-quickstart/server.ts), run as the guide
 * runs it, reached by the MCP SDKs' stock clients: both lines' `ClientCredentialsProvider` once
 * alice approved the agent by device flow, and both lines' `auth()` (dynamic registration,
 * authorization code with PKCE) through the sign-in and the consent page in Chromium, ended by
 * Revoke on the "agents you approved" page.
 */
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
  UnauthorizedError as ModernUnauthorized,
  type OAuthClientInformationFull,
  type OAuthClientMetadata,
  type OAuthTokens,
} from "@modelcontextprotocol/client";
import { UnauthorizedError as LegacyUnauthorized } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import * as oidc from "openid-client";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "./browser.ts";
import { freePort } from "./processes.ts";
import { type Child, start } from "./support/agents-quickstart.ts";
import { connect, LINES } from "./support/mcp.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PASSWORD = "a-local-password";
const KEY = "0123456789abcdef0123456789abcdef";

let browser: Browser;
let server: Child;
let base: string;
const listeners: Server[] = [];

beforeAll(async () => {
  browser = await launchChromium();
  const port = await freePort();
  server = start(ROOT, ["--conditions=source"], "examples/agents-quickstart/server.ts", {
    ...process.env,
    PORT: String(port),
    ALICE_PASSWORD: PASSWORD,
    RESEARCH_KEY: KEY,
  });
  await server.waitFor(/agents quick start on http/, 30_000);
  base = `http://127.0.0.1:${port}`;
}, 60_000);

afterAll(async () => {
  server?.process.kill();
  for (const listener of listeners) listener.close();
  await browser?.close();
});

/** A signed-in person in a browser of their own: alice, as the guide has her. */
async function alice(): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${base}/login`);
  await page.getByLabel("Username").fill("alice");
  await page.getByLabel("Password").fill(PASSWORD);
  await Promise.all([
    page.waitForNavigation(),
    page.getByRole("button", { name: "Sign in" }).click(),
  ]);
  return page;
}

/** Presses a button and waits for the page it leads to. */
async function press(page: Page, name: string, scope = page.locator("body")) {
  await Promise.all([page.waitForNavigation(), scope.getByRole("button", { name }).click()]);
}

describe("the agents quick start, reached by the MCP SDKs' stock client-credentials clients", () => {
  it("both lines list the tools at /mcp and call them once alice approved the agent by device flow", async () => {
    // The agent asks as the guide's agent does (openid-client), and alice approves in Chromium.
    const oauth = await oidc.discovery(
      new URL(base),
      "key_research",
      undefined,
      oidc.ClientSecretBasic(KEY),
      { algorithm: "oauth2", execute: [oidc.allowInsecureRequests] },
    );
    const asked = await oidc.initiateDeviceAuthorization(oauth, { scope: "list_notes add_note" });
    const page = await alice();
    await page.goto(asked.verification_uri_complete as string);
    await press(page, "Review");
    await expect(page.locator("h1").textContent()).resolves.toBe("Research agent asks for");
    await press(page, "Approve");
    await oidc.pollDeviceAuthorizationGrant(oauth, asked);

    for (const line of LINES) {
      const client = await connect(line, base, `${base}/mcp`, { id: "key_research", secret: KEY });
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(["add_note", "list_notes"]);
      const added = await client.callTool({
        name: "add_note",
        arguments: { text: `from ${line}` },
      });
      expect(added.isError).not.toBe(true);
      const listed = JSON.stringify(await client.callTool({ name: "list_notes" }));
      expect(listed).toContain(`key_research: from ${line}`);
      await client.close();
    }
  }, 120_000);
});

describe("npm run mcp-agent against the agents quick start", () => {
  it("has alice approve it by device flow, then lists the tools and calls one with the SDK's stock client", async () => {
    const agent = start(
      ROOT,
      ["--conditions=source"],
      "examples/agent/mcp-agent.ts",
      {
        ...process.env,
        PORTCULLIS_URL: base,
        PORTCULLIS_AGENT_ID: "key_research",
        PORTCULLIS_AGENT_SECRET: KEY,
      },
      ["add_note", '{"text":"from mcp-agent"}'],
    );
    try {
      const [, url] = await agent.waitFor(/open (http\S+)/, 30_000);
      const page = await alice();
      await page.goto(url as string);
      await press(page, "Review");
      await press(page, "Approve");
      await expect(agent.exited).resolves.toBe(0);
      expect(agent.output()).toContain("tools: add_note, list_notes");
      expect(agent.output()).toMatch(/add_note → \{"count":\d+\}/);
    } finally {
      agent.process.kill();
    }
  }, 120_000);
});

/** The client's loopback listener for the redirect back, on a free port. */
async function callbackListener() {
  const arrived: URLSearchParams[] = [];
  const listener = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/callback") arrived.push(url.searchParams);
    response.writeHead(200, { "content-type": "text/plain" }).end("back in the client");
  });
  listener.listen(0, "127.0.0.1");
  await once(listener, "listening");
  listeners.push(listener);
  return {
    redirectUrl: `http://127.0.0.1:${(listener.address() as AddressInfo).port}/callback`,
    arrived,
  };
}

/** An OAuthClientProvider as a desktop client writes one: it registers itself (RFC 7591). */
class DesktopProvider {
  registered: OAuthClientInformationFull | undefined;
  saved: OAuthTokens[] = [];
  authorizationUrl: URL | undefined;
  #verifier = "";
  constructor(
    readonly redirectUrl: string,
    readonly name: string,
  ) {}
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.registered;
  }
  saveClientInformation(info: OAuthClientInformationFull) {
    this.registered = info;
  }
  tokens() {
    return this.saved.at(-1);
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved.push(tokens);
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    return this.#verifier;
  }
}

interface McpClient {
  listTools(): Promise<{ tools: { name: string }[] }>;
  callTool(request: { name: string; arguments?: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

/** Each SDK line's `auth()` flow as its documentation shows it. */
const CODE_LINES = [
  {
    line: "@modelcontextprotocol/client 2.4",
    async connect(
      endpoint: URL,
      provider: DesktopProvider,
      consent: () => Promise<URLSearchParams>,
    ) {
      const client = new ModernClient({ name: "quickstart-desktop", version: "1.0.0" });
      const first = new ModernTransport(endpoint, { authProvider: provider });
      await expect(client.connect(first)).rejects.toBeInstanceOf(ModernUnauthorized);
      await first.finishAuth(await consent());
      await client.connect(new ModernTransport(endpoint, { authProvider: provider }));
      return client as unknown as McpClient;
    },
  },
  {
    line: "@modelcontextprotocol/sdk 1.32",
    async connect(
      endpoint: URL,
      provider: DesktopProvider,
      consent: () => Promise<URLSearchParams>,
    ) {
      const client = new LegacyClient({ name: "quickstart-desktop", version: "1.0.0" });
      const first = new LegacyTransport(endpoint, { authProvider: provider });
      await expect(client.connect(first)).rejects.toBeInstanceOf(LegacyUnauthorized);
      await first.finishAuth((await consent()).get("code") as string);
      await client.connect(new LegacyTransport(endpoint, { authProvider: provider }));
      return client as unknown as McpClient;
    },
  },
];

describe.each(CODE_LINES)(
  "the agents quick start, reached by $line's auth()",
  ({ line, connect }) => {
    it("registers, signs alice in, shows the consent, and is ended by Revoke on /agents", async () => {
      const endpoint = new URL("/mcp", base);
      const { redirectUrl, arrived } = await callbackListener();
      const provider = new DesktopProvider(redirectUrl, `Desk (${line})`);
      const page = await (await browser.newContext()).newPage();

      const client = await connect(endpoint, provider, async () => {
        const url = provider.authorizationUrl as URL;
        expect(`${url.origin}${url.pathname}`).toBe(`${base}/oauth/authorize`);
        expect(provider.registered?.client_id).toMatch(/^dyn:/);
        // Not signed in: the sign-in form, then back to the consent page.
        await page.goto(url.href);
        expect(new URL(page.url()).pathname).toBe("/login");
        await page.getByLabel("Username").fill("alice");
        await page.getByLabel("Password").fill(PASSWORD);
        await press(page, "Sign in");
        await expect(page.locator("h1").textContent()).resolves.toBe(
          `"Desk (${line})" (back to ${new URL(redirectUrl).host}) asks for`,
        );
        await expect(page.locator("li").allTextContents()).resolves.toEqual([
          "add_note: Adds a note.",
          "list_notes: Lists the notes.",
        ]);
        await Promise.all([
          page.waitForURL((at) => at.href.startsWith(redirectUrl)),
          page.getByRole("button", { name: "Approve" }).click(),
        ]);
        const answer = arrived.shift() as URLSearchParams;
        expect(answer.get("iss")).toBe(base);
        return answer;
      });
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(["add_note", "list_notes"]);
      await expect(client.callTool({ name: "list_notes" })).resolves.not.toHaveProperty(
        "isError",
        true,
      );
      const tokens = provider.saved.at(-1) as OAuthTokens;
      expect(tokens.refresh_token).toEqual(expect.any(String));

      // The page of what alice approved lists the client, with Revoke; pressing it ends its access.
      const clientId = provider.registered?.client_id as string;
      await page.goto(`${base}/agents`);
      const row = page.locator("li", { hasText: clientId });
      await expect(row.textContent()).resolves.toContain("add_note, list_notes (active)");
      await press(page, "Revoke", row);
      await expect(row.textContent()).resolves.toContain("(revoked)");

      // The access token in hand is refused at the next request, and so is its refresh token.
      const call = await fetch(endpoint, {
        method: "POST",
        headers: {
          authorization: `Bearer ${tokens.access_token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(call.status).toBe(401);
      const refreshed = await fetch(`${base}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "refresh_token",
          refresh_token: tokens.refresh_token as string,
          client_id: clientId,
        }),
      });
      expect(refreshed.status).toBe(400);
      await expect(refreshed.json()).resolves.toMatchObject({ error: "invalid_grant" });
      // The client's own next call is refused too.
      await expect(client.callTool({ name: "list_notes" })).rejects.toThrow();
      await client.close();
    }, 120_000);
  },
);
