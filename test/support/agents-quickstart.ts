/**
 * The agents quick start (docs/11-agents.md) as a reader runs it: the service and the
 * agent from examples/agents-quickstart with the environment the guide
 * gives, and a person in Chromium who opens the URL the agent printed, signs
 * in and approves. `cwd` is this repository (with `--conditions=source`) or
 * a project that installed the packed package.
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Browser } from "playwright-core";
import { freePort } from "../processes.ts";

export interface QuickstartRun {
  /** Where the browser landed when it first opened the agent's URL. */
  readonly firstLanding: string;
  /** The page the browser was on after signing in. */
  readonly afterSignIn: string;
  /** What the review page showed before Approve was pressed. */
  readonly reviewed: string;
  readonly approvalUrl: string;
  readonly agentExit: number | null;
  readonly agentOutput: string;
  readonly serverOutput: string;
}

export interface Child {
  readonly process: ChildProcess;
  output(): string;
  readonly exited: Promise<number | null>;
  waitFor(pattern: RegExp, ms: number): Promise<RegExpExecArray>;
}

export function start(
  cwd: string,
  nodeArgs: readonly string[],
  file: string,
  env: NodeJS.ProcessEnv,
  args: readonly string[] = [],
) {
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", file, ...args], {
    cwd,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const take = (chunk: Buffer) => {
    output += chunk.toString("utf8");
  };
  child.stdout?.on("data", take);
  child.stderr?.on("data", take);
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  const run: Child = {
    process: child,
    output: () => output,
    exited,
    async waitFor(pattern, ms) {
      const deadline = Date.now() + ms;
      for (;;) {
        const match = pattern.exec(output);
        if (match !== null) return match;
        if (child.exitCode !== null || Date.now() > deadline)
          throw new Error(`${file}: no ${pattern} (exit ${child.exitCode}):\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
  return run;
}

export async function runAgentsQuickstart(options: {
  readonly cwd: string;
  readonly nodeArgs: readonly string[];
  readonly browser: Browser;
  /** The button the person presses on the review. */
  readonly decision?: "Approve" | "Deny";
}): Promise<QuickstartRun> {
  const port = await freePort();
  // The guide: `export PORT=… ALICE_PASSWORD=… RESEARCH_KEY=$(openssl rand -hex 16)`.
  const env = {
    ...process.env,
    PORT: String(port),
    ALICE_PASSWORD: "a-local-password",
    RESEARCH_KEY: "0123456789abcdef0123456789abcdef",
  };
  const children: Child[] = [];
  try {
    const server = start(
      options.cwd,
      options.nodeArgs,
      "examples/agents-quickstart/server.ts",
      env,
    );
    children.push(server);
    await server.waitFor(/agents quick start on http/, 30_000);
    const agent = start(options.cwd, options.nodeArgs, "examples/agents-quickstart/agent.ts", env);
    children.push(agent);
    const [, approvalUrl] = await agent.waitFor(/open (http\S+)/, 30_000);

    const context = await options.browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(approvalUrl as string);
      const firstLanding = page.url();
      await page.getByLabel("Username").fill("alice");
      await page.getByLabel("Password").fill(env.ALICE_PASSWORD);
      await Promise.all([
        page.waitForNavigation(),
        page.getByRole("button", { name: "Sign in" }).click(),
      ]);
      const afterSignIn = page.url();
      // A code that arrived by link is only pre-filled: the person asks for its review first.
      const review = page.getByRole("button", { name: "Review" });
      if (await review.isVisible()) await Promise.all([page.waitForNavigation(), review.click()]);
      const reviewed = await page.locator("body").innerText();
      await Promise.all([
        page.waitForNavigation(),
        page.getByRole("button", { name: options.decision ?? "Approve" }).click(),
      ]);
      const agentExit = await Promise.race([
        agent.exited,
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 30_000)),
      ]);
      return {
        firstLanding,
        afterSignIn,
        reviewed,
        approvalUrl: approvalUrl as string,
        agentExit,
        agentOutput: agent.output(),
        serverOutput: server.output(),
      };
    } finally {
      await context.close();
    }
  } finally {
    for (const child of children) child.process.kill();
  }
}
