import { InvalidOptionsError } from "../core/errors.ts";
import type { CheckedMcp } from "./agent-auth-options.ts";
import { type Capability, type CapabilityRegistry, toolNames } from "./capabilities.ts";
import {
  checkArguments,
  chooseCapability,
  invokeCapability,
  refusalContext,
} from "./capability-call.ts";
import { dpopSchemes, withDpopNonce } from "./dpop.ts";
import { openRequestSession, refuseAgent } from "./resolve-session.ts";
import type { AgentRuntime, McpSettings } from "./runtime.ts";
import { checkPlainArguments, type JsonSchema } from "./schema.ts";
import {
  type AgentSession,
  emitDenial,
  INVALID_TOKEN,
  type OpenedSession,
  presentedToken,
  TOKEN_REQUIRED,
} from "./session.ts";
import { agentError, insufficientScopeChallenges } from "./wire.ts";

/**
 * The MCP endpoint's side of agent authorization, for any MCP server library:
 * who the caller is (`openMcpSession`), and what a `tools/call` may do
 * (`mcpToolCall`). `portcullis/mcp` binds them to the MCP SDK.
 */

const WHERE = "agentAuth: mcp";

/** `mcp` checked against the capabilities: the scopes are tools, every tool's input an object. */
export function mcpSettings(options: CheckedMcp, registry: CapabilityRegistry): McpSettings {
  const tools = toolNames(registry);
  if (tools.length === 0)
    throw new InvalidOptionsError(`${WHERE}: no capability has a handler, so there is no tool`);
  for (const name of tools) {
    const input = registry.get(name)?.input;
    // MCP: a tool's inputSchema is an object schema.
    if (input !== undefined && (typeof input !== "object" || input.type !== "object"))
      throw new InvalidOptionsError(
        `${WHERE}: capability ${JSON.stringify(name)} takes input that is not an object schema, which an MCP tool cannot`,
      );
  }
  const scopes = options.scopes ?? tools;
  for (const scope of scopes)
    if (!tools.includes(scope))
      throw new InvalidOptionsError(`${WHERE}: scopes names ${JSON.stringify(scope)}, no tool`);
  return Object.freeze({
    scopes: Object.freeze([...new Set(scopes)]),
    singleUseBearer: options.singleUseBearer,
  });
}

/** A capability as an MCP tool. */
export interface McpTool {
  readonly name: string;
  readonly description: string;
  /** The capability's `input`, or `{"type": "object"}` when it has none. */
  readonly inputSchema: JsonSchema;
  /** The capability's `output`, when it is an object schema (MCP's `structuredContent`). */
  readonly outputSchema?: JsonSchema;
}

const ANY_OBJECT: JsonSchema = Object.freeze({ type: "object" });

/** Every capability with a handler as a tool, sorted by name; `location` capabilities are none. */
export function mcpTools(runtime: AgentRuntime): readonly McpTool[] {
  return Object.freeze(
    toolNames(runtime.registry).map((name) => {
      const capability = runtime.registry.get(name) as Capability;
      const { output } = capability;
      return Object.freeze({
        name,
        description: capability.description,
        inputSchema: capability.input ?? ANY_OBJECT,
        ...(typeof output === "object" && output.type === "object" ? { outputSchema: output } : {}),
      });
    }),
  );
}

/** The MCP endpoint's URL and rules, or a configuration error naming what is missing. */
export function mcpResourceOf(runtime: AgentRuntime): {
  readonly url: string;
  readonly metadataUrl: string;
  readonly settings: McpSettings;
} {
  const { mcp: url, mcpMetadata: metadataUrl } = runtime.urls;
  if (url === undefined || metadataUrl === undefined || runtime.mcp === undefined)
    throw new InvalidOptionsError(
      "mcpEndpoint: this agentAuth declares no MCP resource; give agentAuth the mcp option",
    );
  return { url, metadataUrl, settings: runtime.mcp };
}

/**
 * Opens the session of a request to the MCP endpoint through the one
 * agent-session path: the token from `Authorization` only (`Bearer`, or
 * `DPoP` with a proof when DPoP is on; never the query string), for the MCP
 * audience, reused until it expires unless `singleUseBearer`, the grant read
 * again now. The response to send instead when it is refused: a 401 whose
 * first challenge names the resource metadata and scopes, a 403, or a 503.
 */
export async function openMcpSession(
  runtime: AgentRuntime,
  request: Request,
): Promise<OpenedSession | Response> {
  const { url, settings } = mcpResourceOf(runtime);
  const token = presentedToken(runtime, request);
  if (token === null) return refuseAgent(runtime, TOKEN_REQUIRED, url, request);
  if (token === undefined) return refuseAgent(runtime, INVALID_TOKEN, url, request);
  const use = settings.singleUseBearer ? "single" : "reusable";
  return openRequestSession(runtime, request, token, url, {}, use);
}

/** Adds the current DPoP nonce to an MCP answer to a DPoP request, when nonces are on. */
export function withMcpNonce(
  runtime: AgentRuntime,
  request: Request,
  response: Response,
): Promise<Response> {
  return withDpopNonce(runtime, request, response);
}

/**
 * Whether a `tools/call` of `name` needs more scope: the tool names it
 * when the capability is outside token ∩ grant (the MCP step-up, answered
 * 403 `insufficient_scope` before the tool runs), `undefined` when it may
 * run or is no tool of ours (the MCP server answers that itself).
 */
export function mcpScopeChallenge(
  runtime: AgentRuntime,
  opened: OpenedSession,
  name: string,
): readonly [string] | undefined {
  const chosen = chooseCapability(runtime, opened, name);
  if (!("error" in chosen) || chosen.error !== "capability_not_granted") return undefined;
  emitDenial(runtime, chosen, runtime.urls.mcp as string);
  return [name];
}

/**
 * The MCP step-up answer to a `tools/call` that `mcpScopeChallenge` named
 * scopes for: 403 `insufficient_scope` with the scopes to ask for and the
 * resource metadata, under each scheme the endpoint accepts (`Bearer`, and
 * `DPoP` when DPoP is on; `DPoP` alone when it is required), so a client
 * steps up with the kind of token it holds.
 */
export function mcpStepUp(runtime: AgentRuntime, scopes: readonly string[]): Response {
  const { metadataUrl } = mcpResourceOf(runtime);
  const { dpop } = runtime;
  return agentError("capability_not_granted", "the token's scope does not include this tool", {
    challenges: insufficientScopeChallenges(
      metadataUrl,
      scopes.join(" "),
      dpop === undefined ? undefined : dpopSchemes(dpop),
    ),
  });
}

/**
 * Whether the arguments of a `tools/call` are refused whatever the tool's
 * schema: a prototype key (`__proto__`, `constructor`, `prototype`) at any
 * depth, or nesting past the argument check's bound. An MCP library's own
 * parsing may drop a `__proto__` key (JavaScript takes it for the object's
 * prototype) and run the tool on what is left: hand such arguments to
 * `mcpToolCall` as parsed from the body (`JSON.parse` keeps the key as data),
 * never to the library.
 */
export function mcpUnsafeArguments(args: unknown): boolean {
  return checkPlainArguments(args).length > 0;
}

/** What a `tools/call` came to, for the MCP server to answer. */
export type McpToolOutcome =
  /** The handler ran: its data. */
  | { readonly outcome: "ok"; readonly data: unknown }
  /** The arguments failed the input schema: the messages, for the model to correct itself. */
  | { readonly outcome: "invalid_arguments"; readonly messages: readonly string[] }
  /** The handler threw: reported to `onError`; only a fixed text goes back. */
  | { readonly outcome: "failed" }
  /** Not a tool the session may call (the step-up challenge was not answered first). */
  | { readonly outcome: "refused"; readonly message: string };

/**
 * A `tools/call` through the same checks as execute: the capability in
 * token ∩ grant (as this request's session read it from the store), its
 * arguments against its input schema, then its handler with the session.
 * Events carry `via: "mcp"`.
 */
export async function mcpToolCall(
  runtime: AgentRuntime,
  opened: OpenedSession,
  name: string,
  args: unknown,
  request: Request,
): Promise<McpToolOutcome> {
  const mcpUrl = runtime.urls.mcp as string;
  const chosen = chooseCapability(runtime, opened, name);
  if ("error" in chosen) {
    emitDenial(runtime, chosen, mcpUrl);
    return { outcome: "refused", message: chosen.message };
  }
  const session: AgentSession = opened.session;
  const given = args ?? {};
  const invalid = checkArguments(chosen, given, session);
  if (invalid !== undefined) {
    emitDenial(runtime, { ...invalid, ...refusalContext(session, name) }, mcpUrl);
    const errors = (invalid.extra?.errors ?? []) as readonly {
      message?: unknown;
      path?: unknown;
    }[];
    return { outcome: "invalid_arguments", messages: errors.map(describeError) };
  }
  const called = await invokeCapability(
    runtime,
    request,
    chosen,
    given as Readonly<Record<string, unknown>>,
    session,
    "mcp",
  );
  return called.ok ? { outcome: "ok", data: called.data } : { outcome: "failed" };
}

function describeError(error: { message?: unknown; path?: unknown }): string {
  const where = typeof error.path === "string" && error.path !== "" ? `${error.path}: ` : "";
  return `${where}${typeof error.message === "string" ? error.message : "invalid"}`;
}
