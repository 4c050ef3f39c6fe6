import type { CapabilityRegistry } from "./capabilities.ts";
import type { DpopSettings } from "./dpop.ts";
import type { AgentEvent, AgentEventListener } from "./events.ts";
import type { GrantLimits, GrantStore } from "./grants.ts";
import type { PendingRequestStore } from "./pending.ts";
import type { ReplayStore } from "./replay.ts";
import type { ApprovalReviews } from "./review.ts";
import type { CapabilityTokens } from "./token.ts";

/** The absolute URLs agents are told about. */
export interface AgentUrls {
  readonly issuer: string;
  readonly discovery: string;
  readonly capabilities: string;
  readonly execute: string;
  /**
   * Where the execute URL's protected resource metadata (RFC 9728) is served;
   * execute's 401s name it. `agentAuth` sets it; absent, they name none.
   */
  readonly executeMetadata?: string;
  /** The MCP endpoint (`agentAuth`'s `mcp` option): a resource whose tools are the capabilities. */
  readonly mcp?: string;
  /** Where the MCP endpoint's protected resource metadata is served. */
  readonly mcpMetadata?: string;
}

/** What the agent handlers share; built once by `agentAuth`, or by hand. */
export interface AgentRuntime {
  readonly urls: AgentUrls;
  readonly registry: CapabilityRegistry;
  readonly tokens: CapabilityTokens;
  readonly grants: GrantStore;
  /**
   * How many active grants one human and one agent may hold.
   *
   * @default { perApprover: 100, perPrincipal: 10_000 }
   */
  readonly grantLimits?: GrantLimits;
  readonly replay: ReplayStore;
  readonly pending: PendingRequestStore;
  /** Issues and checks the proof that a human was shown a request before approving it. */
  readonly reviews: ApprovalReviews;
  /** Runs a store call within the time limit; a failure or timeout throws `StoreUnavailableError`. */
  readonly store: <T>(operation: () => Promise<T>) => Promise<T>;
  readonly emit: (event: AgentEvent) => void;
  readonly now: () => number;
  /**
   * True for a token that may have been used before the replay store was made
   * (`iat` in seconds, `jti`): such a token is refused. Set when the replay
   * store forgets what it held on a restart.
   */
  readonly predatesReplayStore?: (issuedAt: number, jti: string) => boolean;
  readonly onError?: (error: unknown, request: Request) => void;
  /**
   * DPoP for capability tokens (from `dpopSettings`); absent, tokens are
   * bearer tokens and a DPoP-bound one is refused.
   */
  readonly dpop?: DpopSettings;
  /** How the MCP endpoint takes tokens; absent when `agentAuth` serves none. */
  readonly mcp?: McpSettings;
}

/** The MCP resource's rules, checked (`agentAuth`'s `mcp` option). */
export interface McpSettings {
  /** The scopes its metadata and 401 challenges name: what a client asks for first. */
  readonly scopes: readonly string[];
  /** Each token is spent on its first request, as at the execute URL. */
  readonly singleUseBearer: boolean;
}

/** Calls the listener, never letting it change the answer. */
export function emitter(listener: AgentEventListener | undefined): (event: AgentEvent) => void {
  if (listener === undefined) return () => {};
  return (event) => {
    try {
      listener(Object.freeze(event));
    } catch {
      // Events are observations; a failing listener must not fail the request.
    }
  };
}
