import type { ContextSource } from "../core/context.ts";
import { contextFrom, createContextKey } from "../core/context.ts";

/**
 * What a capability handler learns of its caller. `capabilities` is exactly
 * the capabilities both the token claims and the stored grant still holds;
 * the grant itself is never handed out.
 */
export interface AgentSession {
  /** The agent's principal id: its OAuth client id or API key id. */
  readonly principalId: string;
  readonly grantId: string;
  /** The human who approved the grant. */
  readonly approvedBy: string;
  readonly capabilities: readonly string[];
  /** The token's `jti`. */
  readonly tokenId: string;
  /** When the token expires, seconds since the epoch. */
  readonly expiresAt: number;
}

/** Where `resolveSession` binds the session for the handler behind it. */
export const AGENT_SESSION = createContextKey<AgentSession>("portcullis.agent-session");

/** The agent session `resolveSession` bound to this request, if any. */
export function agentSessionFrom(source: ContextSource): AgentSession | undefined {
  return contextFrom(source).get(AGENT_SESSION);
}
