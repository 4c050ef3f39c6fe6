/**
 * The MCP endpoint on a real socket, and the MCP SDKs' own clients to drive
 * it: `@modelcontextprotocol/sdk` 1.32 (the 2025 protocol era) and
 * `@modelcontextprotocol/client` 2.4, in the 2025 era and in 2026-07-28.
 */

import * as modern from "@modelcontextprotocol/client";
import { ClientCredentialsProvider as LegacyCredentials } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { bindAuthentication, createAuthentication, type Handler } from "portcullis";
import {
  type AgentAuth,
  type AgentAuthOptions,
  type AgentEvent,
  agentAuth,
  type CapabilityDefinition,
} from "portcullis/agentauth";
import { type McpEndpoint, type McpEndpointOptions, mcpEndpoint } from "portcullis/mcp";
import { MemoryClientStore } from "portcullis/oauth2";
import { afterAll } from "vitest";
import { type Served, serveFetch } from "../serve.ts";

export const AGENT_ID = "agent-1";
export const AGENT_SECRET = "agent-one-secret-0123456789";
export const OTHER_ID = "agent-2";
export const OTHER_SECRET = "agent-two-secret-0123456789";

/** What the handlers ran, in order (`add_note:<text>`, `read_notes`, ...). */
export interface Site {
  /** The issuer. */
  readonly base: string;
  /** This instance's own address (differs from `base` when given another issuer). */
  readonly socket: string;
  readonly mcpUrl: string;
  readonly agents: AgentAuth;
  readonly mcp: McpEndpoint;
  readonly events: AgentEvent[];
  readonly ran: string[];
  readonly errors: unknown[];
  /** Every request the server saw: method, path and `authorization` / `dpop` headers. */
  readonly seen: { method: string; path: string; headers: Headers }[];
  close(): Promise<void>;
}

/** The tools of every test site (one capability served at its own location, no tool). */
export function capabilities(base: string, ran: string[]): CapabilityDefinition[] {
  return [
    {
      name: "read_notes",
      description: "Lists the notes.",
      output: { type: "object", properties: { notes: { type: "array" } } },
      handler: () => {
        ran.push("read_notes");
        return { notes: ["first"] };
      },
    },
    {
      name: "add_note",
      description: "Adds a note.",
      input: {
        type: "object",
        properties: { text: { type: "string", minLength: 1, maxLength: 50 } },
        required: ["text"],
        additionalProperties: false,
      },
      output: { type: "object", properties: { count: { type: "integer" } } },
      handler: (args) => {
        ran.push(`add_note:${args.text}`);
        return { count: 2 };
      },
    },
    {
      name: "count_notes",
      description: "Counts the notes.",
      output: { type: "integer" },
      handler: () => {
        ran.push("count_notes");
        return 1;
      },
    },
    {
      name: "fail",
      description: "Always fails.",
      handler: () => {
        ran.push("fail");
        throw new Error("database password is hunter2");
      },
    },
    { name: "export_notes", description: "Exports the notes.", location: `${base}/files/export` },
  ];
}

/** agentAuth with an MCP resource and the MCP endpoint in front, on its own socket. */
export async function mcpSite(
  options: Partial<AgentAuthOptions> = {},
  endpoint: McpEndpointOptions = {},
  issuer?: string,
  /** What serves the requests, given the endpoint's router (default: the router alone). */
  wrap?: (router: (request: Request) => Promise<Response>, agents: AgentAuth) => Handler,
): Promise<Site> {
  let route: Handler = async () => new Response(null);
  const seen: Site["seen"] = [];
  const served: Served = await serveFetch((request, ...rest) => {
    seen.push({
      method: request.method,
      path: new URL(request.url).pathname,
      headers: new Headers(request.headers),
    });
    return route(request, ...rest);
  });
  const base = issuer ?? served.url;
  const events: AgentEvent[] = [];
  const ran: string[] = [];
  const errors: unknown[] = [];
  const clients = new MemoryClientStore();
  await clients.register({ clientId: AGENT_ID, secret: AGENT_SECRET, name: "Agent one" });
  await clients.register({ clientId: OTHER_ID, secret: OTHER_SECRET, name: "Agent two" });
  const agents = await agentAuth({
    issuer: base,
    clients,
    pollIntervalSeconds: 1,
    mcp: {},
    // With the authorization-code grant on, the RFC 8414 document names the authorization
    // endpoint the SDKs require, and their stock discovery runs as it would for any client.
    authorizationCode: {
      consentPage: () => new Response("consent", { headers: { "content-type": "text/plain" } }),
      signedInAt: () => undefined,
      signInPath: "/login",
    },
    capabilities: capabilities(base, ran),
    onEvent: (event) => events.push(event),
    onError: (error) => errors.push(error),
    onStoreError: () => {},
    ...options,
  });
  const mcp = await mcpEndpoint(agents, endpoint);
  const router = async (request: Request) =>
    (await mcp.route(request)) ?? new Response(null, { status: 404 });
  const handler = wrap === undefined ? undefined : wrap(router, agents);
  route = handler ?? router;
  return {
    base,
    socket: served.url,
    mcpUrl: mcp.url,
    agents,
    mcp,
    events,
    ran,
    errors,
    seen,
    close: async () => {
      await mcp.close();
      await served.close();
    },
  };
}

/** Approves `userCode` as `human` would on the approval page: the review, then the form. */
export async function approveAs(agents: AgentAuth, userCode: string, human = "alice") {
  const issuer = agents.runtime.urls.issuer;
  const shown = new Request(`${issuer}/agent/approve`, { method: "POST" });
  bindAuthentication(shown, createAuthentication(human));
  const review = await agents.describe(shown, userCode);
  const form = new Request(`${issuer}/agent/approve`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      user_code: userCode,
      action: "approve",
      review: review.ok ? review.reviewToken : "",
    }).toString(),
  });
  bindAuthentication(form, createAuthentication(human));
  const answer = await agents.approve(form);
  if (answer.status !== 200) throw new Error(`approval refused: ${answer.status}`);
}

/** A `fetch` that keeps every request it sends and the answer's status and fields. */
export function recordingFetch() {
  const log: {
    method: string;
    url: string;
    headers: Headers;
    body: string;
    status: number;
    answered: Headers;
  }[] = [];
  const fetchAndRecord = async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    const body = request.method === "POST" ? await request.clone().text() : "";
    const response = await fetch(request);
    log.push({
      method: request.method,
      url: request.url,
      headers: request.headers,
      body,
      status: response.status,
      answered: new Headers(response.headers),
    });
    return response;
  };
  return { log, fetch: fetchAndRecord };
}

/** The MCP client lines and protocol eras the tests run against. */
export const LINES = ["sdk 1.32", "client 2.4 (2025 era)", "client 2.4 (2026-07-28)"] as const;
export type Line = (typeof LINES)[number];

/** What the tests use of either line's `Client`. */
export interface AnyClient {
  getServerCapabilities(): Record<string, unknown> | undefined;
  listTools(): Promise<{ tools: Record<string, unknown>[] }>;
  callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<{
    isError?: boolean;
    content?: unknown;
    structuredContent?: unknown;
  }>;
  close(): Promise<void>;
}

export interface ClientOptions {
  readonly id?: string;
  readonly secret?: string;
  /** The scope the provider asks for on its first token request. */
  readonly scope?: string;
  readonly fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** 2.4 only: a DPoP session, making the provider's tokens DPoP-bound. */
  readonly dpop?: modern.DpopSession;
}

/** A connected client of `line` for the MCP endpoint at `mcpUrl`, by client credentials. */
export async function connect(
  line: Line,
  base: string,
  mcpUrl: string,
  options: ClientOptions = {},
): Promise<AnyClient & { provider: { tokens(): unknown } }> {
  const credentials = {
    clientId: options.id ?? AGENT_ID,
    clientSecret: options.secret ?? AGENT_SECRET,
    expectedIssuer: base,
    ...(options.scope === undefined ? {} : { scope: options.scope }),
  };
  const url = new URL(mcpUrl);
  if (line === "sdk 1.32") {
    const provider = new LegacyCredentials(credentials);
    const client = new LegacyClient({ name: "test-agent", version: "1.0.0" });
    await client.connect(
      new LegacyTransport(url, {
        authProvider: provider,
        ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
      }),
    );
    return Object.assign(client as unknown as AnyClient, { provider });
  }
  const dpop = options.dpop;
  const provider = new (class extends modern.ClientCredentialsProvider {
    dpop() {
      return dpop;
    }
  })(credentials);
  const client = new modern.Client(
    { name: "test-agent", version: "1.0.0" },
    line === "client 2.4 (2026-07-28)" ? { versionNegotiation: { mode: "auto" } } : {},
  );
  await client.connect(
    new modern.StreamableHTTPClientTransport(url, {
      authProvider: provider,
      ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    }),
  );
  return Object.assign(client as unknown as AnyClient, { provider });
}

/** The protocol version each line announces in `mcp-protocol-version`. */
export const ERA: Record<Line, string> = {
  "sdk 1.32": "2025-11-25",
  "client 2.4 (2025 era)": "2025-11-25",
  "client 2.4 (2026-07-28)": "2026-07-28",
};

/** `mcpSite` for one test file: every site it makes is closed once the file's tests are done. */
export function sitesClosedAfterAll(): (...args: Parameters<typeof mcpSite>) => Promise<Site> {
  const sites: Site[] = [];
  afterAll(async () => {
    for (const made of sites) await made.close();
  });
  return async (...args) => {
    const made = await mcpSite(...args);
    sites.push(made);
    return made;
  };
}

/**
 * A raw JSON-RPC POST to the site's MCP endpoint with `token`, as a Streamable HTTP client sends
 * it; `version` undefined sends no `mcp-protocol-version`, as a 2025-03-26 client does.
 */
export function postMcp(
  s: Site,
  token: string,
  version: string | undefined,
  body: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(s.mcpUrl, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(version === undefined ? {} : { "mcp-protocol-version": version }),
      ...headers,
    },
    body,
  });
}

/** The JSON-RPC messages of an answer: its JSON body (one message or a list), or its SSE events. */
export async function rpcAnswers(response: Response): Promise<Record<string, unknown>[]> {
  const text = await response.text();
  if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const parsed = JSON.parse(text) as Record<string, unknown> | Record<string, unknown>[];
    return Array.isArray(parsed) ? parsed : [parsed];
  }
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => JSON.parse(line.slice("data: ".length)) as Record<string, unknown>);
}
