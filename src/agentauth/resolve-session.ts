import {
  bindAuthentication,
  createAuthentication,
  isAuthenticated,
} from "../core/authentication.ts";
import { bindValue } from "../core/context.ts";
import { InvalidOptionsError, StoreUnavailableError } from "../core/errors.ts";
import { directLeg, type Middleware, onAnswer } from "../core/handler.ts";
import { reportError } from "../core/problem.ts";
import { toolNames } from "./capabilities.ts";
import { dpopChallenge, dpopCheck, withDpopNonce } from "./dpop.ts";
import type { AgentRuntime } from "./runtime.ts";
import {
  AGENT_SESSION,
  type AgentDenial,
  emitDenial,
  isDenial,
  NO_STEPS,
  type OpenedSession,
  type OpenSessionSteps,
  openAgentSession,
  presentedToken,
  TOKEN_REQUIRED,
  type TokenUse,
} from "./session.ts";
import { CAPABILITY_TOKEN_TYPE } from "./token.ts";
import { agentError, agentRefusal, type ChallengeTargets } from "./wire.ts";

/** The authority an agent principal carries in the chain's context. */
export const AGENT_AUTHORITY = "AGENT";

/**
 * Protects a capability's `location`: the token must be a capability token
 * whose `aud` is exactly `location`, unused (its `jti` is consumed here), from
 * an active, unexpired grant. Binds the `AgentSession` and the agent
 * principal for the handler behind. Other bearer tokens (not our `typ`) are
 * never verified here: a request without a capability token goes on only if
 * something before (a session, another authenticator) authenticated it, and is
 * answered 401 otherwise. Refusals are emitted as `execute.denied` events
 * carrying `location`. With DPoP on, a token may come under the `DPoP` scheme
 * and its proof is checked against `location`.
 */
export function resolveSession(runtime: AgentRuntime, location: string): Middleware {
  if (typeof location !== "string" || !URL.canParse(location))
    throw new InvalidOptionsError("resolveSession: location must be an absolute URL");
  const audience = new URL(location).href;
  return directLeg((next) => (request, ...rest) => {
    const token = presentedToken(runtime, request);
    if (token === null || token === undefined || !isCapabilityToken(token)) {
      if (isAuthenticated(request)) return next(request, ...rest);
      return refuseAgent(runtime, TOKEN_REQUIRED, audience, request);
    }
    return openRequestSession(runtime, request, token, audience).then((opened) =>
      opened instanceof Response
        ? opened
        : onAnswer(next(request, ...rest), (response) => withDpopNonce(runtime, request, response)),
    );
  });
}

/**
 * `openAgentSession` bound to a request: opens the session of `token` for
 * `audience` and binds it, with the agent principal, to `request`. Answers
 * the response to send instead when the token is refused or a store fails.
 */
export async function openRequestSession(
  runtime: AgentRuntime,
  request: Request,
  token: string,
  audience: string,
  steps: OpenSessionSteps = NO_STEPS,
  use: TokenUse = "single",
): Promise<OpenedSession | Response> {
  const dpop = runtime.dpop;
  // The proof is checked before the token's jti is consumed, and its own jti spent after.
  const proof = dpop === undefined ? undefined : dpopCheck(runtime, dpop, request, token, audience);
  const checked: OpenSessionSteps =
    proof === undefined
      ? steps
      : {
          beforeConsume: async (claims) =>
            (await proof.beforeConsume(claims)) ?? steps.beforeConsume?.(claims),
          afterConsume: async (claims) =>
            (await proof.afterConsume(claims)) ?? steps.afterConsume?.(claims),
        };
  let opened: OpenedSession | AgentDenial;
  try {
    opened = await openAgentSession(runtime, token, audience, checked, use);
  } catch (error) {
    return withDpopNonce(runtime, request, agentFailure(runtime, error, request));
  }
  if (isDenial(opened)) return denialAnswer(runtime, opened, audience, request);
  const { session, claims } = opened;
  bindValue(request, AGENT_SESSION, session);
  bindAuthentication(request, createAuthentication(claims.sub, [AGENT_AUTHORITY], { session }));
  return opened;
}

/** Tells listeners of a refusal at `audience` and answers it. */
export function refuseAgent(
  runtime: AgentRuntime,
  denial: AgentDenial,
  audience: string,
  request?: Request,
): Promise<Response> {
  emitDenial(runtime, denial, audience);
  return denialAnswer(runtime, denial, audience, request);
}

/**
 * The answer to a denial at `audience`, with the DPoP challenge and nonce
 * where DPoP is on.
 */
async function denialAnswer(
  runtime: AgentRuntime,
  denial: AgentDenial,
  audience: string,
  request: Request | undefined,
): Promise<Response> {
  const { dpop } = runtime;
  const targets = challengeTargets(runtime, audience);
  const shown = audience === runtime.urls.mcp ? mcpDenial(denial) : denial;
  if (dpop === undefined) return agentRefusal(shown, targets);
  const answer = agentRefusal(shown, targets, await dpopChallenge(dpop, request, shown));
  return request === undefined ? answer : withDpopNonce(runtime, request, answer);
}

/**
 * A token whose grant no longer backs it, at the MCP endpoint: an invalid
 * token (401 `invalid_token`), as MCP clients recover from a 401 alone, by
 * asking for a token again (which then tells them why, `invalid_grant`).
 * Its event keeps the reason.
 */
function mcpDenial(denial: AgentDenial): AgentDenial {
  const { error } = denial;
  return error === "grant_revoked" ||
    error === "grant_expired" ||
    error === "capability_not_granted"
    ? { ...denial, error: "invalid_jwt" }
    : denial;
}

/**
 * Where a 401 at `audience` sends the agent: discovery, and for the execute
 * URL and the MCP endpoint, their protected resource metadata and the scopes
 * to ask for. A capability's own location is the application's resource,
 * with no metadata of ours to point to.
 */
function challengeTargets(runtime: AgentRuntime, audience: string): ChallengeTargets {
  const { urls } = runtime;
  if (audience === urls.execute && urls.executeMetadata !== undefined)
    return {
      discovery: urls.discovery,
      resourceMetadata: urls.executeMetadata,
      scope: toolNames(runtime.registry).join(" "),
    };
  if (audience === urls.mcp && urls.mcpMetadata !== undefined && runtime.mcp !== undefined)
    return {
      discovery: urls.discovery,
      resourceMetadata: urls.mcpMetadata,
      scope: runtime.mcp.scopes.join(" "),
    };
  return { discovery: urls.discovery };
}

/** The answer when a store or the code behind failed: 503 to retry, or 500 reported. */
export function agentFailure(runtime: AgentRuntime, error: unknown, request: Request): Response {
  if (error instanceof StoreUnavailableError)
    return agentError("temporarily_unavailable", "try again shortly", { retryAfter: 1 });
  reportError(runtime.onError, error, request);
  return agentError("internal_error", "the request could not be completed");
}

/** Whether a compact JWS names our `typ`; a cheap look before any verification. */
function isCapabilityToken(token: string): boolean {
  const dot = token.indexOf(".");
  if (dot <= 0 || dot > 2048) return false;
  try {
    const header = JSON.parse(atob(token.slice(0, dot).replace(/-/g, "+").replace(/_/g, "/")));
    return header?.typ === CAPABILITY_TOKEN_TYPE;
  } catch {
    return false;
  }
}
