/**
 * A desktop MCP client, as an IDE or a chat app connects: the MCP SDK's own
 * client and its own `auth()` flow (discovery, authorization code with PKCE,
 * refresh), a loopback listener for the redirect back, and a scripted browser
 * (Debian's Chromium, driven by playwright-core) in which the demo person
 * signs in and presses Approve on the consent page.
 *
 *   npm start                                          # the example, in another terminal
 *   npm run mcp-desktop -- get_time
 *   npm run mcp-desktop -- echo '{"text":"hello"}'
 *
 * PORTCULLIS_URL (default http://127.0.0.1:$PORT, PORT 3000 as for `npm start`) chooses the
 * service; PORTCULLIS_DEMO_USER and PORTCULLIS_DEMO_PASSWORD (alice / demo-alice) the person;
 * PORTCULLIS_CHROMIUM the browser (/usr/bin/chromium).
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  Client,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthTokens,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from "@modelcontextprotocol/client";
import { chromium } from "playwright-core";
import { listAndCall, serviceBase, toolCallFromArgs } from "./tool-call.ts";

const { tool, toolArguments } = toolCallFromArgs("mcp-desktop");
const base = serviceBase();
const endpoint = new URL("/mcp", base);
const say = (line: string) => console.log(`[mcp-desktop] ${line}`);

// 1. The redirect back: a listener on loopback, on whatever port is free (RFC 8252 §7.3).
const answers: URLSearchParams[] = [];
const listener = createServer((request, response) => {
  const url = new URL(request.url ?? "/", "http://127.0.0.1");
  if (url.pathname !== "/callback") {
    response.writeHead(404).end();
    return;
  }
  answers.push(url.searchParams);
  response
    .writeHead(200, { "content-type": "text/plain; charset=utf-8" })
    .end("Done: you can close this window and go back to the client.");
});
listener.listen(0, "127.0.0.1");
await once(listener, "listening");
const redirectUrl = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/callback`;

// 2. The browser: the person signs in with the service's own page and approves.
async function consentInBrowser(authorizationUrl: URL): Promise<URLSearchParams> {
  const browser = await chromium.launch({
    executablePath: process.env.PORTCULLIS_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
  });
  try {
    const page = await browser.newPage();
    await page.goto(authorizationUrl.href);
    if (new URL(page.url()).pathname === "/login") {
      say("the service asks the person to sign in");
      await page.getByLabel("Username").fill(process.env.PORTCULLIS_DEMO_USER ?? "alice");
      await page.getByLabel("Password").fill(process.env.PORTCULLIS_DEMO_PASSWORD ?? "demo-alice");
      await Promise.all([
        page.waitForNavigation(),
        page.getByRole("button", { name: "Sign in" }).click(),
      ]);
    }
    const asked = (await page.locator("#request h2").textContent())?.trim();
    const host = await page.locator("#redirect-host").textContent();
    const tools = await page.locator("#capabilities code").allTextContents();
    say(`the consent page: ${asked} ${tools.join(", ")}; it sends the person back to ${host}`);
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(redirectUrl)),
      page.getByRole("button", { name: "Approve" }).click(),
    ]);
    say("approved in the browser");
  } finally {
    await browser.close();
  }
  const answer = answers.shift();
  if (answer === undefined) throw new Error("the browser was not sent back to the client");
  return answer;
}

// 3. What the client keeps: a registered public client (no secret), its tokens, its verifier.
class DesktopClientProvider implements OAuthClientProvider {
  #tokens: StoredOAuthTokens | undefined;
  #verifier: string | undefined;
  #discovery: OAuthDiscoveryState | undefined;
  answer: Promise<URLSearchParams> | undefined;
  readonly redirectUrl = redirectUrl;
  readonly clientMetadata: OAuthClientMetadata = {
    client_name: "Demo desktop client",
    redirect_uris: [redirectUrl],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };
  clientInformation() {
    return { client_id: "demo-desktop" };
  }
  tokens() {
    return this.#tokens;
  }
  saveTokens(tokens: StoredOAuthTokens) {
    this.#tokens = tokens;
  }
  redirectToAuthorization(authorizationUrl: URL) {
    say(`opening the browser at ${authorizationUrl.origin}${authorizationUrl.pathname}`);
    this.answer = consentInBrowser(authorizationUrl);
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    if (this.#verifier === undefined) throw new Error("no authorization in progress");
    return this.#verifier;
  }
  // Kept with the verifier, so the code goes back to the server that was asked (SEP-2352).
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.#discovery = state;
  }
  discoveryState() {
    return this.#discovery;
  }
}

// 4. The SDK's flow, unmodified: the 401 leads it to the metadata, the browser and the code.
const provider = new DesktopClientProvider();
const client = new Client({ name: "portcullis-demo-desktop", version: "1.0.0" });
let transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
try {
  await client.connect(transport);
} catch (error) {
  if (!(error instanceof UnauthorizedError) || provider.answer === undefined) throw error;
  const answer = await provider.answer;
  if (answer.has("error")) {
    say(`not approved: ${answer.get("error")}`);
    process.exit(1);
  }
  await transport.finishAuth(answer);
  say("signed in: tokens and a refresh token for the MCP endpoint");
  transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider });
  await client.connect(transport);
}
listener.close();
await listAndCall(client, tool, toolArguments, say);
