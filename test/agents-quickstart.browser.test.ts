/**
 * The agents quick start (docs/11-agents.md), run as written: the service, the agent,
 * and a person in Chromium who signs in from the agent's URL and approves.
 * scripts/tarball-check.sh runs the same flow against the packed package.
 */
import { fileURLToPath } from "node:url";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "./browser.ts";
import { runAgentsQuickstart } from "./support/agents-quickstart.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe("the agents quick start", () => {
  it("runs end to end from the guide: the browser signs in, comes back and approves; the agent calls twice", async () => {
    const run = await runAgentsQuickstart({
      cwd: ROOT,
      nodeArgs: ["--conditions=source"],
      browser,
    });
    // Not signed in: a sign-in page, not a 401 body, then back to the approval page.
    expect(new URL(run.firstLanding).pathname).toBe("/login");
    expect(run.afterSignIn).toBe(run.approvalUrl);
    // Approve is pressed only on the review, which names the agent and what it asks for.
    expect(run.reviewed).toContain("asks for");
    expect(run.reviewed).toContain("add_note");
    expect(run.agentExit, run.agentOutput).toBe(0);
    expect(run.agentOutput).toContain("{ data: { count: 1 } }");
    expect(run.agentOutput).toContain("hello");
    // The service is on @hono/node-server with its client-address function: no warning.
    expect(run.serverOutput).not.toContain("PORTCULLIS_NO_CLIENT_ADDRESS");
  }, 120_000);

  it("tells the agent's user in one line that the person pressed Deny, and exits 1", async () => {
    const run = await runAgentsQuickstart({
      cwd: ROOT,
      nodeArgs: ["--conditions=source"],
      browser,
      decision: "Deny",
    });
    expect(run.agentExit, run.agentOutput).toBe(1);
    expect(run.agentOutput).toContain("Denied: the person did not approve this agent.");
    expect(run.agentOutput).not.toMatch(/^\s+at /m);
  }, 120_000);
});
