/**
 * mcp-remote, the stdio bridge many desktop MCP clients run, against the example app over a real
 * socket, driven by the MCP SDK's stdio client as a desktop client drives it: its default run
 * (dynamic registration, authorization code with PKCE back to http://localhost, the browser it
 * opens handed to Chromium through BROWSER), its device flow, and its client credentials.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { ScryptPasswordEncoder } from "portcullis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createExampleHandler } from "../examples/hono/app.ts";
import { launchChromium } from "./browser.ts";
import { type Served, serveFetch } from "./serve.ts";

const PROXY = fileURLToPath(new URL("../node_modules/mcp-remote/dist/proxy.js", import.meta.url));

let browser: Browser;
let served: Served;
let base: string;
const dirs: string[] = [];
const contexts: BrowserContext[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  browser = await launchChromium();
  let handler: ((request: Request) => Promise<Response>) | undefined;
  served = await serveFetch((request) => (handler as (r: Request) => Promise<Response>)(request));
  base = served.url;
  handler = await createExampleHandler({
    issuer: base,
    passwordEncoder: new ScryptPasswordEncoder({ logN: 10 }),
    pollIntervalSeconds: 1,
  });
}, 60_000);

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {});
  for (const context of contexts) await context.close();
  await browser?.close();
  await served?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * mcp-remote with `args` after the server URL, its own configuration directory, and a BROWSER
 * that writes the URL it is asked to open to a file (the `open` package's xdg-open runs it).
 */
function mcpRemote(args: readonly string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), "mcp-remote-"));
  dirs.push(dir);
  const opened = join(dir, "opened");
  const browserScript = join(dir, "browser.sh");
  writeFileSync(browserScript, `#!/bin/sh\nprintf '%s\\n' "$1" >> '${opened}'\n`);
  chmodSync(browserScript, 0o755);
  let log = "";
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [PROXY, `${base}/mcp`, ...args],
    env: {
      ...(process.env as Record<string, string>),
      BROWSER: browserScript,
      MCP_REMOTE_CONFIG_DIR: join(dir, "config"),
    },
    stderr: "pipe",
  });
  transport.stderr?.on("data", (chunk: Buffer) => {
    log += chunk.toString("utf8");
  });
  const client = new Client({ name: "desktop-client", version: "1.0.0" });
  clients.push(client);
  const connecting = client.connect(transport);
  // Awaited by the test; a failure there is reported there, with the log.
  connecting.catch(() => {});
  return {
    client,
    connecting,
    log: () => log,
    /** The first URL mcp-remote asked the browser to open. */
    async openedUrl(): Promise<string> {
      return poll(
        () => {
          try {
            return readFileSync(opened, "utf8").split("\n")[0] || undefined;
          } catch {
            return undefined;
          }
        },
        () => log,
      );
    },
    /** The first line of its log that matches `pattern`. */
    async logged(pattern: RegExp): Promise<RegExpExecArray> {
      return poll(
        () => pattern.exec(log) ?? undefined,
        () => log,
      );
    },
  };
}

async function poll<T>(found: () => T | undefined, log: () => string, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = found();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`mcp-remote did not get there:\n${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function signedInPage(): Promise<Page> {
  const context = await browser.newContext();
  contexts.push(context);
  const page = await context.newPage();
  await page.goto(`${base}/login`);
  await page.getByLabel("Username").fill("alice");
  await page.getByLabel("Password").fill("demo-alice");
  await Promise.all([
    page.waitForNavigation(),
    page.getByRole("button", { name: "Sign in" }).click(),
  ]);
  return page;
}

/** Approves a device-flow code on the example's /device page. */
async function approveDevice(url: string) {
  const page = await signedInPage();
  await page.goto(url);
  await Promise.all([
    page.waitForNavigation(),
    page.getByRole("button", { name: "Review" }).click(),
  ]);
  await Promise.all([
    page.waitForNavigation(),
    page.getByRole("button", { name: "Approve" }).click(),
  ]);
}

const DEMO_AGENT = JSON.stringify({ client_id: "demo-agent", client_secret: "demo-agent-secret" });

describe("mcp-remote against the example app", () => {
  it("its default run registers, opens the consent in the browser, comes back to localhost, and lists and calls the tools", async () => {
    const remote = mcpRemote();
    const opened = new URL(await remote.openedUrl());
    expect(`${opened.origin}${opened.pathname}`).toBe(`${base}/oauth/authorize`);
    expect(opened.searchParams.get("client_id")).toMatch(/^dyn:/);
    const redirect = opened.searchParams.get("redirect_uri") as string;
    expect(new URL(redirect).hostname).toBe("localhost");

    const page = await signedInPage();
    await page.goto(opened.href);
    await expect(page.locator("h1").textContent()).resolves.toBe("Approve a client");
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(redirect)),
      page.getByRole("button", { name: "Approve" }).click(),
    ]);
    await remote.connecting;
    const { tools } = await remote.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["echo", "get_time"]);
    await expect(
      remote.client.callTool({ name: "echo", arguments: { text: "through mcp-remote" } }),
    ).resolves.toMatchObject({ structuredContent: { text: "through mcp-remote" } });
  }, 120_000);

  it("its device flow (--device-code) with the demo agent's credentials: approved at /device, then the tools", async () => {
    const remote = mcpRemote(["--device-code", "--static-oauth-client-info", DEMO_AGENT]);
    // It prints the URL to its log (stderr), as it tells a person to open it.
    const [, url] = await remote.logged(/(http\S+\/device\?user_code=\S+)/);
    expect(url?.startsWith(`${base}/device?user_code=`)).toBe(true);
    await approveDevice(url as string);
    await remote.connecting;
    const { tools } = await remote.client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["echo", "get_time"]);
    await expect(
      remote.client.callTool({ name: "get_time", arguments: {} }),
    ).resolves.toMatchObject({ structuredContent: { time: expect.any(String) } });
  }, 120_000);

  it("its device flow without a client of its own asks to register one for the device grant, which is refused", async () => {
    const remote = mcpRemote(["--device-code"]);
    await remote.logged(/invalid_client_metadata|grant_types must be authorization_code/);
    await expect(remote.connecting).rejects.toThrow();
  }, 60_000);

  it("its client credentials (--client-credentials) draw on the grant alice approved", async () => {
    const remote = mcpRemote(["--client-credentials", "--static-oauth-client-info", DEMO_AGENT]);
    await remote.connecting;
    await expect(
      remote.client.callTool({ name: "echo", arguments: { text: "no browser" } }),
    ).resolves.toMatchObject({ structuredContent: { text: "no browser" } });
  }, 60_000);
});
