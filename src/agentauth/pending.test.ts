import { describe, expect, it } from "vitest";
import { MemoryPendingRequestStore, type PendingRequest } from "./pending.ts";

function request(agent: string, createdAt: number, expiresAt: number): PendingRequest {
  return {
    principalId: agent,
    userCodeHash: `uc-${agent}-${createdAt}`,
    capabilities: ["read"],
    createdAt,
    expiresAt,
  };
}

describe("MemoryPendingRequestStore at its bound", () => {
  it("refuses a newcomer when every request held is live, and drops none", async () => {
    const store = new MemoryPendingRequestStore({ maxEntries: 2 });
    await store.create(request("a", 0, 10_000));
    await store.create(request("b", 0, 10_000));
    await expect(store.create(request("flood", 5_000, 10_000))).rejects.toThrow("full");
    expect(await store.getByPrincipal("a", 5_000)).toBeDefined();
    expect(await store.getByUserCode("uc-b-0", 5_000)).toBeDefined();
  });

  it("makes room from expired requests, not from a live one that superseded an expired entry", async () => {
    const store = new MemoryPendingRequestStore({ maxEntries: 2 });
    await store.create(request("a", 0, 1_000));
    await store.create(request("a", 500, 100_000)); // supersedes: its old expiry must not drop it
    await store.create(request("b", 600, 1_500));
    await store.create(request("c", 2_000, 100_000));
    expect(await store.getByPrincipal("b", 1_000)).toBeUndefined();
    expect((await store.getByPrincipal("a", 2_000))?.createdAt).toBe(500);
    expect(await store.getByPrincipal("c", 2_000)).toBeDefined();
    await expect(store.create(request("d", 3_000, 100_000))).rejects.toThrow("full");
  });

  it("stays correct through many superseded requests of one agent", async () => {
    const store = new MemoryPendingRequestStore({ maxEntries: 2 });
    for (let i = 0; i < 1000; i++) await store.create(request("busy", i, i + 10));
    expect((await store.getByPrincipal("busy", 999))?.createdAt).toBe(999);
    await store.create(request("other", 2_000, 5_000));
    await store.create(request("third", 2_000, 5_000)); // full: the expired "busy" leaves
    expect(await store.getByPrincipal("busy", 0)).toBeUndefined();
  });
});
