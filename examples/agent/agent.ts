/**
 * A demo agent using openid-client: it discovers the service, asks a human to
 * approve what it wants, then calls capabilities with single-use tokens.
 *
 *   npm start                                              # the example app
 *   npx tsx examples/agent/agent.ts http://127.0.0.1:3000
 *
 * and approve the code it prints at /agent/approve, signed in as a demo account.
 */
import * as oidc from "openid-client";

const base = new URL(process.argv[2] ?? "http://127.0.0.1:3000");
const keyId = process.env.PORTCULLIS_DEMO_AGENT_ID ?? "demo-agent";
const secret = process.env.PORTCULLIS_DEMO_AGENT_SECRET ?? "demo-agent-secret";
const insecure = base.protocol === "http:"; // plain HTTP only because the example runs on localhost

interface AgentConfiguration {
  issuer: string;
  endpoints: { capabilities: string; execute: string };
}

const configuration = (await (
  await fetch(new URL("/.well-known/agent-configuration", base))
).json()) as AgentConfiguration;
const basic = `Basic ${btoa(`${encodeURIComponent(keyId)}:${encodeURIComponent(secret)}`)}`;
const listed = (await (
  await fetch(configuration.endpoints.capabilities, { headers: { authorization: basic } })
).json()) as { capabilities: { name: string; description: string; location?: string }[] };
console.log(`Capabilities: ${listed.capabilities.map((c) => c.name).join(", ")}`);

const oauth = await oidc.discovery(
  new URL(configuration.issuer),
  keyId,
  undefined,
  oidc.ClientSecretBasic(secret),
  {
    algorithm: "oauth2",
    ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}),
  },
);
const wanted = ["list_notes", "add_note", "export_notes"];
const authorization = await oidc.initiateDeviceAuthorization(oauth, { scope: wanted.join(" ") });
console.log(`Ask a human to open ${authorization.verification_uri}`);
console.log(`and enter the code ${authorization.user_code}`);

let tokens: Awaited<ReturnType<typeof oidc.pollDeviceAuthorizationGrant>>;
try {
  tokens = await oidc.pollDeviceAuthorizationGrant(oauth, authorization);
} catch (error) {
  const code = (error as { error?: string }).error;
  console.log(
    code === "access_denied" ? "The human denied the request." : `No grant: ${code ?? error}`,
  );
  process.exit(1);
}
console.log(`Approved for: ${tokens.scope}`);

async function execute(token: string, capability: string, args?: unknown) {
  const response = await fetch(configuration.endpoints.execute, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ capability, arguments: args ?? {} }),
  });
  return { status: response.status, body: await response.json() };
}

const added = await execute(tokens.access_token, "add_note", { text: "written by an agent" });
console.log(`add_note: ${added.status} ${JSON.stringify(added.body)}`);
const reused = await execute(tokens.access_token, "list_notes");
console.log(`the same token again: ${reused.status} ${JSON.stringify(reused.body)}`);

// Each call takes a fresh token, minted from the still-active grant.
const fresh = await oidc.clientCredentialsGrant(oauth, { scope: "list_notes" });
const list = await execute(fresh.access_token, "list_notes");
console.log(`list_notes: ${list.status} ${JSON.stringify(list.body)}`);

const location = listed.capabilities.find((c) => c.name === "export_notes")?.location;
if (location !== undefined) {
  const forExport = await oidc.clientCredentialsGrant(oauth, { resource: location });
  const exported = await fetch(location, {
    headers: { authorization: `Bearer ${forExport.access_token}` },
  });
  console.log(`export_notes: ${exported.status} ${JSON.stringify(await exported.text())}`);
}
