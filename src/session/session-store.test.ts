import { describe, expect, it } from "vitest";
import { fakeClock, testApp } from "../../test/support/session-app.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { MemorySessionStore, type MemorySessionStoreOptions, type SessionRecord } from "./index.ts";

function record(overrides: Partial<SessionRecord> = {}): SessionRecord {
  return { data: { n: 1 }, createdAt: 1, lastAccessAt: 1, ...overrides };
}

describe("MemorySessionStore", () => {
  it("stays bounded: 50 000 distinct sessions with maxEntries 1000 leave at most 1000", async () => {
    const store = new MemorySessionStore({ maxEntries: 1000 });
    for (let i = 0; i < 50_000; i++) await store.create(`id-${i}`, record(), 60_000);
    expect(store.size).toBeLessThanOrEqual(1000);
    expect(store.size).toBe(1000);
    // The least recently written are the ones dropped.
    await expect(store.get("id-0")).resolves.toBeUndefined();
    await expect(store.get("id-48999")).resolves.toBeUndefined();
    await expect(store.get("id-49000")).resolves.toBeDefined();
    await expect(store.get("id-49999")).resolves.toBeDefined();
  });

  it("writes nothing when a flood of anonymous clients asks the chain for CSRF tokens", async () => {
    const clock = fakeClock();
    const store = new MemorySessionStore({ maxEntries: 1000, now: clock.now });
    const app = await testApp({ clock, store, login: false });
    for (let i = 0; i < 3000; i++) {
      const response = await app.handler(new Request("https://app.example/csrf"));
      expect(response.status).toBe(200);
    }
    expect(store.size).toBe(0);
  });

  it("never lets a flood of anonymous sessions push signed-in users out", async () => {
    const store = new MemorySessionStore({ maxEntries: 100 });
    const signedIn = record({ principal: { name: "ada", authorities: ["ADMIN"] } });
    for (let i = 0; i < 10; i++) await store.create(`user-${i}`, signedIn, 60_000);
    for (let i = 0; i < 20_000; i++) await store.create(`flood-${i}`, record(), 60_000);
    expect(store.size).toBe(100);
    for (let i = 0; i < 10; i++) await expect(store.get(`user-${i}`)).resolves.toBeDefined();
    // Once only signed-in sessions are left, the oldest of them goes.
    const full = new MemorySessionStore({ maxEntries: 2 });
    await full.create("a", signedIn, 60_000);
    await full.create("b", signedIn, 60_000);
    await full.create("c", signedIn, 60_000);
    await expect(full.get("a")).resolves.toBeUndefined();
    await expect(full.get("c")).resolves.toBeDefined();
  });

  it("moves a session between the anonymous and signed-in pools as its principal changes", async () => {
    const store = new MemorySessionStore({ maxEntries: 2 });
    await store.create("s", record(), 60_000);
    await store.update("s", record({ principal: { name: "ada", authorities: [] } }), 60_000);
    await store.create("x", record(), 60_000);
    await store.create("y", record(), 60_000);
    expect(store.size).toBe(2);
    await expect(store.get("s")).resolves.toMatchObject({ principal: { name: "ada" } });
    await store.delete("s");
    expect(store.size).toBe(1);
  });

  it("evicts by last write: updating or touching an id protects it from eviction", async () => {
    const store = new MemorySessionStore({ maxEntries: 3 });
    await store.create("a", record(), 60_000);
    await store.create("b", record(), 60_000);
    await store.create("c", record(), 60_000);
    await store.update("a", record({ lastAccessAt: 2 }), 60_000);
    await store.touch("b", 3, 60_000);
    await store.create("d", record(), 60_000);
    await expect(store.get("c")).resolves.toBeUndefined();
    await expect(store.get("a")).resolves.toMatchObject({ lastAccessAt: 2 });
    await expect(store.get("b")).resolves.toMatchObject({ lastAccessAt: 3 });
    expect(store.size).toBe(3);
  });

  it("expires a record at its TTL, not before", async () => {
    const clock = fakeClock();
    const store = new MemorySessionStore({ now: clock.now });
    await store.create("s", record(), 1000);
    clock.advance(999);
    await expect(store.get("s")).resolves.toEqual(record());
    clock.advance(1);
    await expect(store.get("s")).resolves.toBeUndefined();
    expect(store.size).toBe(0);
  });

  it("a non-positive TTL stores nothing and removes what was there", async () => {
    const store = new MemorySessionStore();
    await store.create("s", record(), 60_000);
    await expect(store.update("s", record(), 0)).resolves.toBe(false);
    await expect(store.get("s")).resolves.toBeUndefined();
    await expect(store.create("t", record(), -5)).resolves.toBe(false);
    await store.create("u", record(), 60_000);
    await expect(store.touch("u", 5, 0)).resolves.toBe(false);
    expect(store.size).toBe(0);
  });

  it("deletes, answering whether there was a record", async () => {
    const store = new MemorySessionStore();
    await store.create("s", record(), 60_000);
    await expect(store.delete("s")).resolves.toBe(true);
    await expect(store.delete("s")).resolves.toBe(false);
    await expect(store.delete("never-there")).resolves.toBe(false);
    await expect(store.get("s")).resolves.toBeUndefined();
  });

  it("creates only where nothing is, and updates and touches only where a record is", async () => {
    const clock = fakeClock();
    const store = new MemorySessionStore({ now: clock.now });
    await expect(store.update("s", record(), 60_000)).resolves.toBe(false);
    await expect(store.touch("s", 9, 60_000)).resolves.toBe(false);
    expect(store.size).toBe(0);
    await expect(store.create("s", record(), 60_000)).resolves.toBe(true);
    await expect(store.create("s", record({ data: { n: 2 } }), 60_000)).resolves.toBe(false);
    await expect(store.get("s")).resolves.toEqual(record());
    await expect(store.update("s", record({ data: { n: 3 } }), 60_000)).resolves.toBe(true);
    await expect(store.get("s")).resolves.toEqual(record({ data: { n: 3 } }));
    // Once deleted (a logout), nothing brings it back but a create.
    await store.delete("s");
    await expect(store.update("s", record(), 60_000)).resolves.toBe(false);
    await expect(store.touch("s", 9, 60_000)).resolves.toBe(false);
    await expect(store.get("s")).resolves.toBeUndefined();
    // An expired record counts as none.
    await store.create("e", record(), 1000);
    clock.advance(1000);
    await expect(store.update("e", record(), 60_000)).resolves.toBe(false);
    await expect(store.create("e", record({ data: { n: 4 } }), 60_000)).resolves.toBe(true);
  });

  it("touch changes the time and the TTL, never the data a save wrote meanwhile", async () => {
    const clock = fakeClock();
    const store = new MemorySessionStore({ now: clock.now });
    await store.create("s", record(), 1000);
    await store.update("s", record({ data: { n: 2 }, lastAccessAt: 5 }), 1000);
    await expect(store.touch("s", 7, 5000)).resolves.toBe(true);
    await expect(store.get("s")).resolves.toEqual(record({ data: { n: 2 }, lastAccessAt: 7 }));
    clock.advance(4999);
    await expect(store.get("s")).resolves.toBeDefined();
    clock.advance(1);
    await expect(store.get("s")).resolves.toBeUndefined();
  });

  it("stores a copy: changing the object after set() does not change the stored record", async () => {
    const store = new MemorySessionStore();
    const data: Record<string, unknown> = { cart: { items: ["a"] } };
    const principal = { name: "alice", authorities: ["USER"] };
    const put = { data, createdAt: 1, lastAccessAt: 1, principal };
    await store.create("s", put, 60_000);
    data.extra = true;
    (data.cart as { items: string[] }).items.push("b");
    principal.authorities.push("ADMIN");
    principal.name = "mallory";
    await expect(store.get("s")).resolves.toEqual({
      data: { cart: { items: ["a"] } },
      createdAt: 1,
      lastAccessAt: 1,
      principal: { name: "alice", authorities: ["USER"] },
    });
  });

  it("hands out a frozen copy: a record returned by get() cannot be changed, nor can the one written", async () => {
    const store = new MemorySessionStore();
    const written = {
      data: { cart: { items: ["a"] } },
      createdAt: 1,
      lastAccessAt: 1,
      principal: { name: "alice", authorities: ["USER"] },
    };
    await store.create("s", written, 60_000);
    written.data.cart.items.push("b");
    written.principal.authorities.push("ADMIN");
    const got = (await store.get("s")) as unknown as {
      data: { cart: { items: string[] } } & Record<string, unknown>;
      principal: { name: string; authorities: string[] };
    };
    expect(() => {
      got.data.extra = true;
    }).toThrow(TypeError);
    expect(() => got.data.cart.items.push("b")).toThrow(TypeError);
    expect(() => got.principal.authorities.push("ADMIN")).toThrow(TypeError);
    expect(() => {
      got.principal.name = "mallory";
    }).toThrow(TypeError);
    await expect(store.get("s")).resolves.toEqual({
      data: { cart: { items: ["a"] } },
      createdAt: 1,
      lastAccessAt: 1,
      principal: { name: "alice", authorities: ["USER"] },
    });
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])(
    "refuses maxEntries %s",
    (maxEntries) => {
      expect(() => new MemorySessionStore({ maxEntries })).toThrow(InvalidOptionsError);
    },
  );

  it("refuses an unknown option, naming it", () => {
    expect(
      () => new MemorySessionStore({ maxEntrys: 10 } as unknown as MemorySessionStoreOptions),
    ).toThrow(/maxEntrys/);
  });
});
