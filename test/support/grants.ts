import type { Grant, GrantLimits, GrantStore } from "../../src/agentauth/index.ts";

/** The default limits of `agentAuth`. */
export const LIMITS: GrantLimits = { perApprover: 100, perPrincipal: 10_000 };

/**
 * An active grant approved by `approvedBy` (alice) at `at` for a day, stored in
 * `grants`: the pair's grant, widened when it had one.
 */
export async function activeGrant(
  grants: GrantStore,
  at: number,
  capabilities: readonly string[],
  principalId = "agent-1",
  approvedBy = "alice",
): Promise<Grant> {
  const created: Grant = {
    grantId: `g-${crypto.randomUUID()}`,
    principalId,
    status: "active",
    capabilities: [...capabilities],
    approvedBy,
    createdAt: at,
    expiresAt: at + 86_400_000,
  };
  const approved = await grants.approve(created, LIMITS);
  if (approved.outcome === "refused") throw new Error(`grant refused: ${approved.reason}`);
  return approved.grant;
}
