import type { DeviceAuthorizationService } from "../oauth2/index.ts";
import { describeAgentRequest } from "./approve.ts";
import { effectiveStatus, type Grant } from "./grants.ts";
import { type RefreshRequest, refreshCapabilityToken } from "./refresh.ts";
import { resolveSession } from "./resolve-session.ts";
import type { AgentRuntime } from "./runtime.ts";

/** What the application does with grants: locations, approval pages, refresh, revocation, listing. */
export function grantOperations(runtime: AgentRuntime, service: DeviceAuthorizationService) {
  const { grants } = runtime;
  return {
    resolveSession: (location: string) => resolveSession(runtime, location),
    describe: (request: Request, userCode: unknown) =>
      describeAgentRequest(runtime, service, request, userCode),
    refresh: (principalId: string, request?: RefreshRequest) =>
      runtime.store(() => refreshCapabilityToken(undefined, principalId, grants, runtime, request)),
    revoke: (grantId: string, revoked?: readonly string[]) =>
      revokeGrant(runtime, grantId, revoked),
    revokeApprovedBy: (name: string, grantId: string, revoked?: readonly string[]) =>
      revokeGrant(runtime, grantId, revoked, name),
    grantsApprovedBy: async (name: string) =>
      onePerAgent(await runtime.store(() => grants.listByApprover(name)), runtime.now()),
  };
}

/**
 * A human's grants as their "agents I have approved" page lists them: one per
 * agent, its active grant, else the last that ended; newest first.
 */
function onePerAgent(grants: readonly Grant[], now: number): readonly Grant[] {
  const shown = new Map<string, Grant>();
  for (const grant of grants) {
    const seen = shown.get(grant.principalId);
    if (
      seen === undefined ||
      (effectiveStatus(seen, now) !== "active" && effectiveStatus(grant, now) === "active")
    )
      shown.set(grant.principalId, grant);
  }
  return [...shown.values()].sort((a, b) => b.createdAt - a.createdAt);
}

/**
 * Revokes a whole grant or some of its capabilities, telling `onEvent` what
 * changed; with `approvedBy`, only a grant that human approved.
 */
async function revokeGrant(
  runtime: AgentRuntime,
  grantId: string,
  revoked: readonly string[] | undefined,
  approvedBy?: string,
): Promise<Grant | undefined> {
  const before = await runtime.store(() => runtime.grants.get(grantId));
  // Who approved a grant never changes, so the check holds for the revocation below.
  if (approvedBy !== undefined && before?.approvedBy !== approvedBy) return undefined;
  const after = await runtime.store(() => runtime.grants.revoke(grantId, revoked, runtime.now()));
  if (before === undefined || after === undefined) return after;
  const removed = before.capabilities.filter((name) => !after.capabilities.includes(name));
  const whole = after.status === "revoked";
  if (removed.length > 0 || (before.status !== "revoked" && whole))
    runtime.emit({
      type: "grant.revoked",
      grantId,
      principalId: after.principalId,
      capabilities: removed,
      whole,
    });
  return after;
}
