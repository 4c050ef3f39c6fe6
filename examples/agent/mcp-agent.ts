/**
 * The demo agent over MCP: a human approves it once through the device flow
 * (openid-client), then the MCP SDK's own client, with its client-credentials
 * provider, lists the tools at /mcp and calls one.
 *
 *   npm start                                       # the example, in another terminal
 *   npm run mcp-agent -- get_time
 *   npm run mcp-agent -- echo '{"text":"hello"}'
 *
 * PORTCULLIS_URL (default http://127.0.0.1:$PORT, PORT 3000 as for `npm start`),
 * PORTCULLIS_AGENT_ID (demo-agent) and PORTCULLIS_AGENT_SECRET choose the
 * service and the agent.
 */
import {
  Client,
  ClientCredentialsProvider,
  StreamableHTTPClientTransport,
} from "@modelcontextprotocol/client";
import * as oidc from "openid-client";
import { listAndCall, serviceBase, toolCallFromArgs } from "./tool-call.ts";

const { tool, toolArguments } = toolCallFromArgs("mcp-agent");
const base = serviceBase();
const agentId = process.env.PORTCULLIS_AGENT_ID ?? "demo-agent";
const secret =
  process.env.PORTCULLIS_AGENT_SECRET ??
  (agentId === "demo-agent-2" ? "demo-agent-2-secret" : "demo-agent-secret");
const say = (line: string) => console.log(`[mcp-agent] ${line}`);
const endpoint = new URL("/mcp", base);

// 1. The approval: MCP clients have no device flow, so the agent asks with openid-client, once.
const oauth = await oidc.discovery(base, agentId, undefined, oidc.ClientSecretBasic(secret), {
  algorithm: "oauth2",
  // Plain HTTP only for a service on this machine: never toward a remote one.
  ...(base.protocol === "http:" && ["127.0.0.1", "[::1]", "localhost"].includes(base.hostname)
    ? { execute: [oidc.allowInsecureRequests] }
    : {}),
});
const authorization = await oidc.initiateDeviceAuthorization(oauth, { scope: tool });
say(`a human must approve this: open ${authorization.verification_uri_complete}`);
say("waiting for the approval...");
try {
  await oidc.pollDeviceAuthorizationGrant(oauth, authorization, { resource: endpoint.href });
} catch (error) {
  say(`no approval: ${(error as { error?: string }).error ?? String(error)}`);
  process.exit(1);
}
say("approved; connecting to the MCP endpoint with the SDK's own client");

// 2. The MCP SDK's client: it discovers the protected resource from /mcp's 401, then takes
// tokens from the grant by client_credentials with resource=<issuer>/mcp, as MCP requires.
const provider = new ClientCredentialsProvider({
  clientId: agentId,
  clientSecret: secret,
  expectedIssuer: oauth.serverMetadata().issuer,
});
const client = new Client({ name: "portcullis-demo-mcp-agent", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: provider }));
await listAndCall(client, tool, toolArguments, say);
