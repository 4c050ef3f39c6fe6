/** What the MCP example agents share: the tool and its arguments from the command line, and the service. */

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
