import type {
  AuthInfo,
  CallToolResult,
  jsonSchemaValidator,
  McpServerFactory,
  ServerContext,
} from "@modelcontextprotocol/server";
import {
  type AgentAuth,
  type AgentRuntime,
  type McpTool,
  type McpToolOutcome,
  mcpResourceOf,
  mcpScopeChallenge,
  mcpStepUp,
  mcpToolCall,
  mcpTools,
  mcpUnsafeArguments,
  type OpenedSession,
  openMcpSession,
  withMcpNonce,
} from "../agentauth/index.ts";
import { readJsonBody } from "../core/body.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { bodyLimitOption, rejectUnknownKeys } from "../core/options.ts";
import { parseOrigin } from "../core/origin.ts";
import { pathOfUrl } from "../core/path.ts";
import { reportError } from "../core/problem.ts";
import { loadMcpSdk, type McpSdk } from "./sdk.ts";

/**
 * Options of `mcpEndpoint`.
 *
 * @example
 * ```ts
 * const mcp = await mcpEndpoint(agents, {
 *   allowedOrigins: ["https://notes.example.com"],
 *   name: "notes",
 *   version: "1.4.0",
 * });
 * ```
 */
export interface McpEndpointOptions {
  /**
   * Origins whose pages may call the endpoint (`scheme://host[:port]`). A
   * request with any other `Origin` is refused 403 (Streamable HTTP requires
   * the check, against DNS rebinding); one with none (no browser) goes on.
   *
   * @default the issuer's origin only
   */
  readonly allowedOrigins?: readonly string[];
  /**
   * The server's name in MCP's `serverInfo`.
   *
   * @default the issuer's host
   */
  readonly name?: string;
  /**
   * The server's version in MCP's `serverInfo`.
   *
   * @default "1.0.0"
   */
  readonly version?: string;
  /**
   * Largest request body, in bytes (256 or more; 413 beyond).
   *
   * @default 65_536
   */
  readonly maxBodyBytes?: number;
}

/** The MCP endpoint, served on its own or in front of the agent endpoints. */
export interface McpEndpoint {
  /** The MCP endpoint; `undefined` for other paths, which `agents.route` then answers. */
  readonly route: (request: Request) => Promise<Response | undefined>;
  /** The MCP endpoint alone, whatever the path. */
  readonly handler: Handler;
  /** The endpoint's path and URL (its resource identifier). */
  readonly path: string;
  readonly url: string;
  /** Ends in-flight exchanges. */
  close(): Promise<void>;
}

// Arguments are checked by the capability's own validator in `mcpToolCall`, with its events;
// the schema given to the MCP server is for `tools/list` only.
const PUBLISH_ONLY: jsonSchemaValidator = {
  getValidator: () => (input: unknown) => ({
    valid: true,
    data: input as never,
    errorMessage: undefined,
  }),
};

const FAILED = "the capability failed";

/** One HTTP request's exchange with the SDK, for the server the factory makes for it. */
interface Exchange {
  readonly opened: OpenedSession;
  /** Arguments the SDK was not given, by JSON-RPC id: they are checked as the client sent them. */
  readonly withheld: ReadonlyMap<unknown, unknown>;
  /** The scopes of the step-up the SDK answered, when it answered one. */
  stepUp?: readonly string[];
}

/** The one revision with JSON-RPC batches; 2025-06-18 removed them. A request without a version is of it. */
const BATCH_REVISION = "2025-03-26";

/**
 * An MCP endpoint (Streamable HTTP, stateless, both protocol eras) whose tools
 * are the capabilities of `agents` with a handler. Portcullis authenticates
 * every request (the capability token for the MCP audience, its DPoP proof,
 * the grant read again) and decides every `tools/call` (token ∩ grant, the
 * arguments against the input schema); the MCP SDK speaks the protocol.
 * Declare the resource with `agentAuth`'s `mcp` option first.
 *
 * The SDK (`@modelcontextprotocol/server`, an optional peer dependency) is
 * loaded when the first endpoint is built, not with `portcullis/mcp`: without
 * it, building rejects with `MissingPeerError`, one line naming the package to
 * install, as any other bad configuration does.
 */
export async function mcpEndpoint(
  agents: AgentAuth,
  options: McpEndpointOptions = {},
): Promise<McpEndpoint> {
  const runtime = agents.runtime;
  const { url, metadataUrl, settings: resource } = mcpResourceOf(runtime);
  const single = resource.singleUseBearer;
  const settings = checkOptions(runtime, options);
  const registered = mcpTools(runtime);
  const exchanges = new WeakMap<AuthInfo, Exchange>();
  const serve = (sdk: McpSdk) => {
    const tools = registered.map((tool) => ({ tool, config: toolConfig(sdk, tool) }));
    const factory: McpServerFactory = ({ authInfo, requestInfo }) => {
      const exchange = authInfo === undefined ? undefined : exchanges.get(authInfo);
      // Stateless: no stream stays open to send notifications/tools/list_changed on, and the tools
      // are the registry's, fixed when the endpoint is built.
      const server = new sdk.McpServer(
        { name: settings.name, version: settings.version },
        { capabilities: { tools: { listChanged: false } } },
      );
      for (const { tool, config } of tools)
        server.registerTool(
          tool.name,
          {
            ...config,
            // The MCP step-up: outside token ∩ grant, 403 insufficient_scope before the tool runs.
            scopeChallenge: () => {
              if (exchange === undefined) return undefined;
              const scopes = mcpScopeChallenge(runtime, exchange.opened, tool.name);
              if (scopes === undefined) return undefined;
              exchange.stepUp ??= scopes;
              return { scopes };
            },
          },
          async (args: unknown, context: ServerContext) => {
            if (exchange === undefined || requestInfo === undefined) return toolError(FAILED);
            const { id } = context.mcpReq;
            const given = exchange.withheld.has(id) ? exchange.withheld.get(id) : args;
            const outcome = await mcpToolCall(
              runtime,
              exchange.opened,
              tool.name,
              given,
              requestInfo,
            );
            return toolResult(tool, outcome);
          },
        );
      return server;
    };
    return sdk.createMcpHandler(factory, {
      maxRequestBodySize: settings.maxBodyBytes,
      onerror: () => {},
    });
  };
  const served = serve(await loadMcpSdk());
  const path = pathOfUrl(url);
  const handler: Handler = async (request) => {
    const origin = request.headers.get("origin");
    if (origin !== null && !settings.origins.has(origin)) return forbiddenOrigin();
    const opened = await openMcpSession(runtime, request);
    if (opened instanceof Response) return opened;
    // Read here, bounded, once the caller is known: the SDK then parses nothing again.
    const body =
      request.method === "POST" ? await readBody(request, settings.maxBodyBytes) : undefined;
    if (body instanceof Response) return withMcpNonce(runtime, request, body);
    const withheld = new Map<unknown, unknown>();
    const refused = body === undefined ? undefined : admit(body.value, request, single, withheld);
    if (refused !== undefined) return withMcpNonce(runtime, request, refused);
    const authInfo: AuthInfo = {
      // The token's id, not the token: nothing behind the SDK needs to be able to present it.
      token: opened.claims.jti,
      clientId: opened.session.principalId,
      scopes: [...opened.session.capabilities],
      expiresAt: opened.session.expiresAt,
      resource: new URL(url),
      resourceMetadataUrl: metadataUrl,
    };
    const exchange: Exchange = { opened, withheld };
    exchanges.set(authInfo, exchange);
    let answer: Response;
    try {
      answer = await served.fetch(request, {
        authInfo,
        ...(body === undefined ? {} : { parsedBody: body.value }),
      });
    } catch (error) {
      reportError(runtime.onError, error, request);
      answer = jsonRpcError(500, -32603, "the request could not be completed");
    }
    // The SDK's step-up names Bearer only; ours names the schemes this resource accepts.
    if (exchange.stepUp !== undefined && answer.status === 403)
      answer = mcpStepUp(runtime, exchange.stepUp);
    return withMcpNonce(runtime, request, answer);
  };
  return Object.freeze({
    route: async (request: Request) =>
      pathOfUrl(request.url) === path ? handler(request) : agents.route(request),
    handler,
    path,
    url,
    close: () => served.close(),
  });
}

interface Settings {
  readonly origins: ReadonlySet<string>;
  readonly name: string;
  readonly version: string;
  readonly maxBodyBytes: number;
}

const WHERE = "mcpEndpoint";

function checkOptions(runtime: AgentRuntime, options: McpEndpointOptions): Settings {
  rejectUnknownKeys(WHERE, options, ["allowedOrigins", "name", "version", "maxBodyBytes"]);
  const issuer = new URL(runtime.urls.issuer);
  const allowed = options.allowedOrigins ?? [issuer.origin];
  if (!Array.isArray(allowed))
    throw new InvalidOptionsError(`${WHERE}: allowedOrigins must be a list of origins`);
  for (const name of ["name", "version"] as const) {
    const value = options[name];
    if (value !== undefined && (typeof value !== "string" || value === ""))
      throw new InvalidOptionsError(`${WHERE}: ${name} must be a non-empty string`);
  }
  return {
    origins: new Set(
      allowed.map((origin, index) => parseOrigin(`${WHERE}: allowedOrigins[${index}]`, origin)),
    ),
    name: options.name ?? issuer.host,
    version: options.version ?? "1.0.0",
    maxBodyBytes: bodyLimitOption(WHERE, options.maxBodyBytes, 65_536, 256),
  };
}

function toolConfig(sdk: McpSdk, tool: McpTool) {
  return {
    description: tool.description,
    inputSchema: sdk.fromJsonSchema(tool.inputSchema as never, PUBLISH_ONLY),
    ...(tool.outputSchema === undefined
      ? {}
      : { outputSchema: sdk.fromJsonSchema(tool.outputSchema as never, PUBLISH_ONLY) }),
  };
}

/** A tool's outcome as MCP's result: bad arguments and failures are tool errors, for the model. */
function toolResult(tool: McpTool, outcome: McpToolOutcome): CallToolResult {
  switch (outcome.outcome) {
    case "ok": {
      const { data } = outcome;
      const structured =
        tool.outputSchema !== undefined &&
        typeof data === "object" &&
        data !== null &&
        !Array.isArray(data);
      return {
        content: [{ type: "text", text: JSON.stringify(data) }],
        ...(structured ? { structuredContent: data as Record<string, unknown> } : {}),
      };
    }
    case "invalid_arguments":
      return toolError(
        `the arguments do not match the input schema: ${outcome.messages.join("; ")}`,
      );
    case "failed":
      return toolError(FAILED);
    case "refused":
      return toolError(outcome.message);
  }
}

function toolError(text: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text }] };
}

const BODY_REFUSALS = {
  media_type: [415, -32000, "the body must be application/json"],
  too_large: [413, -32000, "the body is too large"],
  unreadable: [400, -32700, "the body could not be read"],
  malformed: [400, -32700, "the body is not JSON"],
} as const;

/** The JSON body of a POST, or the JSON-RPC error answering why it cannot be read. */
async function readBody(
  request: Request,
  maxBytes: number,
): Promise<{ readonly value: unknown } | Response> {
  const read = await readJsonBody(request, maxBytes);
  if (read.ok) return { value: read.value };
  const [status, code, message] = BODY_REFUSALS[read.failure];
  return jsonRpcError(status, code, message);
}

/**
 * What a body may hold before the SDK sees it. A list of messages (a JSON-RPC
 * batch) only under 2025-03-26, the one revision that has batches, and never
 * with a single-use token: one token, one message. A `tools/call` whose
 * arguments are refused whatever the schema (a prototype key) has them
 * withheld from the SDK, whose parsing would drop `__proto__` and run the tool
 * on the rest: the tool call checks them as sent. The answer when refused.
 */
function admit(
  body: unknown,
  request: Request,
  singleUse: boolean,
  withheld: Map<unknown, unknown>,
): Response | undefined {
  if (!Array.isArray(body)) {
    withhold(body, withheld);
    return undefined;
  }
  const version = request.headers.get("mcp-protocol-version")?.trim();
  if (version !== undefined && version !== BATCH_REVISION)
    return jsonRpcError(400, -32600, "this protocol revision has no JSON-RPC batches");
  if (singleUse)
    return jsonRpcError(
      400,
      -32600,
      "a single-use token carries one message: send each with a token of its own, not a batch",
    );
  for (const message of body) withhold(message, withheld);
  return undefined;
}

function withhold(message: unknown, withheld: Map<unknown, unknown>): void {
  if (!isRecord(message) || message.method !== "tools/call") return;
  const { params } = message;
  if (!isRecord(params) || !mcpUnsafeArguments(params.arguments)) return;
  withheld.set(message.id, params.arguments);
  params.arguments = {};
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function forbiddenOrigin(): Response {
  return jsonRpcError(403, -32000, "this origin may not call the MCP endpoint");
}

function jsonRpcError(status: number, code: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
}
