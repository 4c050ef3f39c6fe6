import { describe, expect, it } from "vitest";
import { type Grant, MemoryGrantStore } from "./grants.ts";

function grant(
  id: string,
  createdAt: number,
  expiresAt: number,
  principalId = `agent-${id}`,
): Grant {
  return {
    grantId: id,
    principalId,
    status: "active",
    capabilities: ["read", "write"],
    approvedBy: "alice",
    createdAt,
    expiresAt,
  };
}

describe("MemoryGrantStore at its bound", () => {
  it("refuses a newcomer when every grant held is active, and drops none", async () => {
    const store = new MemoryGrantStore({ maxEntries: 3 });
    for (const id of ["a", "b", "c"]) await store.create(grant(id, 0, 10_000));
    await expect(store.create(grant("flood", 5_000, 10_000))).rejects.toThrow("full");
    for (const id of ["a", "b", "c"]) expect((await store.get(id))?.status).toBe("active");
  });

  it("makes room from expired and revoked grants only, and lists no grant it dropped", async () => {
    const store = new MemoryGrantStore({ maxEntries: 4 });
    await store.create(grant("expired", 0, 1_000, "agent-1"));
    await store.create(grant("revoked", 10, 50_000, "agent-1"));
    await store.create(grant("kept", 20, 50_000, "agent-1"));
    await store.create(grant("partly", 30, 50_000, "agent-2"));
    await store.revoke("revoked", undefined, 100);
    await store.revoke("partly", ["write"], 100);
    await store.create(grant("new", 2_000, 50_000, "agent-1"));
    expect(await store.get("expired")).toBeUndefined();
    expect(await store.get("revoked")).toBeUndefined();
    expect((await store.listByPrincipal("agent-1")).map((g) => g.grantId)).toEqual(["new", "kept"]);
    expect((await store.listByApprover("alice")).map((g) => g.grantId)).toEqual([
      "new",
      "partly",
      "kept",
    ]);
    expect((await store.get("partly"))?.capabilities).toEqual(["read"]);
  });

  it("does not drop a grant made under the id of one that left, when the old one's expiry comes", async () => {
    const store = new MemoryGrantStore({ maxEntries: 2 });
    await store.create(grant("reused", 0, 50_000));
    await store.create(grant("other", 0, 1_000));
    await store.revoke("reused", undefined, 10);
    await store.create(grant("third", 20, 100_000)); // full: the revoked "reused" leaves
    await store.create(grant("reused", 2_000, 100_000)); // full: the expired "other" leaves
    await expect(store.create(grant("x", 60_000, 100_000))).rejects.toThrow("full");
    expect((await store.get("reused"))?.createdAt).toBe(2_000);
  });
});
