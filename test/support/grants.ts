import type { Grant, GrantStore } from "../../src/agentauth/index.ts";

/** An active grant approved by `approvedBy` (alice) at `at` for a day, stored in `grants`. */
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
  await grants.create(created);
  return created;
}
