/** What the MCP example agents share: the tool and its arguments from the command line, and the service. */
import type { Client } from "@modelcontextprotocol/client";

/** `<tool> [json arguments]` from the command line; exits with the usage line when they are wrong. */
export function toolCallFromArgs(command: string): {
  readonly tool: string;
  readonly toolArguments: Record<string, unknown>;
} {
  const [tool, json] = process.argv.slice(2);
  if (tool === undefined) {
    console.error(`usage: npm run ${command} -- <tool> [json arguments]`);
    process.exit(2);
  }
  try {
    return { tool, toolArguments: json === undefined ? {} : JSON.parse(json) };
  } catch {
    console.error(`the arguments are not JSON: ${json}`);
    process.exit(2);
  }
}

/** The service: PORTCULLIS_URL, or the example on this machine (PORT, 3000 as for `npm start`). */
export function serviceBase(): URL {
  return new URL(process.env.PORTCULLIS_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`);
}

/** Lists the service's tools, calls `tool`, prints both, and ends the process: 1 when the tool failed. */
export async function listAndCall(
  client: Client,
  tool: string,
  toolArguments: Record<string, unknown>,
  say: (line: string) => void,
): Promise<never> {
  const { tools } = await client.listTools();
  say(`tools: ${tools.map((entry) => entry.name).join(", ")}`);
  const result = await client.callTool({ name: tool, arguments: toolArguments });
  const text = result.content.map((part) => (part.type === "text" ? part.text : part.type));
  say(`${tool}${result.isError ? " failed" : ""} → ${text.join(" ")}`);
  await client.close();
  process.exit(result.isError ? 1 : 0);
}
