/**
 * MCP clients that sign in by authorization code, against the example app
 * over a real socket: the MCP SDK's own client and `auth()` flow (both lines),
 * Debian's Chromium signing in and answering the consent page, refresh after
 * the access token expired, revocation on /agents; and the consent page's
 * defences (CSRF, framing, a hostile client name, a stale sign-in, a denial,
 * the Content Security Policy that holds when a page forgets to escape).
 */
import type { ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
  UnauthorizedError as ModernUnauthorized,
  type OAuthClientMetadata,
  type OAuthTokens,
} from "@modelcontextprotocol/client";
import { UnauthorizedError as LegacyUnauthorized } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { ScryptPasswordEncoder } from "portcullis";
import { clientMetadataDocuments } from "portcullis/oauth2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createExampleHandler, type ExampleOptions } from "../examples/hono/app.ts";
import { launchChromium } from "./browser.ts";
import { type Served, serveFetch } from "./serve.ts";
import { authorizeUrl, codeSite, pkce, XSS_CLIENT, XSS_NAME } from "./support/code-flow.ts";
import { runExampleScript } from "./support/example-script.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const ARTIFACTS = `${ROOT}test-artifacts`;

let browser: Browser;
const servers: Served[] = [];
const listeners: Server[] = [];
const contexts: BrowserContext[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  for (const child of children) child.kill();
  for (const context of contexts) await context.close();
  await browser?.close();
  for (const listener of listeners) listener.close();
  for (const served of servers) await served.close();
});

/** The example on a free port; `clock.skew` moves its clock (the agent parts and its checks). */
async function example(options: ExampleOptions = {}) {
  const clock = { skew: 0 };
  let handler: ((request: Request) => Promise<Response>) | undefined;
  const served = await serveFetch((request) =>
    (handler as (r: Request) => Promise<Response>)(request),
  );
  handler = await createExampleHandler({
    issuer: served.url,
    passwordEncoder: new ScryptPasswordEncoder({ logN: 10 }),
    now: () => Date.now() + clock.skew,
    ...options,
  });
  servers.push(served);
  return { base: served.url, clock };
}

/** The client's loopback listener for the redirect back, on a free port. */
async function callbackListener() {
  const arrived: URLSearchParams[] = [];
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/callback") arrived.push(url.searchParams);
    response.writeHead(200, { "content-type": "text/plain" }).end("back in the client");
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  listeners.push(server);
  return {
    redirectUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    arrived,
  };
}

async function newPage(): Promise<Page> {
  const context = await browser.newContext();
  contexts.push(context);
  return context.newPage();
}

async function signInIfAsked(page: Page, username = "alice", password = "demo-alice") {
  if (new URL(page.url()).pathname !== "/login") return;
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(password);
  await Promise.all([
    page.waitForNavigation(),
    page.getByRole("button", { name: "Sign in" }).click(),
  ]);
}

/** The person's part: sign in if asked, read the consent page, press a button, land back in the client. */
async function answerConsent(
  page: Page,
  authorizationUrl: URL,
  redirectUrl: string,
  button: "Approve" | "Deny" = "Approve",
) {
  await page.goto(authorizationUrl.href);
  await signInIfAsked(page);
  await expect(page.locator("h1").textContent()).resolves.toBe("Approve a client");
  await Promise.all([
    page.waitForURL((url) => url.href.startsWith(redirectUrl)),
    page.getByRole("button", { name: button }).click(),
  ]);
}

/** An OAuthClientProvider of the SDKs' shape: the registered public client `demo-desktop`. */
class DesktopProvider {
  saved: OAuthTokens[] = [];
  authorizationUrl: URL | undefined;
  #verifier = "";
  constructor(readonly redirectUrl: string) {}
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Demo desktop client",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return { client_id: "demo-desktop" };
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
  callTool(request: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

/** The two SDK lines, each used as its documentation shows. */
const LINES = [
  {
    line: "@modelcontextprotocol/client 2.4",
    async connect(
      endpoint: URL,
      provider: DesktopProvider,
      consent: () => Promise<URLSearchParams>,
    ) {
      const client = new ModernClient({ name: "desktop-test", version: "1.0.0" });
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
      const client = new LegacyClient({ name: "desktop-test", version: "1.0.0" });
      const first = new LegacyTransport(endpoint, { authProvider: provider });
      await expect(client.connect(first)).rejects.toBeInstanceOf(LegacyUnauthorized);
      await first.finishAuth((await consent()).get("code") as string);
      await client.connect(new LegacyTransport(endpoint, { authProvider: provider }));
      return client as unknown as McpClient;
    },
  },
];

describe.each(LINES)("$line signs in by authorization code with PKCE", ({ connect }) => {
  it("connects through sign-in and consent, lists and calls, refreshes after expiry, and is ended by Revoke on /agents", async () => {
    const { base, clock } = await example({ tokenTtlSeconds: 1 });
    const endpoint = new URL("/mcp", base);
    const { redirectUrl, arrived } = await callbackListener();
    const provider = new DesktopProvider(redirectUrl);
    const page = await newPage();

    const client = await connect(endpoint, provider, async () => {
      const url = provider.authorizationUrl as URL;
      // The SDK's own discovery found the endpoint and asked with PKCE S256 and the resource.
      expect(`${url.origin}${url.pathname}`).toBe(`${base}/oauth/authorize`);
      expect(url.searchParams.get("code_challenge_method")).toBe("S256");
      expect(url.searchParams.get("resource")).toBe(endpoint.href);
      await answerConsent(page, url, redirectUrl);
      const answer = arrived.shift() as URLSearchParams;
      expect(answer.get("iss")).toBe(base);
      expect(answer.get("state")).toBe(url.searchParams.get("state"));
      return answer;
    });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["echo", "get_time"]);
    await expect(client.callTool({ name: "echo", arguments: { text: "hi" } })).resolves.toEqual(
      expect.objectContaining({ structuredContent: { text: "hi" } }),
    );
    expect(provider.saved).toHaveLength(1);
    const first = provider.saved[0] as OAuthTokens;
    expect(first.refresh_token).toEqual(expect.any(String));

    // The access token expires (1 s, plus the verifier's tolerance): the SDK refreshes by itself.
    clock.skew += 10_000;
    await expect(client.callTool({ name: "echo", arguments: { text: "again" } })).resolves.toEqual(
      expect.objectContaining({ structuredContent: { text: "again" } }),
    );
    expect(provider.saved).toHaveLength(2);
    const second = provider.saved[1] as OAuthTokens;
    expect(second.access_token).not.toBe(first.access_token);
    expect(second.refresh_token).not.toBe(first.refresh_token);

    // The person's list shows the client by name, with Revoke; pressing it ends everything.
    await page.goto(`${base}/agents`);
    const row = page.locator("tbody tr", { hasText: "demo-desktop" });
    await expect(row.count()).resolves.toBe(1);
    await expect(row.locator("td").first().textContent()).resolves.toContain("Demo desktop client");
    await expect(row.locator("td").nth(1).textContent()).resolves.toBe("echo, get_time");
    await expect(row.locator("td").nth(3).textContent()).resolves.not.toBe("not yet");
    await Promise.all([
      page.waitForNavigation(),
      row.getByRole("button", { name: "Revoke" }).click(),
    ]);
    await expect(row.locator("td").nth(6).textContent()).resolves.toBe("revoked");

    // The access token still in hand is refused at the next request...
    const call = await fetch(endpoint, {
      method: "POST",
      headers: {
        authorization: `Bearer ${second.access_token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(call.status).toBe(401);
    // ...the refresh token is refused...
    const refresh = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: second.refresh_token as string,
        client_id: "demo-desktop",
        resource: endpoint.href,
      }),
    });
    expect(refresh.status).toBe(400);
    await expect(refresh.json()).resolves.toMatchObject({ error: "invalid_grant" });
    // ...and the SDK, its refresh refused, needs a person again.
    provider.authorizationUrl = undefined;
    await expect(client.callTool({ name: "get_time", arguments: {} })).rejects.toThrow();
    expect(provider.saved).toHaveLength(2);
    expect(provider.authorizationUrl).toBeDefined();
    await client.close();
  });
});

/** An authorization request as a client makes one, with its PKCE pair. */
function authorizationRequest(base: string, redirectUrl: string, clientId = "demo-desktop") {
  const verifier = randomBytes(32).toString("base64url");
  const url = new URL("/oauth/authorize", base);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: redirectUrl,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    resource: `${base}/mcp`,
    state: randomBytes(8).toString("base64url"),
  }).toString();
  return url;
}

describe("the example's consent page", () => {
  it("refuses an answer posted without the CSRF token, and never frames", async () => {
    const { base } = await example();
    const { redirectUrl, arrived } = await callbackListener();
    const page = await newPage();
    await page.goto(authorizationRequest(base, redirectUrl).href);
    await signInIfAsked(page);
    const shown = await page.goto(page.url());
    const headers = shown?.headers() ?? {};
    expect(headers["x-frame-options"]).toBe("DENY");
    const policy = headers["content-security-policy"];
    expect(policy).toMatch(/frame-ancestors 'none'/);
    // The whole policy of every other page, not just its framing rule.
    for (const rule of ["script-src 'self'", "object-src 'none'", "base-uri 'self'"])
      expect(policy).toContain(rule);
    expect(policy).toContain(`form-action 'self' ${new URL(redirectUrl).origin}`);
    const consent = await page.locator('input[name="consent"]').inputValue();
    const forged = await page.request.post(`${base}/oauth/authorize`, {
      form: { consent, action: "approve" },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    expect(arrived).toHaveLength(0);

    // Framed by another origin of the same site (so the session cookie goes along), Chromium
    // shows nothing of it.
    const framing = await serveFetch(
      async () =>
        new Response(`<!doctype html><iframe id="f" src="${page.url()}"></iframe>`, {
          headers: { "content-type": "text/html" },
        }),
    );
    servers.push(framing);
    const attacker = await page.context().newPage();
    await attacker.goto(framing.url);
    await attacker.waitForTimeout(500);
    const frame = attacker.frames().find((f) => f !== attacker.mainFrame());
    const framed = frame === undefined ? "" : await frame.content().catch(() => "");
    expect(frame?.url()).toMatch(/^chrome-error:/);
    expect(framed).not.toContain("Approve a client");
    // The page itself still answers, with its own form and token.
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(redirectUrl)),
      page.getByRole("button", { name: "Approve" }).click(),
    ]);
    expect(arrived.shift()?.get("code")).toEqual(expect.any(String));
  });

  it("shows a hostile client name as text, as the client's claim, beside its redirect host", async () => {
    const name = `<img src=x onerror="document.title='owned'"><script>document.title='owned'</script>`;
    const clientId = "https://desktop.example.com/client.json";
    const { redirectUrl } = await callbackListener();
    // The document comes from the test's own fetch: nothing leaves this machine.
    const documents = clientMetadataDocuments({
      resolve: async () => ["127.0.0.1"],
      allowAddresses: ["127.0.0.1"],
      fetch: async () =>
        Response.json({
          client_id: clientId,
          client_name: name,
          redirect_uris: ["http://127.0.0.1/callback"],
          token_endpoint_auth_method: "none",
        }),
    });
    const { base } = await example({ clientMetadataDocuments: documents });
    const page = await newPage();
    await page.goto(authorizationRequest(base, redirectUrl, clientId).href);
    await signInIfAsked(page);
    await expect(page.locator("#agent-name").textContent()).resolves.toBe(name);
    await expect(page.locator("#request h2").textContent()).resolves.toContain(
      "A client that calls itself",
    );
    await expect(page.locator("#agent-id").textContent()).resolves.toBe(clientId);
    await expect(page.locator("#redirect-host").textContent()).resolves.toBe(
      new URL(redirectUrl).host,
    );
    await expect(page.locator("#capabilities").textContent()).resolves.toContain(
      "Answers the text it is given.",
    );
    await expect(page.locator("#request img, #request script").count()).resolves.toBe(0);
    await expect(page.title()).resolves.not.toBe("owned");
    await page.screenshot({ path: `${ARTIFACTS}/consent.png` });

    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(redirectUrl)),
      page.getByRole("button", { name: "Approve" }).click(),
    ]);
    await page.goto(`${base}/agents`);
    const row = page.locator("tbody tr", { hasText: clientId });
    await expect(row.locator("td").first().textContent()).resolves.toContain(name);
    await expect(page.locator("tbody img, tbody script").count()).resolves.toBe(0);
    await page.screenshot({ path: `${ARTIFACTS}/connected-clients.png` });
  });

  it("sends a person whose sign-in is too old to sign in again, then back to the consent", async () => {
    const { base, clock } = await example({ approvalMaxAgeSeconds: 60 });
    const { redirectUrl, arrived } = await callbackListener();
    const request = authorizationRequest(base, redirectUrl);
    const page = await newPage();
    await page.goto(request.href);
    await signInIfAsked(page);
    await expect(page.locator("h1").textContent()).resolves.toBe("Approve a client");

    clock.skew += 61_000;
    // The page was shown in time, but answering it now needs a fresh sign-in.
    await Promise.all([
      page.waitForNavigation(),
      page.getByRole("button", { name: "Approve" }).click(),
    ]);
    expect(new URL(page.url()).pathname).toBe("/login");
    await expect(page.locator("#again").isVisible()).resolves.toBe(true);
    expect(arrived).toHaveLength(0);
    // Opening the request again is sent to sign in too.
    await page.goto(request.href);
    expect(new URL(page.url()).pathname).toBe("/login");
    expect(new URL(page.url()).searchParams.has("again")).toBe(true);

    // Signing in again starts the clock again, and leads back to the consent.
    clock.skew = 0;
    await signInIfAsked(page);
    await expect(page.locator("h1").textContent()).resolves.toBe("Approve a client");
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(redirectUrl)),
      page.getByRole("button", { name: "Approve" }).click(),
    ]);
    expect(arrived.shift()?.get("code")).toEqual(expect.any(String));
  });

  it("sends the client access_denied, with its state and the issuer, when the person denies", async () => {
    const { base } = await example();
    const { redirectUrl, arrived } = await callbackListener();
    const request = authorizationRequest(base, redirectUrl);
    const page = await newPage();
    await answerConsent(page, request, redirectUrl, "Deny");
    const answer = arrived.shift() as URLSearchParams;
    expect(answer.get("error")).toBe("access_denied");
    expect(answer.get("state")).toBe(request.searchParams.get("state"));
    expect(answer.get("iss")).toBe(base);
    expect(answer.has("code")).toBe(false);
    await page.goto(`${base}/agents`);
    await expect(page.locator("tbody tr", { hasText: "demo-desktop" }).count()).resolves.toBe(0);
  });

  it("shows an unknown redirect URI an error page of the example, and sends nobody there", async () => {
    const { base } = await example();
    const page = await newPage();
    const request = authorizationRequest(base, "https://attacker.example/callback");
    const answered = await page.goto(request.href);
    await signInIfAsked(page);
    const shown = await page.goto(request.href);
    expect(answered).not.toBeNull();
    expect(shown?.status()).toBe(400);
    expect(new URL(page.url()).origin).toBe(base);
    await expect(page.locator("#outcome").textContent()).resolves.toContain("cannot be answered");
  });
});

describe("the consent page's Content Security Policy in Chromium", () => {
  it("keeps a page that forgot to escape from running what a client named itself, and still lets Approve reach the client", async () => {
    // A careless consent page: the client's name (a script) and an inline script of its own.
    const site = await codeSite({
      authorizationCode: {
        consentPage: (_request, consent) =>
          new Response(
            `<!doctype html><meta charset="utf-8"><title>Consent</title>
             <h1>${consent.clientName}</h1>
             <img src="/nothing" onerror="document.title = 'attribute ran'">
             <script>document.title = "inline script ran"</script>
             <form method="post" action="${consent.action}">
               <input type="hidden" name="consent" value="${consent.consentToken}">
               <button name="action" value="approve">Approve</button>
             </form>`,
            { headers: { "content-type": "text/html; charset=utf-8" } },
          ),
        signedInAt: (request) => Number(request.headers.get("x-test-signed-in")),
        signInPath: "/login",
      },
    });
    servers.push({ url: site.base, close: site.close });
    const { redirectUrl, arrived } = await callbackListener();
    const context = await browser.newContext({
      extraHTTPHeaders: { "x-test-human": "alice", "x-test-signed-in": String(Date.now()) },
    });
    contexts.push(context);
    const page = await context.newPage();
    const dialogs: string[] = [];
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    const { challenge } = await pkce();
    const url = authorizeUrl(site, {
      clientId: XSS_CLIENT,
      redirectUri: redirectUrl,
      challenge,
      state: "csp",
    });
    const shown = await page.goto(url.href);
    expect(shown?.status()).toBe(200);
    await expect(page.locator("h1 script").count()).resolves.toBe(1);
    expect(await page.content()).toContain(XSS_NAME);
    await page.waitForTimeout(300);
    await expect(page.title()).resolves.toBe("Consent");
    expect(dialogs).toEqual([]);

    // The form posts here and is redirected to the client: form-action allows both.
    await Promise.all([
      page.waitForURL((at) => at.href.startsWith(redirectUrl)),
      page.getByRole("button", { name: "Approve" }).click(),
    ]);
    const answer = arrived.shift() as URLSearchParams;
    expect(answer.get("code")).toEqual(expect.any(String));
    expect(answer.get("state")).toBe("csp");
  });
});

describe("npm run mcp-desktop", () => {
  it("connects the SDK's client through the scripted browser's sign-in and consent, lists the tools and calls one", async () => {
    const { base } = await example();
    const run = runExampleScript(
      "examples/agent/mcp-desktop.ts",
      base,
      "echo",
      '{"text":"from the desktop"}',
    );
    children.push(run.child);
    const code = await run.exited;
    const output = run.output();
    expect(code, output).toBe(0);
    expect(output).toContain("the service asks the person to sign in");
    expect(output).toContain("A client that calls itself “Demo desktop client” asks for");
    expect(output).toContain("tools: echo, get_time");
    expect(output).toContain('echo → {"text":"from the desktop"}');

    // The person who approved sees the client on their list.
    const page = await newPage();
    await page.goto(`${base}/agents`);
    await signInIfAsked(page);
    await expect(page.locator("tbody").textContent()).resolves.toContain("Demo desktop client");
  });
});
