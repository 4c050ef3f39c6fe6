/**
 * Capability authorization for AI agents: agents discover capabilities, a
 * human approves a scoped grant through the OAuth device flow, and agents call
 * capabilities with short-lived, single-use capability tokens.
 *
 * @module portcullis/agentauth
 */

export { bearerToken } from "../core/bearer.ts";
export {
  type AgentAuth,
  type AgentAuthOptions,
  type AgentAuthPaths,
  type AgentAuthStores,
  type AgentMcpOptions,
  agentAuth,
} from "./agent-auth.ts";
export { type AgentCredentialsOptions, agentCredentials } from "./agent-credentials.ts";
export {
  type AgentApprovalLookup,
  type AgentApprovalRequest,
  type AgentApproveOptions,
  agentApproveHandler,
  describeAgentRequest,
} from "./approve.ts";
export type { AgentAuthorizationCodeOptions, ConsentRequest } from "./authorize.ts";
export {
  type Capability,
  type CapabilityDefinition,
  type CapabilityHandler,
  type CapabilityListing,
  CapabilityRegistry,
  defineCapabilities,
} from "./capabilities.ts";
export { type CapabilitiesOptions, capabilitiesHandler } from "./capability-list.ts";
export { type DiscoveryOptions, discoveryHandler } from "./discovery.ts";
export { type AgentDpopOptions, type DpopSettings, dpopSettings } from "./dpop.ts";
export type { AgentEvent, AgentEventListener } from "./events.ts";
export { type ExecuteOptions, executeHandler } from "./execute.ts";
export {
  effectiveStatus,
  type Grant,
  type GrantApproval,
  type GrantLimits,
  type GrantStatus,
  type GrantStore,
  grantToJson,
  MemoryGrantStore,
  type MemoryGrantStoreOptions,
} from "./grants.ts";
export { capabilityRefreshGrant, newAccessTokenIssuer } from "./issuer.ts";
export {
  type McpTool,
  type McpToolOutcome,
  mcpResourceOf,
  mcpScopeChallenge,
  mcpStepUp,
  mcpToolCall,
  mcpTools,
  mcpUnsafeArguments,
  openMcpSession,
  withMcpNonce,
} from "./mcp-resource.ts";
export {
  MemoryPendingRequestStore,
  type MemoryPendingRequestStoreOptions,
  type PendingRequest,
  type PendingRequestStore,
} from "./pending.ts";
export {
  type RefreshRequest,
  type RefreshResult,
  type RefreshTokenConfig,
  refreshCapabilityToken,
} from "./refresh.ts";
export { MemoryReplayStore, type MemoryReplayStoreOptions, type ReplayStore } from "./replay.ts";
export { AGENT_AUTHORITY, resolveSession } from "./resolve-session.ts";
export { type AgentRuntime, type AgentUrls, emitter, type McpSettings } from "./runtime.ts";
export type { ArgumentError, JsonSchema } from "./schema.ts";
export {
  AGENT_SESSION,
  type AgentSession,
  agentSessionFrom,
  type OpenedSession,
} from "./session.ts";
export {
  CAPABILITY_TOKEN_TYPE,
  type CapabilityClaims,
  type CapabilityTokenOptions,
  type CapabilityTokens,
  capabilityTokens,
  type MintedToken,
  type MintInput,
} from "./token.ts";
export {
  AGENT_AUTH_VERSION,
  type AgentErrorCode,
  agentError,
  type DpopChallenge,
} from "./wire.ts";
