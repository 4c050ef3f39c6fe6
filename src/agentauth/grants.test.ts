import { describe, expect, it } from "vitest";
import { type Grant, type GrantLimits, MemoryGrantStore } from "./grants.ts";

const LIMITS: GrantLimits = { perApprover: 100, perPrincipal: 10_000 };

function grant(
  id: string,
  createdAt: number,
  expiresAt: number,
  principalId = `agent-${id}`,
  approvedBy = `human-${id}`,
): Grant {
  return {
    grantId: id,
    principalId,
    status: "active",
    capabilities: ["read", "write"],
    approvedBy,
    createdAt,
    expiresAt,
  };
}

describe("MemoryGrantStore at its bound", () => {
  it("refuses a newcomer when every grant held is active, and drops none", async () => {
    const store = new MemoryGrantStore({ maxEntries: 3 });
    for (const id of ["a", "b", "c"]) await store.approve(grant(id, 0, 10_000), LIMITS);
    await expect(store.approve(grant("flood", 5_000, 10_000), LIMITS)).rejects.toThrow("full");
    for (const id of ["a", "b", "c"]) expect((await store.get(id))?.status).toBe("active");
  });

  it("makes room from expired and revoked grants only, and lists no grant it dropped", async () => {
    const store = new MemoryGrantStore({ maxEntries: 4 });
    await store.approve(grant("expired", 0, 1_000, "agent-1"), LIMITS);
    await store.approve(grant("revoked", 10, 50_000, "agent-1"), LIMITS);
    await store.approve(grant("kept", 20, 50_000, "agent-1", "alice"), LIMITS);
    await store.approve(grant("partly", 30, 50_000, "agent-2", "alice"), LIMITS);
    await store.revoke("revoked", undefined, 100);
    await store.revoke("partly", ["write"], 100);
    await store.approve(grant("new", 2_000, 50_000, "agent-1", "bob"), LIMITS);
    expect(await store.get("expired")).toBeUndefined();
    expect(await store.get("revoked")).toBeUndefined();
    expect((await store.listByPrincipal("agent-1")).map((g) => g.grantId)).toEqual(["new", "kept"]);
    expect((await store.listByApprover("alice")).map((g) => g.grantId)).toEqual(["partly", "kept"]);
    expect((await store.get("partly"))?.capabilities).toEqual(["read"]);
  });

  it("does not drop a grant made under the id of one that left, when the old one's expiry comes", async () => {
    const store = new MemoryGrantStore({ maxEntries: 2 });
    await store.approve(grant("reused", 0, 50_000), LIMITS);
    await store.approve(grant("other", 0, 1_000), LIMITS);
    await store.revoke("reused", undefined, 10);
    await store.approve(grant("third", 20, 100_000), LIMITS); // full: the revoked "reused" leaves
    await store.approve(grant("reused", 2_000, 100_000), LIMITS); // full: the expired "other" leaves
    await expect(store.approve(grant("x", 60_000, 100_000), LIMITS)).rejects.toThrow("full");
    expect((await store.get("reused"))?.createdAt).toBe(2_000);
  });

  it("does not drop a grant an approval extended when its first expiry comes", async () => {
    const store = new MemoryGrantStore({ maxEntries: 2 });
    await store.approve(grant("long", 0, 1_000, "agent-1", "alice"), LIMITS);
    await store.approve(grant("ignored", 500, 100_000, "agent-1", "alice"), LIMITS);
    await store.approve(grant("other", 0, 100_000), LIMITS);
    await expect(store.approve(grant("x", 2_000, 100_000), LIMITS)).rejects.toThrow("full");
    expect((await store.get("long"))?.expiresAt).toBe(100_000);
  });
});
