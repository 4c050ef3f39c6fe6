import type { AgentEvent } from "./events.ts";
import { effectiveStatus, type Grant, type GrantApproval, type GrantLimits } from "./grants.ts";
import type { AgentRuntime } from "./runtime.ts";

/** The limits `agentAuth` applies when given none: `maxGrantsPerApprover`, `maxGrantsPerAgent`. */
export const DEFAULT_GRANT_LIMITS: GrantLimits = Object.freeze({
  perApprover: 100,
  perPrincipal: 10_000,
});

/** Why an approval made nothing. */
export type GrantRefusal = Extract<GrantApproval, { outcome: "refused" }>["reason"];

/**
 * A human's approval of an agent (device flow or consent), through the one
 * atomic store step that creates or widens the pair's grant within the limits.
 * `announce` tells `onEvent` what happened; call it once the caller's whole
 * step held, so a step that fails and is retried tells nothing twice.
 */
export async function approveGrant(
  runtime: AgentRuntime,
  proposed: Grant,
): Promise<{ readonly approval: GrantApproval; readonly announce: () => void }> {
  const approval = await runtime.store(() =>
    runtime.grants.approve(proposed, runtime.grantLimits ?? DEFAULT_GRANT_LIMITS),
  );
  return { approval, announce: () => runtime.emit(approvalEvent(proposed, approval)) };
}

/**
 * What an approval tells. A grant extended under the id the approval chose was
 * made by an earlier try of this same approval: it is told as created.
 */
function approvalEvent(proposed: Grant, approval: GrantApproval): AgentEvent {
  if (approval.outcome === "refused")
    return {
      type: "grant.refused",
      principalId: proposed.principalId,
      approvedBy: proposed.approvedBy,
      reason: approval.reason,
    };
  const { grant } = approval;
  if (approval.outcome === "created" || grant.grantId === proposed.grantId)
    return {
      type: "grant.created",
      grantId: grant.grantId,
      principalId: grant.principalId,
      approvedBy: grant.approvedBy,
      capabilities: grant.capabilities,
      expiresAt: grant.expiresAt,
    };
  const { previous } = approval;
  return {
    type: "grant.extended",
    grantId: grant.grantId,
    principalId: grant.principalId,
    approvedBy: grant.approvedBy,
    added: grant.capabilities.filter((name) => !previous.capabilities.includes(name)),
    capabilities: grant.capabilities,
    expiresAt: grant.expiresAt,
    ...(previous.jkt === undefined && grant.jkt !== undefined ? { bound: true as const } : {}),
  };
}

/**
 * Whether `approvedBy` may approve `principalId` now, for a page to say so
 * before anything is approved: `approver_limit` when they hold as many active
 * grants as allowed and none for this agent. The store's `approve` decides;
 * this only reads, and leaves the agent's own limit to it.
 */
export async function approverRoom(
  runtime: AgentRuntime,
  principalId: string,
  approvedBy: string,
): Promise<"approver_limit" | undefined> {
  const now = runtime.now();
  const limits = runtime.grantLimits ?? DEFAULT_GRANT_LIMITS;
  const held = (await runtime.store(() => runtime.grants.listByApprover(approvedBy))).filter(
    (grant) => effectiveStatus(grant, now) === "active",
  );
  if (held.some((grant) => grant.principalId === principalId)) return undefined;
  return held.length >= limits.perApprover ? "approver_limit" : undefined;
}
