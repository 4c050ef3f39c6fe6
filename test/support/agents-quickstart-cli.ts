/**
 * The agents quick start in Chromium against a project that installed the
 * packed package (scripts/tarball-check.sh): once approved, once denied.
 *
 *   node --import tsx test/support/agents-quickstart-cli.ts <project directory>
 */
import { launchChromium } from "../browser.ts";
import { runAgentsQuickstart } from "./agents-quickstart.ts";

const [project] = process.argv.slice(2);
if (project === undefined) {
  console.error("usage: agents-quickstart-cli.ts <project directory>");
  process.exit(2);
}
const browser = await launchChromium();
try {
  const run = await runAgentsQuickstart({ cwd: project, nodeArgs: [], browser });
  const failures = [
    new URL(run.firstLanding).pathname === "/login" ? "" : `first landing ${run.firstLanding}`,
    run.afterSignIn === run.approvalUrl ? "" : `after sign-in ${run.afterSignIn}`,
    run.agentExit === 0 ? "" : `agent exit ${run.agentExit}`,
    run.agentOutput.includes("{ data: { count: 1 } }") ? "" : "no note added",
    run.serverOutput.includes("PORTCULLIS_NO_CLIENT_ADDRESS") ? "a client-address warning" : "",
  ].filter(Boolean);
  const denied = await runAgentsQuickstart({
    cwd: project,
    nodeArgs: [],
    browser,
    decision: "Deny",
  });
  const deniedFailures = [
    denied.agentExit === 1 ? "" : `agent exit ${denied.agentExit} when denied`,
    denied.agentOutput.trim().endsWith("Denied: the person did not approve this agent.")
      ? ""
      : "no one-line denial",
  ].filter(Boolean);
  if (failures.length > 0 || deniedFailures.length > 0) {
    console.error(`agents quick start: ${[...failures, ...deniedFailures].join("; ")}`);
    console.error(run.serverOutput, run.agentOutput, denied.agentOutput);
    process.exitCode = 1;
  } else {
    console.log("agents quick start: signed in from the agent's URL, approved, the agent ran");
    console.log("agents quick start: denied, the agent said so in one line and exited 1");
  }
} finally {
  await browser.close();
}
