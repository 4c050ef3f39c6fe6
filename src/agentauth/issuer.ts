import { randomToken } from "../core/encoding.ts";
import type { AccessTokenIssuer, ClientCredentialsHandler, OAuthFailure } from "../oauth2/index.ts";
import { approveGrant, type GrantRefusal } from "./grant-approval.ts";
import { refreshCapabilityToken, resourceTarget, tokenTarget } from "./refresh.ts";
import type { AgentRuntime } from "./runtime.ts";

/**
 * The access-token issuer of the device flow for agents: on the first
 * successful poll it looks up what the agent asked for with `getByPrincipal`,
 * records the approval as a grant (a new one, or the active grant of this
 * agent and this human, widened: `GrantStore.approve`) and mints the first
 * capability token. The device code is single-use, and the pending request is
 * removed once the grant holds the approval, so one approval makes one token.
 * That token is for the execute URL and carries the grant's executable
 * capabilities; a grant of capabilities served only at their own locations
 * gets one for the location of the first. Tokens for the other locations come
 * from `client_credentials` with `resource`. When a step fails, the device
 * flow gives the approval back, and the retry finds the pending request still
 * there and the grant already holding it. A grant bound to a DPoP key takes
 * an approval only from a poll proving that key: another poll is refused
 * (`invalid_dpop_proof`) before anything changes, and the approval is given back.
 */
export function newAccessTokenIssuer(
  runtime: AgentRuntime,
  grantTtlSeconds = 86_400,
): AccessTokenIssuer {
  return async ({ client, subject, scope, approvedBy, userCodeHash, jkt, resource }) => {
    const now = runtime.now();
    if (subject !== client.clientId)
      return { error: "invalid_grant", description: "the approval was for another principal" };
    const pending = await runtime.store(() => runtime.pending.getByPrincipal(subject, now));
    // A later begin by the same agent superseded this approval's request.
    if (
      pending === undefined ||
      pending.userCodeHash !== userCodeHash ||
      !sameSet(pending.capabilities, scope)
    )
      return { error: "invalid_grant", description: "the approved request is no longer pending" };
    const approved = pending.capabilities.filter((name) => runtime.registry.has(name));
    // Checked before the grant changes: a resource serving nothing approved spends nothing.
    if (resource !== undefined && resourceTarget(runtime, approved, resource) === undefined)
      return { error: "invalid_target", description: "nothing asked for is served at resource" };
    const { approval, announce } = await approveGrant(runtime, {
      grantId: pending.grantId ?? randomToken(16),
      principalId: subject,
      status: "active",
      capabilities: approved,
      approvedBy,
      createdAt: now,
      expiresAt: now + grantTtlSeconds * 1000,
      // The approval poll's key binds the grant: later refreshes must prove it.
      ...(jkt !== undefined && runtime.dpop?.bindGrant === true ? { jkt } : {}),
    });
    if (approval.outcome === "refused") {
      announce();
      return approvalRefusal(approval.reason, jkt);
    }
    const { grant } = approval;
    // What this approval asked for (the grant may hold more from earlier ones), for one
    // audience: the one asked for, else where those capabilities can be used.
    const target =
      resource === undefined
        ? (tokenTarget(runtime.registry, approved, runtime.urls.execute) ?? {
            audience: runtime.urls.execute,
            capabilities: approved,
          })
        : (resourceTarget(runtime, approved, resource) as NonNullable<
            ReturnType<typeof resourceTarget>
          >);
    await runtime.store(() => runtime.pending.delete(subject, pending.userCodeHash));
    const minted = await runtime.tokens.mint({
      principalId: subject,
      grantId: grant.grantId,
      capabilities: target.capabilities,
      audience: target.audience,
      ...(jkt === undefined ? {} : { jkt }),
    });
    // Told once everything held: a failed attempt that is retried tells nothing twice.
    announce();
    runtime.emit({
      type: "token.issued",
      grantId: grant.grantId,
      principalId: subject,
      tokenId: minted.jti,
      capabilities: target.capabilities,
      audience: target.audience,
      via: "device_code",
    });
    return {
      accessToken: minted.token,
      expiresIn: minted.expiresIn,
      scope: target.capabilities,
      tokenType: jkt === undefined ? "Bearer" : "DPoP",
    };
  };
}

/** The poll's answer to an approval the grant store refused (RFC 6749 §5.2, RFC 9449 §5). */
function approvalRefusal(reason: GrantRefusal, jkt: string | undefined): OAuthFailure {
  if (reason === "bound_to_another_key")
    return {
      error: "invalid_dpop_proof",
      description:
        jkt === undefined
          ? "this agent's grant is bound to a DPoP key: poll with a proof of it"
          : "this agent's grant is bound to another DPoP key",
    };
  return {
    error: "access_denied",
    description:
      reason === "approver_limit"
        ? "the person approving holds as many grants as allowed"
        : "this agent holds as many grants as allowed",
  };
}

/**
 * `grant_type=client_credentials` at the token endpoint: the authenticated
 * channel of `refreshCapabilityToken`. `scope` narrows the capabilities,
 * `resource` asks for a capability's `location` as audience.
 */
export function capabilityRefreshGrant(runtime: AgentRuntime): ClientCredentialsHandler {
  return async ({ client, scope, resource, jkt }) => {
    const result = await runtime.store(() =>
      refreshCapabilityToken(undefined, client.clientId, runtime.grants, runtime, {
        ...(scope === undefined || scope.length === 0 ? {} : { capabilities: scope }),
        ...(resource === undefined ? {} : { audience: resource }),
        ...(jkt === undefined ? {} : { jkt }),
      }),
    );
    if (!result.ok) {
      if (result.reason === "no_active_grant")
        return {
          error: "invalid_grant",
          description: "no active grant; ask a human to approve one",
        };
      if (result.reason === "bound_to_another_key")
        return { error: "invalid_grant", description: "the grant is bound to another key" };
      if (result.reason === "dpop_proof_required")
        return { error: "invalid_dpop_proof", description: "this grant needs a DPoP proof" };
      if (result.reason === "capability_not_granted")
        return { error: "invalid_scope", description: "the scope is wider than what was granted" };
      return {
        error: "invalid_target",
        description: "the resource is no granted capability's location",
      };
    }
    runtime.emit({
      type: "token.issued",
      grantId: result.grant.grantId,
      principalId: client.clientId,
      tokenId: result.token.jti,
      capabilities: result.capabilities,
      audience: result.audience,
      via: "client_credentials",
    });
    return {
      accessToken: result.token.token,
      expiresIn: result.token.expiresIn,
      scope: result.capabilities,
      tokenType: result.jkt === undefined ? "Bearer" : "DPoP",
    };
  };
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((name) => b.includes(name));
}
