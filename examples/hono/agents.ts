import { type AgentAuth, agentAuth } from "portcullis/agentauth";
import { MemoryClientStore } from "portcullis/oauth2";

/** The demo agent's API key: for local use only, its secret is public. */
export const DEMO_AGENT = {
  keyId: "demo-agent",
  secret: process.env.PORTCULLIS_DEMO_AGENT_SECRET ?? "demo-agent-secret",
} as const;

/** What the demo capabilities work on. */
export const notes: { by: string; text: string }[] = [];

/**
 * Agents of the example: they discover the capabilities, a signed-in human
 * approves a grant at /agent/approve, and they call the capabilities with
 * short-lived, single-use tokens. Memory stores: one process only.
 */
export async function createAgents(issuer: string): Promise<AgentAuth> {
  const clients = new MemoryClientStore();
  await clients.register({
    clientId: DEMO_AGENT.keyId,
    kind: "api_key",
    secret: DEMO_AGENT.secret,
    name: "Demo notes agent",
  });
  return agentAuth({
    issuer,
    clients,
    providerName: "Portcullis example",
    description: "Notes, for agents a human has approved.",
    capabilities: [
      {
        name: "list_notes",
        description: "Lists every note.",
        handler: () => ({ notes }),
      },
      {
        name: "add_note",
        description: "Adds a note, signed by the agent.",
        input: {
          type: "object",
          properties: { text: { type: "string", minLength: 1, maxLength: 500 } },
          required: ["text"],
          additionalProperties: false,
        },
        output: { type: "object", properties: { count: { type: "integer" } } },
        handler: (args, session) => {
          notes.push({ by: session.principalId, text: args.text as string });
          return { count: notes.length };
        },
      },
      {
        name: "export_notes",
        description: "Downloads the notes as text, from its own URL.",
        location: `${issuer}/exports/notes`,
      },
    ],
    // Ids and outcomes only: events never carry tokens or secrets.
    onEvent: (event) => console.log("agent event", JSON.stringify(event)),
  });
}
