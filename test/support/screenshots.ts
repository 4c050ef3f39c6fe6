/**
 * The pictures of the example app's agent pages that the guides show
 * (docs/images/): the device flow's review page, the consent page an MCP
 * client sends a person to, and the connected-agents page. They are taken in
 * Debian's Chromium from the example app, played as a reader plays it: the
 * demo agent (`npm run agent -- … --dpop`) asks, alice signs in and approves,
 * the registered desktop client asks by authorization code and she approves
 * that too. `npm run screenshots` takes them again.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import * as oauth from "oauth4webapi";
import type { Page } from "playwright-core";
import { type Handler, ScryptPasswordEncoder } from "portcullis";
import { DEMO_DESKTOP_CLIENT } from "../../examples/hono/agents.ts";
import { createExampleHandler } from "../../examples/hono/app.ts";
import { launchChromium } from "../browser.ts";
import { runExampleScript } from "./example-script.ts";

/** The pictures, by what they show, as named under docs/images/. */
export const PICTURES = {
  review: "device-flow-review.png",
  consent: "consent.png",
  agents: "connected-agents.png",
} as const;

/** Wide enough for the connected-agents table, narrow enough to read in a guide; as tall as each page. */
const VIEWPORT = { width: 960, height: 400 };

/** The desktop client's loopback redirect URI: a listener that only says the code came back. */
async function startCallback() {
  const server = createServer((_, res) => {
    res.writeHead(200, { "content-type": "text/plain" }).end("back at the client");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

/** The example app on `port` (0: any free one), with its issuer on that port. */
async function startExample(port: number) {
  let handler: Handler | undefined;
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const started = serve(
      {
        // The host's own arguments too: the chain reads the client address from them.
        fetch: (request, ...rest) => (handler as Handler)(request, ...rest),
        port,
        hostname: "127.0.0.1",
      },
      () => resolve(started),
    );
    started.once("error", reject);
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  handler = await createExampleHandler({
    issuer: base,
    // Fewer rounds than production: the demo passwords are public anyway.
    passwordEncoder: new ScryptPasswordEncoder({ logN: 10 }),
    pollIntervalSeconds: 1,
  });
  return { base, close: () => new Promise<void>((done) => server.close(() => done())) };
}

async function signIn(page: Page): Promise<void> {
  await page.getByLabel("Username").fill("alice");
  await page.getByLabel("Password").fill("demo-alice");
  await Promise.all([
    page.waitForNavigation(),
    page.getByRole("button", { name: "Sign in" }).click(),
  ]);
}

async function press(page: Page, name: string): Promise<void> {
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name }).click()]);
}

/**
 * Takes the pictures into `dir`, from an example app on `port` (3000 as `npm
 * start` serves it, so the pictures show its address; 0 for any free port).
 */
export async function takeScreenshots(dir: string, port = 0): Promise<void> {
  const example = await startExample(port).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "EADDRINUSE") throw error;
    console.warn(`port ${port} is taken: the pictures show another port`);
    return startExample(0);
  });
  const callback = await startCallback();
  const browser = await launchChromium();
  const agent = runExampleScript(
    "examples/agent/agent.ts",
    example.base,
    "echo",
    '{"text":"hello"}',
    "--dpop",
  );
  try {
    const context = await browser.newContext({
      viewport: VIEWPORT,
      deviceScaleFactor: 1,
      colorScheme: "light",
    });
    const page = await context.newPage();

    // The device flow: the agent's link, the sign-in, the review, Approve.
    const [, link] = await agent.waitFor(/open (http\S+user_code=\S+)/);
    await page.goto(link as string);
    await signIn(page);
    // A code that came by link is shown to be submitted first.
    if ((await page.locator("#agent-name").count()) === 0) await press(page, "Review");
    await page.locator("#agent-name").waitFor();
    await page.screenshot({ path: join(dir, PICTURES.review), fullPage: true });
    await press(page, "Approve");
    const exited = await agent.exited;
    if (exited !== 0) throw new Error(`the demo agent exited ${exited}:\n${agent.output()}`);

    // An MCP client's authorization request: the consent page, Approve, the code redeemed.
    const verifier = oauth.generateRandomCodeVerifier();
    const authorize = new URL("/oauth/authorize", example.base);
    for (const [name, value] of Object.entries({
      response_type: "code",
      client_id: DEMO_DESKTOP_CLIENT.clientId,
      redirect_uri: callback.url,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      resource: `${example.base}/mcp`,
      state: oauth.generateRandomState(),
    }))
      authorize.searchParams.set(name, value);
    await page.goto(authorize.href);
    await page.locator("#redirect-host").waitFor();
    await page.screenshot({ path: join(dir, PICTURES.consent), fullPage: true });
    await press(page, "Approve");
    const code = new URL(page.url()).searchParams.get("code");
    if (code === null) throw new Error(`no code came back: ${page.url()}`);
    const redeemed = await fetch(new URL("/oauth/token", example.base), {
      method: "POST",
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        code_verifier: verifier,
        redirect_uri: callback.url,
        client_id: DEMO_DESKTOP_CLIENT.clientId,
      }),
    });
    if (!redeemed.ok) throw new Error(`the code was not redeemed: ${redeemed.status}`);

    // What alice approved: the demo agent, bound to its key, and the desktop client.
    await page.goto(new URL("/agents", example.base).href);
    await page.locator("tbody tr").nth(1).waitFor();
    await page.screenshot({ path: join(dir, PICTURES.agents), fullPage: true });
    await context.close();
  } finally {
    agent.child.kill();
    await browser.close();
    await example.close();
    await callback.close();
  }
}
