import {
  bindAuthentication,
  createAuthentication,
  isAuthenticated,
} from "../core/authentication.ts";
import { bearerToken } from "../core/bearer.ts";
import { bindValue } from "../core/context.ts";
import { InvalidOptionsError, JwtInvalidError, StoreUnavailableError } from "../core/errors.ts";
import type { Middleware } from "../core/handler.ts";
import { reportError } from "../core/problem.ts";
import { effectiveStatus } from "./grants.ts";
import { consumeTokenId } from "./replay.ts";
import type { AgentRuntime } from "./runtime.ts";
import { AGENT_SESSION, type AgentSession } from "./session.ts";
import { CAPABILITY_TOKEN_TYPE } from "./token.ts";
import { agentChallenges, agentError } from "./wire.ts";

/** The authority an agent principal carries in the chain's context. */
export const AGENT_AUTHORITY = "AGENT";

/**
 * Protects a capability's `location`: the token must be a capability token
 * whose `aud` is exactly `location`, unused (its `jti` is consumed here), from
 * an active, unexpired grant. Binds the `AgentSession` and the agent
 * principal for the handler behind. Other bearer tokens (not our `typ`) are
 * never verified here: a request without a capability token goes on only if
 * something before (a session, another authenticator) authenticated it, and is
 * answered 401 otherwise.
 */
export function resolveSession(runtime: AgentRuntime, location: string): Middleware {
  if (typeof location !== "string" || !URL.canParse(location))
    throw new InvalidOptionsError("resolveSession: location must be an absolute URL");
  const audience = new URL(location).href;
  const challenges = (invalid: boolean) => agentChallenges(runtime.urls.discovery, invalid);
  return (next) =>
    async (request, ...rest) => {
      const token = bearerToken(request);
      if (token === null || token === undefined || !isCapabilityToken(token)) {
        if (isAuthenticated(request)) return next(request, ...rest);
        return agentError("authentication_required", "a capability token is required", {
          challenges: challenges(false),
        });
      }
      try {
        let claims: Awaited<ReturnType<typeof runtime.tokens.verify>>;
        try {
          claims = await runtime.tokens.verify(token, audience);
        } catch (error) {
          if (error instanceof JwtInvalidError)
            return agentError("invalid_jwt", "the capability token is invalid", {
              challenges: challenges(true),
            });
          throw error;
        }
        const now = runtime.now();
        if (!(await consumeTokenId(runtime, claims)))
          return agentError("invalid_jwt", "the capability token was already used", {
            challenges: challenges(true),
          });
        const grant = await runtime.store(() => runtime.grants.get(claims.grant_id));
        if (grant === undefined || grant.principalId !== claims.sub)
          return agentError("grant_revoked", "the grant is no longer valid");
        const status = effectiveStatus(grant, now);
        if (status !== "active")
          return agentError(
            status === "expired" ? "grant_expired" : "grant_revoked",
            `the grant is ${status}`,
          );
        const capabilities = claims.capabilities.filter((name) =>
          grant.capabilities.includes(name),
        );
        if (capabilities.length === 0)
          return agentError("capability_not_granted", "no capability of this token is granted");
        const session: AgentSession = Object.freeze({
          principalId: claims.sub,
          grantId: grant.grantId,
          approvedBy: grant.approvedBy,
          capabilities: Object.freeze(capabilities),
          tokenId: claims.jti,
          expiresAt: claims.exp,
        });
        bindValue(request, AGENT_SESSION, session);
        bindAuthentication(
          request,
          createAuthentication(claims.sub, [AGENT_AUTHORITY], { session }),
        );
        return next(request, ...rest);
      } catch (error) {
        if (error instanceof StoreUnavailableError)
          return agentError("temporarily_unavailable", "try again shortly", { retryAfter: 1 });
        reportError(runtime.onError, error, request);
        return agentError("internal_error", "the request could not be completed");
      }
    };
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
