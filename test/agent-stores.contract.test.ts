/**
 * One contract, run against every implementation of each agent store
 * (memory, Redis, PostgreSQL), so they behave the same, races included.
 */
import { readFileSync } from "node:fs";
import pg from "pg";
import { describe, expect, it } from "vitest";
import {
  type Grant,
  type GrantLimits,
  type GrantStore,
  MemoryGrantStore,
  MemoryPendingRequestStore,
  MemoryReplayStore,
  type PendingRequestStore,
  type ReplayStore,
} from "../src/agentauth/index.ts";
import {
  type DeviceCodeRecord,
  type DeviceCodeStore,
  MemoryDeviceCodeStore,
} from "../src/oauth2/index.ts";
import {
  MIGRATION_FILE,
  migrate,
  PostgresGrantStore,
  PostgresReplayStore,
} from "../src/stores/postgres/index.ts";
import {
  RedisDeviceCodeStore,
  RedisGrantStore,
  RedisPendingRequestStore,
  RedisReplayStore,
} from "../src/stores/redis/index.ts";
import { postgresForTests } from "./support/postgres.ts";
import { redisForTests } from "./support/redis.ts";

const redis = redisForTests();
const { pool, schema } = postgresForTests("test", { max: 20 });

let n = 0;
const unique = (what: string) => `${what}-${Date.now()}-${n++}`;
const NOW = Date.now();

const replayStores: [string, () => ReplayStore][] = [
  ["memory", () => new MemoryReplayStore()],
  ["Redis", () => new RedisReplayStore({ client: redis.client, prefix: `${redis.prefix}jti:` })],
  ["PostgreSQL", () => new PostgresReplayStore({ pool })],
];
const grantStores: [string, () => GrantStore][] = [
  ["memory", () => new MemoryGrantStore()],
  [
    "Redis",
    () => new RedisGrantStore({ client: redis.client, prefix: `${redis.prefix}grant:${n++}:` }),
  ],
  ["PostgreSQL", () => new PostgresGrantStore({ pool })],
];
const deviceStores: [string, () => DeviceCodeStore][] = [
  ["memory", () => new MemoryDeviceCodeStore({ maxPendingPerClient: 3 })],
  [
    "Redis",
    () =>
      new RedisDeviceCodeStore({
        client: redis.client,
        prefix: `${redis.prefix}device:${n++}:`,
        maxPendingPerClient: 3,
      }),
  ],
];
const pendingStores: [string, () => PendingRequestStore][] = [
  ["memory", () => new MemoryPendingRequestStore()],
  [
    "Redis",
    () =>
      new RedisPendingRequestStore({
        client: redis.client,
        prefix: `${redis.prefix}pending:${n++}:`,
      }),
  ],
];

describe.each(replayStores)("ReplayStore: %s", (_name, make) => {
  it("records an id once, however many race for it", async () => {
    const store = make();
    const jti = unique("jti");
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => store.setIfAbsent(jti, Date.now() + 60_000, Date.now())),
    );
    expect(answers.filter(Boolean)).toHaveLength(1);
    expect(await store.setIfAbsent(jti, Date.now() + 60_000, Date.now())).toBe(false);
    expect(await store.setIfAbsent(unique("jti"), Date.now() + 60_000, Date.now())).toBe(true);
  });

  it("keeps an id for its token's lifetime on the caller's clock, however far behind", async () => {
    // A clock two minutes behind the store's: the id must still be held for its 60 s.
    const store = make();
    const jti = unique("jti");
    const now = Date.now() - 120_000;
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => store.setIfAbsent(jti, now + 60_000, now)),
    );
    expect(answers.filter(Boolean)).toHaveLength(1);
    expect(await store.setIfAbsent(jti, now + 60_000, now + 1000)).toBe(false);
  });

  it("takes a clock with fractions of a millisecond", async () => {
    const store = make();
    const now = Date.now() + 0.5;
    expect(await store.setIfAbsent(unique("jti"), now + 60_000.25, now)).toBe(true);
  });

  it("forgets an id once its token has expired", async () => {
    const store = make();
    const jti = unique("jti");
    expect(await store.setIfAbsent(jti, Date.now() + 150, Date.now())).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await store.setIfAbsent(jti, Date.now() + 60_000, Date.now())).toBe(true);
    expect(await store.setIfAbsent(jti, Date.now() + 60_000, Date.now())).toBe(false);
  });
});

function grant(overrides: Partial<Grant> = {}): Grant {
  return {
    grantId: unique("g"),
    principalId: unique("agent"),
    status: "active",
    capabilities: ["a", "b", "c"],
    approvedBy: unique("human"),
    createdAt: NOW,
    expiresAt: NOW + 86_400_000,
    ...overrides,
  };
}

const LIMITS: GrantLimits = { perApprover: 100, perPrincipal: 10_000 };

/** Approves `g` in `store`, expecting a new grant. */
async function created(store: GrantStore, g: Grant, limits = LIMITS): Promise<Grant> {
  const approval = await store.approve(g, limits);
  expect(approval.outcome).toBe("created");
  return (approval as { grant: Grant }).grant;
}

describe.each(grantStores)("GrantStore: %s", (_name, make) => {
  it("approves, reads and lists grants newest first, by agent and by approver", async () => {
    const store = make();
    const first = grant();
    const second = grant({ principalId: first.principalId, createdAt: NOW + 1 });
    const third = grant({ approvedBy: first.approvedBy, createdAt: NOW + 2 });
    expect(await created(store, first)).toEqual(first);
    await created(store, second);
    await created(store, third);
    // An id already held, by a grant that is not the pair's: never overwritten.
    await expect(store.approve(grant({ grantId: first.grantId }), LIMITS)).rejects.toThrow();
    expect(await store.get(first.grantId)).toEqual(first);
    expect(await store.get(unique("none"))).toBeUndefined();
    expect((await store.listByPrincipal(first.principalId)).map((g) => g.grantId)).toEqual([
      second.grantId,
      first.grantId,
    ]);
    expect((await store.listByApprover(first.approvedBy)).map((g) => g.grantId)).toEqual([
      third.grantId,
      first.grantId,
    ]);
    expect(await store.listByApprover(unique("nobody"))).toEqual([]);
  });

  it("a second approval by the same human widens and extends the pair's grant, under its id", async () => {
    const store = make();
    const first = await created(store, grant({ capabilities: ["a", "b"] }));
    const again = grant({
      principalId: first.principalId,
      approvedBy: first.approvedBy,
      capabilities: ["c", "b", "c"],
      createdAt: NOW + 10,
      expiresAt: first.expiresAt + 60_000,
    });
    const approval = await store.approve(again, LIMITS);
    expect(approval).toEqual({
      outcome: "extended",
      previous: first,
      grant: { ...first, capabilities: ["a", "b", "c"], expiresAt: first.expiresAt + 60_000 },
    });
    expect(await store.get(again.grantId)).toBeUndefined();
    // An approval ending sooner shortens nothing.
    const shorter = grant({ ...again, grantId: unique("g"), expiresAt: NOW + 1000 });
    expect((await store.approve(shorter, LIMITS)).outcome).toBe("extended");
    expect(await store.get(first.grantId)).toMatchObject({
      capabilities: ["a", "b", "c"],
      expiresAt: first.expiresAt + 60_000,
      createdAt: first.createdAt,
    });
    expect(await store.listByPrincipal(first.principalId)).toHaveLength(1);
  });

  it("never revives a grant revoked as a whole or expired: the next approval makes a new one", async () => {
    const store = make();
    const revoked = await created(store, grant());
    await store.revoke(revoked.grantId, undefined, NOW + 1);
    const after = await created(
      store,
      grant({
        principalId: revoked.principalId,
        approvedBy: revoked.approvedBy,
        createdAt: NOW + 2,
      }),
    );
    expect(after.grantId).not.toBe(revoked.grantId);
    expect(await store.get(revoked.grantId)).toMatchObject({ status: "revoked", capabilities: [] });
    const expired = await created(store, grant({ expiresAt: NOW + 100 }));
    const later = await created(
      store,
      grant({
        principalId: expired.principalId,
        approvedBy: expired.approvedBy,
        createdAt: NOW + 100,
      }),
    );
    expect(later.grantId).not.toBe(expired.grantId);
    expect((await store.get(expired.grantId))?.expiresAt).toBe(NOW + 100);
  });

  it("binds an unbound grant to the approval's key; a bound one takes no approval without that key", async () => {
    const store = make();
    const jkt = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I";
    const unbound = await created(store, grant({ capabilities: ["a"] }));
    const pair = { principalId: unbound.principalId, approvedBy: unbound.approvedBy };
    const bound = await store.approve(grant({ ...pair, capabilities: ["b"], jkt }), LIMITS);
    expect(bound).toMatchObject({ outcome: "extended", grant: { jkt, capabilities: ["a", "b"] } });
    for (const other of [undefined, "another-thumbprint"]) {
      const refused = await store.approve(
        grant({ ...pair, capabilities: ["c"], ...(other === undefined ? {} : { jkt: other }) }),
        LIMITS,
      );
      expect(refused).toEqual({ outcome: "refused", reason: "bound_to_another_key" });
    }
    expect(await store.get(unbound.grantId)).toMatchObject({ jkt, capabilities: ["a", "b"] });
    const same = await store.approve(grant({ ...pair, capabilities: ["c"], jkt }), LIMITS);
    expect(same).toMatchObject({ outcome: "extended", grant: { capabilities: ["a", "b", "c"] } });
  });

  it("ends racing approvals of one pair in one grant holding every set", async () => {
    const store = make();
    const pair = { principalId: unique("agent"), approvedBy: unique("human") };
    const names = Array.from({ length: 20 }, (_, i) => `cap-${i}`);
    const approvals = await Promise.all(
      names.map((name) => store.approve(grant({ ...pair, capabilities: [name] }), LIMITS)),
    );
    expect(approvals.filter((a) => a.outcome === "created")).toHaveLength(1);
    expect(approvals.filter((a) => a.outcome === "extended")).toHaveLength(19);
    const grants = await store.listByPrincipal(pair.principalId);
    expect(grants).toHaveLength(1);
    expect([...(grants[0]?.capabilities ?? [])].sort()).toEqual([...names].sort());
  });

  it("holds each human and each agent to their limit under racing approvals; nobody else", async () => {
    const store = make();
    const limits = { perApprover: 3, perPrincipal: 4 };
    const human = unique("human");
    const byHuman = await Promise.all(
      Array.from({ length: 12 }, () => store.approve(grant({ approvedBy: human }), limits)),
    );
    expect(byHuman.filter((a) => a.outcome === "created")).toHaveLength(3);
    for (const refused of byHuman.filter((a) => a.outcome !== "created"))
      expect(refused).toEqual({ outcome: "refused", reason: "approver_limit" });
    // Approving again an agent they approved widens its grant: no limit applies.
    const mine = await store.listByApprover(human);
    const again = grant({ approvedBy: human, principalId: mine[0]?.principalId as string });
    expect((await store.approve(again, limits)).outcome).toBe("extended");
    const agent = unique("agent");
    const ofAgent = await Promise.all(
      Array.from({ length: 12 }, () => store.approve(grant({ principalId: agent }), limits)),
    );
    expect(ofAgent.filter((a) => a.outcome === "created")).toHaveLength(4);
    for (const refused of ofAgent.filter((a) => a.outcome !== "created"))
      expect(refused).toEqual({ outcome: "refused", reason: "principal_limit" });
    // Others are not affected, and a revocation makes room, for the human as for the agent.
    expect((await store.approve(grant(), limits)).outcome).toBe("created");
    await store.revoke(mine[0]?.grantId as string, undefined, NOW);
    expect((await store.approve(grant({ approvedBy: human }), limits)).outcome).toBe("created");
    const [theirs] = await store.listByPrincipal(agent);
    await store.revoke(theirs?.grantId as string, undefined, NOW);
    expect((await store.approve(grant({ principalId: agent }), limits)).outcome).toBe("created");
  });

  it("keeps no more of a human's ended grants than their limit, dropping the oldest", async () => {
    const store = make();
    const limits = { perApprover: 3, perPrincipal: 100 };
    const human = unique("human");
    const made: Grant[] = [];
    for (let i = 0; i < 10; i++) {
      const g = await created(store, grant({ approvedBy: human, createdAt: NOW + i }), limits);
      made.push(g);
      await store.revoke(g.grantId, undefined, NOW + i);
    }
    const listed = await store.listByApprover(human);
    expect(listed.length).toBeLessThanOrEqual(limits.perApprover + 1);
    expect(listed[0]?.grantId).toBe(made.at(-1)?.grantId);
    expect(await store.get(made[0]?.grantId as string)).toBeUndefined();
    expect(await store.listByPrincipal(made[0]?.principalId as string)).toEqual([]);
  });

  it("revokes capabilities and whole grants idempotently and for good", async () => {
    const store = make();
    const g = await created(store, grant());
    expect((await store.revoke(g.grantId, ["b"], NOW))?.capabilities).toEqual(["a", "c"]);
    expect((await store.revoke(g.grantId, ["b"], NOW))?.capabilities).toEqual(["a", "c"]);
    const whole = await store.revoke(g.grantId, undefined, NOW + 5);
    expect(whole).toMatchObject({ status: "revoked", capabilities: [], revokedAt: NOW + 5 });
    const again = await store.revoke(g.grantId, undefined, NOW + 9);
    expect(again).toMatchObject({ status: "revoked", capabilities: [], revokedAt: NOW + 5 });
    expect(await store.get(g.grantId)).toMatchObject({ status: "revoked", capabilities: [] });
    expect(await store.revoke(unique("none"), undefined, NOW)).toBeUndefined();
  });

  it("keeps the DPoP key a grant is bound to, through revocation", async () => {
    const store = make();
    const jkt = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I";
    const bound = await created(store, grant({ jkt }));
    const unbound = await created(store, grant({ principalId: bound.principalId }));
    expect((await store.get(bound.grantId))?.jkt).toBe(jkt);
    expect(await store.get(unbound.grantId)).not.toHaveProperty("jkt");
    const listed = await store.listByPrincipal(bound.principalId);
    expect(listed.find((g) => g.grantId === bound.grantId)?.jkt).toBe(jkt);
    expect((await store.revoke(bound.grantId, ["b"], NOW))?.jkt).toBe(jkt);
  });

  it("answers ids no row can hold as unknown, and takes times with fractions", async () => {
    const store = make();
    expect(await store.get("a\u0000b")).toBeUndefined();
    expect(await store.revoke("a\u0000b", undefined, NOW)).toBeUndefined();
    expect(await store.listByPrincipal("a\u0000b")).toEqual([]);
    expect(await store.listByApprover("a\u0000b")).toEqual([]);
    const fractional = await created(
      store,
      grant({ createdAt: NOW + 0.5, expiresAt: NOW + 86_400_000.5 }),
    );
    expect((await store.revoke(fractional.grantId, ["a"], NOW + 0.25))?.capabilities).toEqual([
      "b",
      "c",
    ]);
  });

  it("loses no revocation when several race on one grant", async () => {
    const store = make();
    const g = await created(store, grant({ capabilities: ["a", "b", "c", "d", "e", "f"] }));
    await Promise.all(
      ["a", "b", "c", "d", "e"].map((name) => store.revoke(g.grantId, [name], NOW)),
    );
    expect((await store.get(g.grantId))?.capabilities).toEqual(["f"]);
  });
});

function deviceRecord(overrides: Partial<DeviceCodeRecord> = {}): DeviceCodeRecord {
  return {
    deviceCodeHash: unique("dc"),
    userCodeHash: unique("uc"),
    clientId: unique("client"),
    scope: ["read"],
    createdAt: NOW,
    expiresAt: NOW + 600_000,
    intervalMs: 5000,
    status: "pending",
    ...overrides,
  };
}

/** A new record, approved for the subject `agent` by `h`. */
async function approvedRecord(store: DeviceCodeStore): Promise<DeviceCodeRecord> {
  const record = deviceRecord();
  await store.create(record, NOW);
  await store.decide(
    record.userCodeHash,
    { status: "approved", subject: "agent", decidedBy: "h" },
    NOW,
  );
  return record;
}

describe.each(deviceStores)("DeviceCodeStore: %s", (_name, make) => {
  it("finds a live code by its user code and refuses a user code held by a live one", async () => {
    const store = make();
    const record = deviceRecord();
    expect(await store.create(record, NOW)).toBe("created");
    expect(await store.findByUserCode(record.userCodeHash, NOW)).toMatchObject({
      clientId: record.clientId,
      scope: ["read"],
    });
    expect(await store.findByUserCode(record.userCodeHash, record.expiresAt)).toBeUndefined();
    expect(await store.create(deviceRecord({ userCodeHash: record.userCodeHash }), NOW)).toBe(
      "user_code_taken",
    );
  });

  it("answers an empty scope as an empty list, after every rewrite", async () => {
    const store = make();
    const record = deviceRecord({ scope: [] });
    await store.create(record, NOW);
    await store.poll(record.deviceCodeHash, record.clientId, NOW, 5000);
    expect((await store.findByUserCode(record.userCodeHash, NOW))?.scope).toEqual([]);
    const decided = await store.decide(
      record.userCodeHash,
      { status: "approved", subject: "agent", decidedBy: "h" },
      NOW,
    );
    expect(decided.outcome === "decided" && decided.record.scope).toEqual([]);
    expect((await store.findByUserCode(record.userCodeHash, NOW))?.scope).toEqual([]);
  });

  it("decides once when approvals and denials race", async () => {
    const store = make();
    const record = deviceRecord();
    await store.create(record, NOW);
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.decide(
          record.userCodeHash,
          i % 2 === 0
            ? { status: "approved", subject: `s${i}`, decidedBy: `h${i}` }
            : { status: "denied", decidedBy: `h${i}` },
          NOW,
        ),
      ),
    );
    expect(outcomes.filter((o) => o.outcome === "decided")).toHaveLength(1);
    expect(outcomes.filter((o) => o.outcome === "already_decided")).toHaveLength(19);
    expect(
      (await store.decide(unique("uc"), { status: "denied", decidedBy: "h" }, NOW)).outcome,
    ).toBe("unknown");
    const late = deviceRecord();
    await store.create(late, NOW);
    expect(
      (await store.decide(late.userCodeHash, { status: "denied", decidedBy: "h" }, late.expiresAt))
        .outcome,
    ).toBe("expired");
  });

  it("consumes an approval exactly once across 20 concurrent polls", async () => {
    const store = make();
    const record = await approvedRecord(store);
    const polls = await Promise.all(
      Array.from({ length: 20 }, () =>
        store.poll(record.deviceCodeHash, record.clientId, NOW + 10_000, 5000),
      ),
    );
    const approved = polls.filter((p) => p.outcome === "approved");
    expect(approved).toHaveLength(1);
    expect(approved[0]).toMatchObject({
      record: { subject: "agent", decidedBy: "h", scope: ["read"] },
    });
    expect(await store.poll(record.deviceCodeHash, record.clientId, NOW + 60_000, 5000)).toEqual({
      outcome: "invalid",
    });
  });

  it("gives back an approval only to the poll that consumed it", async () => {
    const store = make();
    const record = await approvedRecord(store);
    const at = NOW + 10_000;
    expect((await store.poll(record.deviceCodeHash, record.clientId, at, 5000)).outcome).toBe(
      "approved",
    );
    const release = store.release?.bind(store);
    expect(release).toBeTypeOf("function");
    if (release === undefined) return;
    expect(await release(record.deviceCodeHash, "another-client", at)).toBe(false);
    expect(await release(record.deviceCodeHash, record.clientId, at + 1)).toBe(false);
    const racing = await Promise.all(
      Array.from({ length: 10 }, () => release(record.deviceCodeHash, record.clientId, at)),
    );
    expect(racing.filter(Boolean)).toHaveLength(1);
    const again = await store.poll(record.deviceCodeHash, record.clientId, at + 10_000, 5000);
    expect(again).toMatchObject({ outcome: "approved", record: { subject: "agent" } });
    expect(await store.poll(record.deviceCodeHash, record.clientId, at + 20_000, 5000)).toEqual({
      outcome: "invalid",
    });
  });

  it("answers pending, slow_down (+5 s each), denied, expired and invalid like the memory store", async () => {
    const store = make();
    const record = deviceRecord();
    await store.create(record, NOW);
    expect(await store.poll(record.deviceCodeHash, record.clientId, NOW, 5000)).toEqual({
      outcome: "pending",
    });
    expect(await store.poll(record.deviceCodeHash, record.clientId, NOW + 1000, 5000)).toEqual({
      outcome: "slow_down",
      intervalMs: 10_000,
    });
    expect(await store.poll(record.deviceCodeHash, record.clientId, NOW + 11_000, 5000)).toEqual({
      outcome: "pending",
    });
    // Another client's poll changes nothing.
    expect(await store.poll(record.deviceCodeHash, unique("other"), NOW + 11_001, 5000)).toEqual({
      outcome: "invalid",
    });
    await store.decide(record.userCodeHash, { status: "denied", decidedBy: "h" }, NOW);
    expect(await store.poll(record.deviceCodeHash, record.clientId, NOW + 30_000, 5000)).toEqual({
      outcome: "denied",
    });
    expect(
      await store.poll(record.deviceCodeHash, record.clientId, record.expiresAt, 5000),
    ).toEqual({
      outcome: "expired",
    });
    expect(await store.poll(unique("dc"), record.clientId, NOW, 5000)).toEqual({
      outcome: "invalid",
    });
  });

  it("lets a client's new codes supersede only its own oldest pending ones", async () => {
    const store = make();
    const clientId = unique("client");
    const victim = deviceRecord();
    await store.create(victim, NOW);
    const own = [] as DeviceCodeRecord[];
    for (let i = 0; i < 6; i++) {
      const record = deviceRecord({ clientId, createdAt: NOW + i, expiresAt: NOW + 600_000 + i });
      own.push(record);
      expect(await store.create(record, NOW + i)).toBe("created");
    }
    expect(await store.findByUserCode(victim.userCodeHash, NOW)).toBeDefined();
    const live = await Promise.all(own.map((r) => store.findByUserCode(r.userCodeHash, NOW + 10)));
    expect(live.map((r) => r !== undefined)).toEqual([false, false, false, true, true, true]);
  });

  it("counts a client's decided codes it has not collected, and holds its quota under 20 concurrent begins", async () => {
    const store = make();
    const clientId = unique("client");
    const decided = [] as DeviceCodeRecord[];
    for (let i = 0; i < 6; i++) {
      const record = deviceRecord({ clientId, createdAt: NOW + i, expiresAt: NOW + 600_000 + i });
      decided.push(record);
      expect(await store.create(record, NOW + i)).toBe("created");
      const decision =
        i % 2 === 0
          ? { status: "approved" as const, subject: clientId, decidedBy: "h" }
          : { status: "denied" as const, decidedBy: "h" };
      expect((await store.decide(record.userCodeHash, decision, NOW + i)).outcome).toBe("decided");
    }
    const held = await Promise.all(
      decided.map((r) => store.findByUserCode(r.userCodeHash, NOW + 10)),
    );
    expect(held.map((r) => r !== undefined)).toEqual([false, false, false, true, true, true]);

    const raced = Array.from({ length: 20 }, (_, i) =>
      deviceRecord({ clientId, createdAt: NOW + 20, expiresAt: NOW + 600_000 + 20 + i }),
    );
    const outcomes = await Promise.all(raced.map((r) => store.create(r, NOW + 20)));
    expect(outcomes.every((outcome) => outcome === "created")).toBe(true);
    const live = await Promise.all(
      [...decided, ...raced].map((r) => store.findByUserCode(r.userCodeHash, NOW + 30)),
    );
    expect(live.filter((r) => r !== undefined)).toHaveLength(3);
  });
});

describe.each(pendingStores)("PendingRequestStore: %s", (_name, make) => {
  it("indexes by agent and by user code; a new request supersedes the agent's earlier one", async () => {
    const store = make();
    const principalId = unique("agent");
    const first = {
      principalId,
      userCodeHash: unique("uc"),
      capabilities: ["a"],
      createdAt: NOW,
      expiresAt: Date.now() + 60_000,
    };
    await store.create(first);
    expect(await store.getByUserCode(first.userCodeHash, Date.now())).toMatchObject({
      principalId,
      capabilities: ["a"],
    });
    const second = {
      ...first,
      userCodeHash: unique("uc"),
      capabilities: ["a", "b"],
      agentName: "Agent",
    };
    await store.create(second);
    expect(await store.getByUserCode(first.userCodeHash, Date.now())).toBeUndefined();
    expect(await store.getByPrincipal(principalId, Date.now())).toMatchObject({
      capabilities: ["a", "b"],
      agentName: "Agent",
    });
    // Deleting with the superseded user code leaves the current request alone.
    await store.delete(principalId, first.userCodeHash);
    expect(await store.getByPrincipal(principalId, Date.now())).toBeDefined();
    await store.delete(principalId, second.userCodeHash);
    expect(await store.getByPrincipal(principalId, Date.now())).toBeUndefined();
    expect(await store.getByUserCode(second.userCodeHash, Date.now())).toBeUndefined();
  });

  it("forgets a request once it has expired", async () => {
    const store = make();
    const request = {
      principalId: unique("agent"),
      userCodeHash: unique("uc"),
      capabilities: ["a"],
      createdAt: NOW,
      expiresAt: Date.now() + 60_000,
    };
    await store.create(request);
    expect(await store.getByPrincipal(request.principalId, request.expiresAt)).toBeUndefined();
  });
});

describe("store timeouts", () => {
  it("refuse a value no timer can hold (2^31 ms and more fire at once)", () => {
    for (const timeoutMs of [2 ** 31, 0, 1.5]) {
      expect(() => new RedisReplayStore({ client: redis.client, timeoutMs })).toThrow(/timeoutMs/);
      expect(() => new PostgresReplayStore({ pool, timeoutMs })).toThrow(/timeoutMs/);
    }
    expect(() => new PostgresReplayStore({ pool, timeoutMs: 2 ** 31 - 1 })).not.toThrow();
  });
});

describe("the Redis grant indexes", () => {
  it("expire with the longest-kept grant they list, so ended grants leave nothing behind", async () => {
    const prefix = `${redis.prefix}grant-ttl:`;
    const store = new RedisGrantStore({ client: redis.client, prefix });
    const soon = grant({ expiresAt: NOW + 1000 });
    const later = grant({ principalId: soon.principalId, expiresAt: NOW + 86_400_000 });
    await created(store, later);
    await created(store, soon);
    const record = await redis.client.pTTL(`${prefix}g:${later.grantId}`);
    const index = await redis.client.pTTL(`${prefix}p:${later.principalId}`);
    const approver = await redis.client.pTTL(`${prefix}a:${soon.approvedBy}`);
    expect(index).toBeGreaterThan(0);
    expect(Math.abs(index - record)).toBeLessThan(5000); // the longer grant's, not the shorter's
    expect(approver).toBeGreaterThan(0);
  });

  it("hold what one person leaves behind to their limit: a loop of approvals adds no keys", async () => {
    const prefix = `${redis.prefix}grant-loop:${n++}:`;
    const store = new RedisGrantStore({ client: redis.client, prefix });
    const limits = { perApprover: 5, perPrincipal: 100 };
    const keys = async () => (await redis.client.keys(`${prefix}*`)).length;
    const human = unique("human");
    const agent = unique("agent");
    for (let i = 0; i < 100; i++)
      await store.approve(grant({ approvedBy: human, principalId: agent }), limits);
    // The record, the approver's and the agent's sets, the agent's active set.
    expect(await keys()).toBe(4);
    for (let i = 0; i < 100; i++) {
      const approval = await store.approve(
        grant({ approvedBy: human, createdAt: NOW + i }),
        limits,
      );
      if (approval.outcome === "refused") throw new Error(approval.reason);
      await store.revoke(approval.grant.grantId, undefined, NOW + i);
    }
    // Each ended grant kept: its record and its agent's set; at most the limit and the newest.
    expect(await keys()).toBeLessThanOrEqual(4 + 2 * (limits.perApprover + 1));
  });
});

describe("the PostgreSQL migration", () => {
  it("runs from several instances at once without a failure", async () => {
    const fresh = `portcullis_test_${crypto.randomUUID().replace(/-/g, "")}`;
    const pools = Array.from(
      { length: 4 },
      () =>
        new pg.Pool({
          connectionString:
            process.env.PORTCULLIS_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test",
          options: `-c search_path=${fresh}`,
          max: 1,
        }),
    );
    try {
      await pool.query(`CREATE SCHEMA ${fresh}`);
      // Each round starts from nothing: the race is in creating the tables.
      for (let round = 0; round < 3; round++) {
        await pool.query(`DROP SCHEMA ${fresh} CASCADE; CREATE SCHEMA ${fresh}`);
        const results = await Promise.allSettled(pools.map((each) => migrate(each)));
        expect(results.map((result) => result.status)).toEqual(Array(4).fill("fulfilled"));
      }
    } finally {
      await Promise.all(pools.map((each) => each.end()));
      await pool.query(`DROP SCHEMA IF EXISTS ${fresh} CASCADE`);
    }
  });

  it("adds the grant key column to a database made before it, and runs again harmlessly", async () => {
    const old = `portcullis_test_${crypto.randomUUID().replace(/-/g, "")}`;
    const oldPool = new pg.Pool({
      connectionString: process.env.PORTCULLIS_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test",
      options: `-c search_path=${old}`,
      max: 1,
    });
    try {
      await pool.query(`CREATE SCHEMA ${old}`);
      // The tables as the earlier migration made them, with a grant in them.
      const earlier = readFileSync(MIGRATION_FILE, "utf8").replace(
        /^DO \$\$[\s\S]*?^END \$\$;$/gm,
        "",
      );
      await oldPool.query(earlier);
      const columns = async () =>
        (
          await oldPool.query(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'portcullis_grants'",
            [old],
          )
        ).rows.map((row) => row.column_name as string);
      expect(await columns()).not.toContain("jkt");
      const before = grant();
      await oldPool.query(
        `INSERT INTO portcullis_grants (grant_id, principal_id, status, capabilities, approved_by, created_at, expires_at)
         VALUES ($1, $2, 'active', $3, $4, $5, $6)`,
        [
          before.grantId,
          before.principalId,
          [...before.capabilities],
          before.approvedBy,
          NOW,
          NOW + 60_000,
        ],
      );
      await migrate(oldPool);
      await migrate(oldPool);
      expect(await columns()).toContain("jkt");
      const store = new PostgresGrantStore({ pool: oldPool });
      expect(await store.get(before.grantId)).not.toHaveProperty("jkt");
      const bound = grant({ jkt: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" });
      await created(store, bound);
      expect((await store.get(bound.grantId))?.jkt).toBe(bound.jkt);
      // The codes and refresh tokens gained who holds them, and each token its generation.
      const added = await oldPool.query(
        `SELECT table_name || '.' || column_name AS name FROM information_schema.columns
         WHERE table_schema = $1 AND table_name <> 'portcullis_grants'
           AND column_name IN ('approved_by', 'client_id', 'created_at', 'generation')`,
        [old],
      );
      expect(added.rows.map((row) => row.name).sort()).toEqual([
        "portcullis_authorization_codes.approved_by",
        "portcullis_authorization_codes.client_id",
        "portcullis_refresh_families.approved_by",
        "portcullis_refresh_families.client_id",
        "portcullis_refresh_families.created_at",
        "portcullis_refresh_families.generation",
        "portcullis_refresh_tokens.generation",
      ]);
    } finally {
      await oldPool.end();
      await pool.query(`DROP SCHEMA IF EXISTS ${old} CASCADE`);
    }
  });

  it("runs again without queueing grant queries behind a transaction that reads grants", async () => {
    // Each instance migrates as it starts: a lock it takes waits behind any open transaction, and
    // every grant query would queue behind that wait.
    const reader = await pool.connect();
    try {
      await reader.query("BEGIN");
      await reader.query("SELECT count(*) FROM portcullis_grants");
      await migrate(pool, { timeoutMs: 3_000 });
      await new PostgresGrantStore({ pool }).get("no-such-grant");
    } finally {
      await reader.query("ROLLBACK");
      reader.release();
    }
  });

  it("rejects in bounded time when the server does not answer", async () => {
    const stalled = { query: () => new Promise<never>(() => {}) };
    await expect(migrate(stalled as never, { timeoutMs: 50 })).rejects.toThrow(/50 ms/);
    await expect(migrate(pool, { timeoutMs: 2 ** 31 })).rejects.toThrow(/timeoutMs/);
  });

  it("is the shipped migration.sql, and migrate() created every table and index it names", async () => {
    const sql = readFileSync(MIGRATION_FILE, "utf8");
    const names = [...sql.matchAll(/(?:TABLE|INDEX) IF NOT EXISTS (\w+)/g)].map((m) => m[1]);
    const found = await pool.query(
      "SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1",
      [schema],
    );
    const present = new Set(found.rows.map((row) => row.relname as string));
    for (const name of names) expect(present, name).toContain(name);
    expect(names).toHaveLength(17); // five tables, twelve indexes
    const functions = await pool.query(
      "SELECT proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1",
      [schema],
    );
    expect(functions.rows.map((row) => row.proname)).toContain("portcullis_approve_grant");
  });
});
