import { serve } from "@hono/node-server";
import { createLingeringServer } from "portcullis/adapters/node";
import { demoAgents } from "./agents.ts";
import { createExampleHandler, demoAccounts } from "./app.ts";

const port = Number(process.env.PORT ?? 3000);
const host = "127.0.0.1";
const accounts = demoAccounts();
const handler = await createExampleHandler({ accounts, issuer: `http://${host}:${port}` });

// A client still uploading when the chain refuses it gets the answer all the same.
serve({ fetch: handler, port, hostname: host, createServer: createLingeringServer }, (info) => {
  const url = `http://${host}:${info.port}`;
  // The agents find the service on port 3000 unless told where it listens.
  const agentPort = info.port === 3000 ? "" : `PORT=${info.port} `;
  console.log(`Portcullis example listening on ${url}  (sign in at ${url}/login)`);
  console.log("");
  console.log("!! DEMO ACCOUNTS, FOR LOCAL USE ONLY: their passwords are public. !!");
  for (const account of accounts) {
    const fromEnv =
      process.env[`PORTCULLIS_DEMO_${account.name.toUpperCase()}_PASSWORD`] !== undefined;
    console.log(
      `   ${account.name.padEnd(6)} ${account.authorities.join(",").padEnd(6)} ${fromEnv ? "password from the environment" : `password ${account.password}`}`,
    );
  }
  console.log("");
  console.log(`API calls may use HTTP Basic:  curl -u sam:demo-sam ${url}/staff/reports`);
  console.log("");
  console.log("!! DEMO AGENTS, FOR LOCAL USE ONLY: their secrets are public. !!");
  for (const agent of demoAgents()) console.log(`   ${agent.id.padEnd(13)} secret ${agent.secret}`);
  console.log(
    `An agent asks for approval with:  ${agentPort}npm run agent -- echo '{"text":"hello"}'`,
  );
  console.log(`then approve its code at ${url}/device; your connected agents are at ${url}/agents`);
});
