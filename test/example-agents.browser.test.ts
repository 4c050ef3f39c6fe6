/**
 * The example's whole agent story in Debian's Chromium: the demo agent runs
 * as a child process, a person signs in, opens the URL it printed, sees the
 * agent and what it asks for, and approves, denies or later revokes.
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { ScryptPasswordEncoder } from "portcullis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createExampleHandler } from "../examples/hono/app.ts";
import { launchChromium } from "./browser.ts";
import { type Served, serveFetch } from "./serve.ts";
import { runExampleScript, type ScriptRun } from "./support/example-script.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const ARTIFACTS = `${ROOT}test-artifacts`;

let browser: Browser;
const servers: Served[] = [];
const agents: ChildProcess[] = [];

/** The example served on a free port, its issuer being that port's URL. */
async function example(approvalMaxAgeSeconds = 300): Promise<string> {
  let handler: ((request: Request) => Promise<Response>) | undefined;
  const served = await serveFetch((request) =>
    (handler as (r: Request) => Promise<Response>)(request),
  );
  handler = await createExampleHandler({
    issuer: served.url,
    passwordEncoder: new ScryptPasswordEncoder({ logN: 10 }),
    pollIntervalSeconds: 1,
    approvalMaxAgeSeconds,
  });
  servers.push(served);
  return served.url;
}

/** One of the example agents as a child process, stopped when the file is done. */
function runScript(script: string, base: string, ...args: string[]): ScriptRun {
  const run = runExampleScript(script, base, ...args);
  agents.push(run.child);
  return run;
}

function runAgent(base: string, ...args: string[]): ScriptRun {
  return runScript("examples/agent/agent.ts", base, ...args);
}

async function signIn(page: Page, username = "alice", password = "demo-alice"): Promise<void> {
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(password);
  await Promise.all([
    page.waitForNavigation(),
    page.getByRole("button", { name: "Sign in" }).click(),
  ]);
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  for (const child of agents) child.kill();
  await browser?.close();
  for (const served of servers) await served.close();
});

describe("the example's agent pages in a real browser", () => {
  it("approves an agent from the URL it printed; the agent executes, then refreshes and executes again", async () => {
    const base = await example();
    const agent = runAgent(base, "echo", '{"text":"hello from the agent"}');
    const [, url] = await agent.waitFor(/open (http\S+user_code=\S+)/);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url as string);
    // Not signed in: sent to sign-in, and back to the approval page afterwards.
    expect(new URL(page.url()).pathname).toBe("/login");
    await page.screenshot({ path: `${ARTIFACTS}/sign-in.png` });
    await signIn(page);
    expect(page.url()).toBe(url);
    await expect(page.locator("#agent-name").textContent()).resolves.toBe("Demo agent");
    await expect(page.locator("#capabilities").textContent()).resolves.toContain(
      "Answers the text it is given.",
    );
    await expect(page.locator("#user-code").textContent()).resolves.toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
    await page.screenshot({ path: `${ARTIFACTS}/approval.png` });
    await Promise.all([
      page.waitForNavigation(),
      page.getByRole("button", { name: "Approve" }).click(),
    ]);
    await expect(page.locator("#outcome").textContent()).resolves.toContain("approved");
    expect(await agent.exited).toBe(0);
    expect(agent.output()).toContain('echo → {"text":"hello from the agent"}');
    expect(agent.output().match(/echo → /g)).toHaveLength(2);

    await page.goto(`${base}/agents`);
    await expect(page.locator("tbody tr").count()).resolves.toBe(1);
    await expect(page.locator("tbody").textContent()).resolves.toContain("demo-agent");
    await page.screenshot({ path: `${ARTIFACTS}/connected-agents.png` });
    await context.close();
  });

  it("npm run mcp-agent: approved by device flow, the MCP SDK's own client lists the tools and calls one", async () => {
    const base = await example();
    const agent = runScript("examples/agent/mcp-agent.ts", base, "echo", '{"text":"over MCP"}');
    const [, url] = await agent.waitFor(/open (http\S+user_code=\S+)/);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url as string);
    await signIn(page);
    await expect(page.locator("#agent-name").textContent()).resolves.toBe("Demo agent");
    await Promise.all([
      page.waitForNavigation(),
      page.getByRole("button", { name: "Approve" }).click(),
    ]);
    expect(await agent.exited, agent.output()).toBe(0);
    expect(agent.output()).toContain("tools: echo, get_time");
    expect(agent.output()).toContain('echo → {"text":"over MCP"}');
    await context.close();
  });

  it("shows a signed-in person who opens the agent's link the code to check, and the agent's request only after Review", async () => {
    const base = await example();
    const agent = runAgent(base, "get_time");
    const [, url] = await agent.waitFor(/open (http\S+user_code=\S+)/);
    const code = new URL(url as string).searchParams.get("user_code");
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/login`);
    await signIn(page);
    // Opened from the terminal: nothing is looked up yet, and nothing can be approved.
    await page.goto(url as string);
    await expect(page.getByLabel("Code").inputValue()).resolves.toBe(code);
    await expect(page.locator("#notice").textContent()).resolves.toContain("press Review");
    await expect(page.getByRole("button", { name: "Approve" }).count()).resolves.toBe(0);
    await Promise.all([
      page.waitForNavigation(),
      page.getByRole("button", { name: "Review" }).click(),
    ]);
    await expect(page.locator("#agent-name").textContent()).resolves.toBe("Demo agent");
    await expect(page.locator("#capabilities").textContent()).resolves.toContain(
      "Tells the server's current time.",
    );
    await Promise.all([
      page.waitForNavigation(),
      page.getByRole("button", { name: "Approve" }).click(),
    ]);
    await expect(page.locator("#outcome").textContent()).resolves.toContain("approved");
    expect(await agent.exited).toBe(0);
    await context.close();
  });

  it("leads a typed code to the review page; a wrong one is told it may have expired", async () => {
    const base = await example();
    const agent = runAgent(base, "get_time");
    const [, code] = await agent.waitFor(/the code ([A-Z]{4}-[A-Z]{4})/);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/device`);
    await signIn(page);
    await page.getByLabel("Code").fill("BCDF-GHJK");
    await Promise.all([
      page.waitForNavigation(),
      page.getByRole("button", { name: "Review" }).click(),
    ]);
    await expect(page.locator("#error").textContent()).resolves.toContain("expired");
    await page.getByLabel("Code").fill(code as string);
    await Promise.all([
      page.waitForNavigation(),
      page.getByRole("button", { name: "Review" }).click(),
    ]);
    await expect(page.locator("#agent-name").textContent()).resolves.toBe("Demo agent");
    await expect(page.getByRole("button", { name: "Deny" }).isVisible()).resolves.toBe(true);
    await context.close();
  });

  it("tells the agent access_denied when the person denies", async () => {
    const base = await example();
    const agent = runAgent(base, "get_time");
    const [, url] = await agent.waitFor(/open (http\S+user_code=\S+)/);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url as string);
    await signIn(page, "sam", "demo-sam");
    await Promise.all([
      page.waitForNavigation(),
      page.getByRole("button", { name: "Deny" }).click(),
    ]);
    expect(await agent.exited).toBe(1);
    expect(agent.output()).toContain("access_denied");
    await context.close();
  });

  it("cuts an agent off when the person revokes it on the connected-agents page", async () => {
    const base = await example();
    const agent = runAgent(base, "get_time", "--every", "2");
    const [, url] = await agent.waitFor(/open (http\S+user_code=\S+)/);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(url as string);
    await signIn(page);
    await Promise.all([
      page.waitForNavigation(),
      page.getByRole("button", { name: "Approve" }).click(),
    ]);
    await agent.waitFor(/get_time → /);
    await page.goto(`${base}/agents`);
    await Promise.all([
      page.waitForNavigation(),
      page.getByRole("button", { name: "Revoke" }).click(),
    ]);
    await expect(page.locator("tbody").textContent()).resolves.toContain("revoked");
    expect(await agent.exited).toBe(1);
    expect(agent.output()).toContain("grant_revoked");
    await context.close();
  });

  it("asks a person whose sign-in is too old to sign in again before approving", async () => {
    const base = await example(1);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/login`);
    await signIn(page);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await page.goto(`${base}/device?user_code=BCDF-GHJK`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await expect(page.locator("#again").isVisible()).resolves.toBe(true);
    await signIn(page);
    expect(new URL(page.url()).pathname).toBe("/device");
    await expect(page.getByLabel("Code").inputValue()).resolves.toBe("BCDF-GHJK");
    await context.close();
  });

  it("sends an anonymous page visit to sign-in and back, and ignores a next that leaves the site", async () => {
    const base = await example();
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/agents`);
    expect(new URL(page.url()).pathname).toBe("/login");
    await signIn(page);
    expect(page.url()).toBe(`${base}/agents`);
    await context.clearCookies();
    for (const next of ["//evil.example/", "https://evil.example/", "/%5Cevil.example"]) {
      await context.clearCookies();
      await page.goto(`${base}/login?next=${encodeURIComponent(next)}`);
      await signIn(page);
      expect(page.url(), next).toBe(`${base}/`);
    }
    // A signed-in person refused a page gets a page, not JSON.
    const admin = await page.goto(`${base}/admin/panel`);
    expect(admin?.status()).toBe(403);
    await expect(page.getByRole("heading", { name: "Not allowed" }).isVisible()).resolves.toBe(
      true,
    );
    // Signed in: the header names the person and offers no "Sign in".
    await expect(page.locator("header").textContent()).resolves.toContain("Signed in as");
    await expect(page.getByRole("link", { name: "Sign in" }).count()).resolves.toBe(0);
    await context.close();
  });

  it("opens the staff area from the start page as a page, not JSON", async () => {
    const base = await example();
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/`);
    await signIn(page, "sam", "demo-sam");
    await Promise.all([
      page.waitForNavigation(),
      page.getByRole("link", { name: "Staff area" }).click(),
    ]);
    await expect(page.getByRole("heading", { name: "Staff area" }).isVisible()).resolves.toBe(true);
    await context.close();
  });
});
