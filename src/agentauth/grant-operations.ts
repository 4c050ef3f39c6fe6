import type { DeviceAuthorizationService } from "../oauth2/index.ts";
import { describeAgentRequest } from "./approve.ts";
import type { Grant } from "./grants.ts";
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
    grantsApprovedBy: (name: string) => runtime.store(() => grants.listByApprover(name)),
  };
}

/** Revokes a whole grant or some of its capabilities, telling `onEvent` what changed. */
async function revokeGrant(
  runtime: AgentRuntime,
  grantId: string,
  revoked: readonly string[] | undefined,
): Promise<Grant | undefined> {
  const before = await runtime.store(() => runtime.grants.get(grantId));
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
