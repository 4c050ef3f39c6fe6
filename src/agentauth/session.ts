import { bearerOrDpopToken, bearerToken } from "../core/bearer.ts";
import type { ContextSource } from "../core/context.ts";
import { contextFrom, createContextKey } from "../core/context.ts";
import { JwtInvalidError } from "../core/errors.ts";
import { effectiveStatus, type Grant } from "./grants.ts";
import { consumeTokenId } from "./replay.ts";
import type { AgentRuntime } from "./runtime.ts";
import type { CapabilityClaims } from "./token.ts";
import type { AgentErrorCode } from "./wire.ts";

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

/** Why an agent was refused: the wire error, and the ids its event may carry. */
export interface AgentDenial {
  readonly error: AgentErrorCode;
  readonly message: string;
  readonly principalId?: string;
  readonly grantId?: string;
  readonly capability?: string;
  /** Further members of the wire answer (`location`, `errors`). */
  readonly extra?: Readonly<Record<string, unknown>>;
  /** The 401's error belongs to the DPoP challenge (a proof or binding problem). */
  readonly challenge?: "DPoP";
}

/** A session opened from a capability token, with what it was opened from. */
export interface OpenedSession {
  readonly session: AgentSession;
  readonly claims: CapabilityClaims;
  readonly grant: Grant;
}

/** Steps a caller adds to `openAgentSession`. */
export interface OpenSessionSteps {
  /**
   * Runs on the verified claims before the token's `jti` is consumed, so a
   * request it refuses (e.g. a proof of possession that fails) does not burn
   * the token.
   */
  readonly beforeConsume?: (claims: CapabilityClaims) => Promise<AgentDenial | undefined>;
  /**
   * Runs once the token's `jti` is consumed by this request (for a reusable
   * token, once it verified): what is recorded here (a proof's `jti`) is
   * recorded only for a token that was still good, so a spent token cannot be
   * replayed to fill the replay store.
   */
  readonly afterConsume?: (claims: CapabilityClaims) => Promise<AgentDenial | undefined>;
}

/** `openAgentSession` with no steps of its caller's. */
export const NO_STEPS: OpenSessionSteps = Object.freeze({});

/** The one refusal of a token the agent holds nothing with, wherever it is presented. */
const NOT_GRANTED = "the capability is not granted";

/**
 * How a token is used where it is presented: spent on its first request (the
 * execute URL, a capability's location), or reused until it expires (the MCP
 * endpoint, whose clients send one token with every message).
 */
export type TokenUse = "single" | "reusable";

/**
 * The one path from a capability token to an `AgentSession`, for every place
 * a token is presented (the execute URL, a capability's own location, the MCP
 * endpoint): verify it for `audience`, consume its `jti` unless it is
 * reusable there (a replay, or a token older than a process-local replay
 * store, is refused), load its grant, require the grant the token's subject's,
 * active and unexpired, and at least one capability in token ∩ grant. Every
 * denial is emitted as an `execute.denied` event (with `location` or `via`
 * when `audience` is not the execute URL). A store failure throws
 * (`StoreUnavailableError` and others) for the caller to answer.
 */
export async function openAgentSession(
  runtime: AgentRuntime,
  token: string,
  audience: string,
  steps: OpenSessionSteps = NO_STEPS,
  use: TokenUse = "single",
): Promise<OpenedSession | AgentDenial> {
  const opened = await openSteps(runtime, token, audience, steps, use);
  if (isDenial(opened)) emitDenial(runtime, opened, audience);
  return opened;
}

async function openSteps(
  runtime: AgentRuntime,
  token: string,
  audience: string,
  steps: OpenSessionSteps,
  use: TokenUse,
): Promise<OpenedSession | AgentDenial> {
  const claims = await verifyToken(runtime, token, audience);
  if (claims === undefined) return INVALID_TOKEN;
  // A bound token where DPoP is off would be a bearer token again: refused.
  if (claims.cnf !== undefined && runtime.dpop === undefined)
    return {
      error: "invalid_jwt",
      message: "the capability token is DPoP-bound, which this endpoint does not accept",
      principalId: claims.sub,
      grantId: claims.grant_id,
    };
  // Absent steps are not awaited: each await costs a turn and its allocations per request.
  const refused = steps.beforeConsume === undefined ? undefined : await steps.beforeConsume(claims);
  if (refused !== undefined) return refused;
  const who = { principalId: claims.sub, grantId: claims.grant_id };
  // The clock is read once the token verifies: the grant is judged at that moment.
  const now = runtime.now();
  // Single use: the first presentation consumes the token, whatever follows.
  if (use === "single" && !(await consumeTokenId(runtime, claims)))
    return { error: "invalid_jwt", message: "the capability token was already used", ...who };
  const late = steps.afterConsume === undefined ? undefined : await steps.afterConsume(claims);
  if (late !== undefined) return late;
  const grant = await runtime.store(() => runtime.grants.get(claims.grant_id));
  if (grant === undefined || grant.principalId !== claims.sub)
    return { error: "grant_revoked", message: "the grant is no longer valid", ...who };
  const status = effectiveStatus(grant, now);
  if (status === "revoked")
    return { error: "grant_revoked", message: "the grant was revoked", ...who };
  if (status === "expired")
    return { error: "grant_expired", message: "the grant has expired", ...who };
  const capabilities = claims.capabilities.filter((name) => grant.capabilities.includes(name));
  // A token that holds nothing the grant still holds opens no session anywhere.
  if (capabilities.length === 0)
    return { error: "capability_not_granted", message: NOT_GRANTED, ...who };
  const session: AgentSession = Object.freeze({
    principalId: claims.sub,
    grantId: grant.grantId,
    approvedBy: grant.approvedBy,
    capabilities: Object.freeze(capabilities),
    tokenId: claims.jti,
    expiresAt: claims.exp,
  });
  return { session, claims, grant };
}

async function verifyToken(
  runtime: AgentRuntime,
  token: string,
  audience: string,
): Promise<CapabilityClaims | undefined> {
  try {
    return await runtime.tokens.verify(token, audience);
  } catch (error) {
    if (error instanceof JwtInvalidError) return undefined;
    throw error;
  }
}

/** A token that is missing, malformed or fails verification. */
export const INVALID_TOKEN: AgentDenial = Object.freeze({
  error: "invalid_jwt",
  message: "the capability token is invalid",
});

/** No capability token was presented. */
export const TOKEN_REQUIRED: AgentDenial = Object.freeze({
  error: "authentication_required",
  message: "a capability token is required",
});

/** Whether `openAgentSession` refused. */
export function isDenial(opened: OpenedSession | AgentDenial): opened is AgentDenial {
  return !("session" in opened);
}

/**
 * Tells listeners of a denial at `audience`: the execute URL's events carry
 * no location, the MCP endpoint's say `via: "mcp"`, a location's name it.
 */
export function emitDenial(runtime: AgentRuntime, denial: AgentDenial, audience: string): void {
  const { urls } = runtime;
  runtime.emit({
    type: "execute.denied",
    error: denial.error,
    ...(denial.principalId === undefined ? {} : { principalId: denial.principalId }),
    ...(denial.grantId === undefined ? {} : { grantId: denial.grantId }),
    ...(denial.capability === undefined ? {} : { capability: denial.capability }),
    ...(audience === urls.execute
      ? {}
      : audience === urls.mcp
        ? { via: "mcp" as const }
        : { location: audience }),
  });
}

/**
 * The capability token of `Authorization`: under `Bearer`, and under `DPoP`
 * too when DPoP is on. `null` when none is presented, `undefined` when malformed.
 */
export function presentedToken(runtime: AgentRuntime, request: Request): string | null | undefined {
  return runtime.dpop === undefined ? bearerToken(request) : bearerOrDpopToken(request);
}
