import { type AgentAuth, agentAuth } from "portcullis/agentauth";
import { MemoryClientStore } from "portcullis/oauth2";

/** The demo agents' credentials: for local use only, their secrets are public. */
export function demoAgents(env: Record<string, string | undefined> = process.env) {
  return [
    {
      id: "demo-agent",
      secret: env.PORTCULLIS_DEMO_AGENT_SECRET ?? "demo-agent-secret",
      name: "Demo agent",
    },
    {
      id: "demo-agent-2",
      secret: env.PORTCULLIS_DEMO_AGENT_2_SECRET ?? "demo-agent-2-secret",
      name: "Second demo agent",
    },
  ] as const;
}

/**
 * The demo MCP client a desktop or IDE client stands for: public (no secret;
 * PKCE binds its codes), sent back to a loopback URL on whatever port it listens.
 */
export const DEMO_DESKTOP_CLIENT = {
  clientId: "demo-desktop",
  name: "Demo desktop client",
  redirectUris: ["http://127.0.0.1/callback"],
} as const;

/**
 * Agents of the example: they discover the capabilities, a signed-in human
 * approves a grant at /device, and they call the capabilities with
 * short-lived, single-use tokens. MCP clients sign in through the
 * authorization endpoint instead, when `options.authorizationCode` is given.
 * Memory stores: one process only. `clients` is where the names on the
 * connected-agents page are looked up.
 */
export async function createAgents(
  issuer: string,
  options: Partial<Parameters<typeof agentAuth>[0]> = {},
  clients: MemoryClientStore = new MemoryClientStore(),
): Promise<AgentAuth> {
  for (const agent of demoAgents())
    await clients.register({ clientId: agent.id, secret: agent.secret, name: agent.name });
  await clients.register({
    clientId: DEMO_DESKTOP_CLIENT.clientId,
    name: DEMO_DESKTOP_CLIENT.name,
    public: true,
    redirectUris: [...DEMO_DESKTOP_CLIENT.redirectUris],
  });
  return agentAuth({
    issuer,
    clients,
    providerName: "Portcullis example",
    description: "Demo capabilities for agents a human has approved.",
    paths: { verification: "/device" },
    capabilities: [
      {
        name: "get_time",
        description: "Tells the server's current time.",
        input: { type: "object", additionalProperties: false },
        output: { type: "object", properties: { time: { type: "string" } } },
        handler: () => ({ time: new Date().toISOString() }),
      },
      {
        name: "echo",
        description: "Answers the text it is given.",
        input: {
          type: "object",
          properties: { text: { type: "string", maxLength: 1000 } },
          required: ["text"],
          additionalProperties: false,
        },
        output: { type: "object", properties: { text: { type: "string" } } },
        handler: (args) => ({ text: args.text }),
      },
      {
        name: "export_report",
        description: "Downloads a small report, from its own URL.",
        location: `${issuer}/reports/export`,
      },
    ],
    // The tools at /mcp: MCP clients get tokens for <issuer>/mcp, reused until they expire.
    mcp: {},
    // An agent that sends DPoP proofs gets tokens bound to its key, and its grant
    // remembers the key; one that does not still gets bearer tokens.
    dpop: {},
    // Ids and outcomes only: events never carry tokens or secrets.
    onEvent: (event) => console.log("agent event", JSON.stringify(event)),
    ...options,
  });
}
