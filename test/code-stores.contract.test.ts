import { describe, expect, it } from "vitest";
import { StoreFullError, StoreUnavailableError } from "../src/core/errors.ts";
import {
  type AuthorizationCodeRecord,
  type AuthorizationCodeStore,
  type CodeQuotaOptions,
  MemoryAuthorizationCodeStore,
  MemoryRefreshTokenStore,
  type RefreshQuotaOptions,
  type RefreshTokenRecord,
  type RefreshTokenStore,
  SPENT_TOKENS_KEPT,
} from "../src/oauth2/index.ts";
import {
  PostgresAuthorizationCodeStore,
  PostgresRefreshTokenStore,
} from "../src/stores/postgres/index.ts";
import { RedisAuthorizationCodeStore, RedisRefreshTokenStore } from "../src/stores/redis/index.ts";
import { postgresForTests } from "./support/postgres.ts";
import { redisForTests } from "./support/redis.ts";

const redis = redisForTests();
const { pool } = postgresForTests("codes", { max: 20 });

let n = 0;
const unique = (what: string) => `${what}-${Date.now()}-${n++}`;
const NOW = Date.now();

const codeStores: [string, (quota?: CodeQuotaOptions) => AuthorizationCodeStore][] = [
  ["memory", (quota) => new MemoryAuthorizationCodeStore(quota)],
  [
    "Redis",
    (quota) =>
      new RedisAuthorizationCodeStore({
        client: redis.client,
        prefix: `${redis.prefix}code:`,
        ...quota,
      }),
  ],
  [
    "PostgreSQL",
    (quota) => new PostgresAuthorizationCodeStore({ pool, timeoutMs: 5000, ...quota }),
  ],
];
const refreshStores: [string, (quota?: RefreshQuotaOptions) => RefreshTokenStore][] = [
  ["memory", (quota) => new MemoryRefreshTokenStore(quota)],
  [
    "Redis",
    (quota) =>
      new RedisRefreshTokenStore({
        client: redis.client,
        prefix: `${redis.prefix}refresh:`,
        ...quota,
      }),
  ],
  ["PostgreSQL", (quota) => new PostgresRefreshTokenStore({ pool, timeoutMs: 5000, ...quota })],
];

function code(overrides: Partial<AuthorizationCodeRecord> = {}): AuthorizationCodeRecord {
  return {
    codeHash: unique("code"),
    clientId: "https://client.example/meta.json",
    redirectUri: "http://127.0.0.1:33418/callback",
    codeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    resource: "https://api.example.com/mcp",
    scope: ["count", "read"],
    grantId: unique("grant"),
    approvedBy: "alice",
    expiresAt: NOW + 60_000,
    ...overrides,
  };
}

function token(overrides: Partial<RefreshTokenRecord> = {}): RefreshTokenRecord {
  return {
    tokenHash: unique("rt"),
    familyId: unique("family"),
    clientId: "https://client.example/meta.json",
    approvedBy: "alice",
    grantId: unique("grant"),
    scope: ["count"],
    resource: "https://api.example.com/mcp",
    expiresAt: NOW + 3_600_000,
    ...overrides,
  };
}

const successor = (record: RefreshTokenRecord, overrides: Partial<RefreshTokenRecord> = {}) =>
  token({ ...record, tokenHash: unique("rt"), ...overrides });

describe.each(codeStores)("AuthorizationCodeStore: %s", (_name, make) => {
  it("redeems a code once, then answers reused with its record until it expires", async () => {
    const store = make();
    const record = code();
    await store.create(record, NOW);
    expect(await store.redeem(record.codeHash, NOW + 1)).toEqual({ outcome: "redeemed", record });
    expect(await store.redeem(record.codeHash, NOW + 2)).toEqual({ outcome: "reused", record });
    expect(await store.redeem(record.codeHash, NOW + 60_000)).toEqual({ outcome: "unknown" });
    expect(await store.redeem(unique("none"), NOW)).toEqual({ outcome: "unknown" });
    expect(await store.redeem("nul\u0000", NOW)).toEqual({ outcome: "unknown" });
  });

  it("keeps an empty scope a list", async () => {
    const store = make();
    const record = code({ scope: [] });
    await store.create(record, NOW);
    expect(await store.redeem(record.codeHash, NOW)).toEqual({ outcome: "redeemed", record });
  });

  it("refuses a hash already held", async () => {
    const store = make();
    const record = code();
    await store.create(record, NOW);
    await expect(store.create({ ...record, clientId: "other" }, NOW)).rejects.toThrow();
    expect(await store.redeem(record.codeHash, NOW)).toEqual({ outcome: "redeemed", record });
  });

  it("answers an expired code unknown, spent or not, and takes a new code of its hash", async () => {
    const store = make();
    const fresh = code({ expiresAt: NOW + 1000 });
    const spent = code({ expiresAt: NOW + 1000 });
    await store.create(fresh, NOW);
    await store.create(spent, NOW);
    await store.redeem(spent.codeHash, NOW + 1);
    expect(await store.redeem(fresh.codeHash, NOW + 1000)).toEqual({ outcome: "unknown" });
    expect(await store.redeem(spent.codeHash, NOW + 1000)).toEqual({ outcome: "unknown" });
    const again = { ...fresh, expiresAt: NOW + 70_000 };
    await store.create(again, NOW + 10_000);
    expect(await store.redeem(fresh.codeHash, NOW + 10_001)).toEqual({
      outcome: "redeemed",
      record: again,
    });
  });

  it("of 50 concurrent redemptions, exactly one is redeemed and 49 reused", async () => {
    const store = make();
    const record = code();
    await store.create(record, NOW);
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => store.redeem(record.codeHash, NOW + 1)),
    );
    const outcomes = answers.map((a) => a.outcome);
    expect(outcomes.filter((o) => o === "redeemed")).toHaveLength(1);
    expect(outcomes.filter((o) => o === "reused")).toHaveLength(49);
    for (const answer of answers) expect(answer).toMatchObject({ record });
  });

  it("a new code of one client by one person replaces the earlier one, live or spent", async () => {
    const store = make();
    const person = unique("person");
    const first = code({ approvedBy: person });
    const second = code({ approvedBy: person });
    const third = code({ approvedBy: person });
    const elsewhere = code({ approvedBy: person, clientId: "https://other.example/meta.json" });
    const someoneElse = code({ approvedBy: unique("person") });
    for (const record of [first, elsewhere, someoneElse, second]) await store.create(record, NOW);
    expect(await store.redeem(first.codeHash, NOW + 1)).toEqual({ outcome: "unknown" });
    expect(await store.redeem(second.codeHash, NOW + 1)).toMatchObject({ outcome: "redeemed" });
    await store.create(third, NOW + 2);
    // The spent one went too: its replay is no longer seen.
    expect(await store.redeem(second.codeHash, NOW + 3)).toEqual({ outcome: "unknown" });
    for (const record of [third, elsewhere, someoneElse])
      expect(await store.redeem(record.codeHash, NOW + 3)).toMatchObject({ outcome: "redeemed" });
  });

  it("a person at maxCodesPerPerson is refused (StoreFullError, with figures); nobody else is, and an expired code makes room", async () => {
    const store = make({ maxCodesPerPerson: 3 });
    const person = unique("person");
    const held = [0, 1, 2].map((i) =>
      code({ approvedBy: person, clientId: `client-${i}`, expiresAt: NOW + 1000 * (i + 1) }),
    );
    for (const record of held) await store.create(record, NOW);
    await store.redeem(held[0]?.codeHash as string, NOW);
    const refused = store.create(code({ approvedBy: person, clientId: "client-3" }), NOW + 1);
    await expect(refused).rejects.toBeInstanceOf(StoreFullError);
    await expect(refused).rejects.toMatchObject({
      code: "ERR_STORE_FULL",
      status: 503,
      quota: "person",
      held: 3,
      limit: 3,
    });
    // Nothing was dropped: the spent code still answers reused, the others redeem.
    expect(await store.redeem(held[0]?.codeHash as string, NOW + 2)).toMatchObject({
      outcome: "reused",
    });
    await store.create(code({ approvedBy: unique("person"), clientId: "client-3" }), NOW + 2);
    // Another code for a client the person holds one for replaces it, within the quota.
    await store.create(code({ approvedBy: person, clientId: "client-2" }), NOW + 3);
    // Once the first has expired, there is room.
    await store.create(code({ approvedBy: person, clientId: "client-3" }), NOW + 1000);
    expect(await store.redeem(held[1]?.codeHash as string, NOW + 1001)).toMatchObject({
      outcome: "redeemed",
    });
  });

  it("of 30 concurrent codes by one person for 30 clients, exactly maxCodesPerPerson are stored", async () => {
    const store = make({ maxCodesPerPerson: 10 });
    const person = unique("person");
    const records = Array.from({ length: 30 }, (_, i) =>
      code({ approvedBy: person, clientId: `client-${i}` }),
    );
    const settled = await Promise.allSettled(records.map((record) => store.create(record, NOW)));
    const stored = settled.filter((result) => result.status === "fulfilled");
    expect(stored).toHaveLength(10);
    for (const result of settled)
      if (result.status === "rejected") expect(result.reason).toBeInstanceOf(StoreFullError);
    const redeemed = await Promise.all(records.map((r) => store.redeem(r.codeHash, NOW + 1)));
    expect(redeemed.filter((r) => r.outcome === "redeemed")).toHaveLength(10);
  });

  it("of 30 concurrent codes by one person for one client, exactly one is left to redeem", async () => {
    const store = make();
    const person = unique("person");
    const records = Array.from({ length: 30 }, () => code({ approvedBy: person }));
    await Promise.all(records.map((record) => store.create(record, NOW)));
    const redeemed = await Promise.all(records.map((r) => store.redeem(r.codeHash, NOW + 1)));
    expect(redeemed.filter((r) => r.outcome === "redeemed")).toHaveLength(1);
    expect(redeemed.filter((r) => r.outcome === "unknown")).toHaveLength(29);
  });
});

describe.each(refreshStores)("RefreshTokenStore: %s", (_name, make) => {
  it("rotates a → b → c; a reused after rotation answers reused with its record", async () => {
    const store = make();
    const a = token();
    const b = successor(a);
    const c = successor(a, { scope: [] });
    await store.create(a, NOW);
    expect(await store.find(a.tokenHash, NOW)).toEqual(a);
    expect(await store.rotate(a.tokenHash, b, NOW + 1)).toEqual({ outcome: "rotated", record: a });
    expect(await store.rotate(b.tokenHash, c, NOW + 2)).toEqual({ outcome: "rotated", record: b });
    expect(await store.find(c.tokenHash, NOW + 3)).toEqual(c);
    // A spent token is still found (so the caller can go on to see reuse) and answers reused.
    expect(await store.find(a.tokenHash, NOW + 3)).toEqual(a);
    expect(await store.rotate(a.tokenHash, successor(a), NOW + 3)).toEqual({
      outcome: "reused",
      record: a,
    });
    expect(await store.rotate(b.tokenHash, successor(a), NOW + 4)).toEqual({
      outcome: "reused",
      record: b,
    });
    // Reuse changed nothing: c is still the family's token.
    const d = successor(a);
    expect(await store.rotate(c.tokenHash, d, NOW + 5)).toEqual({ outcome: "rotated", record: c });
    expect(await store.rotate(unique("none"), successor(a), NOW)).toEqual({ outcome: "unknown" });
    expect(await store.find(unique("none"), NOW)).toBeUndefined();
    expect(await store.rotate("nul\u0000", successor(a), NOW)).toEqual({ outcome: "unknown" });
  });

  it("refuses a next of another family or client, spending nothing", async () => {
    const store = make();
    const a = token();
    await store.create(a, NOW);
    const other = token();
    await store.create(other, NOW);
    expect(await store.rotate(a.tokenHash, successor(other), NOW)).toEqual({ outcome: "unknown" });
    expect(await store.rotate(a.tokenHash, successor(a, { clientId: "thief" }), NOW)).toEqual({
      outcome: "unknown",
    });
    const b = successor(a);
    expect(await store.rotate(a.tokenHash, b, NOW)).toEqual({ outcome: "rotated", record: a });
  });

  it("refuses a family id or token hash already held", async () => {
    const store = make();
    const a = token();
    await store.create(a, NOW);
    await expect(store.create(token({ familyId: a.familyId }), NOW)).rejects.toThrow();
    await expect(store.create(token({ tokenHash: a.tokenHash }), NOW)).rejects.toThrow();
    const b = successor(a);
    await store.create(token(), NOW);
    expect(await store.rotate(a.tokenHash, b, NOW)).toEqual({ outcome: "rotated", record: a });
    // A next whose hash is held fails and spends nothing.
    await expect(
      store.rotate(b.tokenHash, successor(a, { tokenHash: a.tokenHash }), NOW),
    ).rejects.toThrow();
    expect(await store.rotate(b.tokenHash, successor(a), NOW)).toMatchObject({
      outcome: "rotated",
    });
  });

  it("revokeFamily ends the family: no token of it rotates again, current or spent", async () => {
    const store = make();
    const a = token();
    const b = successor(a);
    await store.create(a, NOW);
    await store.rotate(a.tokenHash, b, NOW);
    await store.revokeFamily(a.familyId);
    await store.revokeFamily(a.familyId);
    await store.revokeFamily(unique("none"));
    expect(await store.rotate(b.tokenHash, successor(a), NOW + 1)).toEqual({ outcome: "unknown" });
    expect(await store.rotate(a.tokenHash, successor(a), NOW + 1)).toEqual({ outcome: "unknown" });
    expect(await store.find(b.tokenHash, NOW + 1)).toBeUndefined();
    // Its id cannot start again while it would have lived.
    await expect(store.create(token({ familyId: a.familyId }), NOW + 2)).rejects.toThrow();
  });

  it("refuses a current token past its own expiry, and everything past the family's", async () => {
    const store = make();
    const a = token({ expiresAt: NOW + 10_000 });
    const b = successor(a, { expiresAt: NOW + 5000 });
    await store.create(a, NOW);
    await store.rotate(a.tokenHash, b, NOW);
    expect(await store.rotate(b.tokenHash, successor(a), NOW + 5000)).toEqual({
      outcome: "unknown",
    });
    expect(await store.rotate(a.tokenHash, successor(a), NOW + 9999)).toMatchObject({
      outcome: "reused",
    });
    // No rotation outlives the family's first token.
    const x = token({ expiresAt: NOW + 10_000 });
    const y = successor(x, { expiresAt: NOW + 20_000 });
    await store.create(x, NOW);
    await store.rotate(x.tokenHash, y, NOW);
    expect(await store.rotate(y.tokenHash, successor(x), NOW + 10_000)).toEqual({
      outcome: "unknown",
    });
    expect(await store.rotate(x.tokenHash, successor(x), NOW + 10_000)).toEqual({
      outcome: "unknown",
    });
  });

  it("forgets an expired family; its id may start again", async () => {
    const store = make();
    const a = token({ expiresAt: NOW + 1000 });
    const b = successor(a);
    await store.create(a, NOW);
    await store.rotate(a.tokenHash, b, NOW);
    expect(await store.find(a.tokenHash, NOW + 1000)).toBeUndefined();
    expect(await store.rotate(b.tokenHash, successor(a), NOW + 1000)).toEqual({
      outcome: "unknown",
    });
    expect(await store.rotate(a.tokenHash, successor(a), NOW + 1000)).toEqual({
      outcome: "unknown",
    });
    const again = token({ familyId: a.familyId, expiresAt: NOW + 5000 });
    await store.create(again, NOW + 1000);
    expect(await store.rotate(a.tokenHash, successor(again), NOW + 1001)).toEqual({
      outcome: "unknown",
    });
    expect(await store.rotate(again.tokenHash, successor(again), NOW + 1001)).toMatchObject({
      outcome: "rotated",
    });
  });

  it("of 50 concurrent rotations of one token, exactly one rotates; the rest see reuse", async () => {
    const store = make();
    const a = token();
    await store.create(a, NOW);
    const nexts = Array.from({ length: 50 }, () => successor(a));
    const answers = await Promise.all(nexts.map((next) => store.rotate(a.tokenHash, next, NOW)));
    const outcomes = answers.map((x) => x.outcome);
    expect(outcomes.filter((o) => o === "rotated")).toHaveLength(1);
    expect(outcomes.filter((o) => o === "reused")).toHaveLength(49);
    // Only the winner's next is the family's token.
    const winner = nexts[outcomes.indexOf("rotated")] as RefreshTokenRecord;
    const loser = nexts.find((x) => x !== winner) as RefreshTokenRecord;
    expect(await store.find(loser.tokenHash, NOW)).toBeUndefined();
    expect(await store.rotate(winner.tokenHash, successor(a), NOW)).toMatchObject({
      outcome: "rotated",
    });
  });

  it("remembers a family's last SPENT_TOKENS_KEPT spent tokens: their reuse is seen, an older one is unknown", async () => {
    const store = make();
    const first = token();
    await store.create(first, NOW);
    const spent: RefreshTokenRecord[] = [];
    let current = first;
    for (let i = 0; i < 20; i++) {
      const next = successor(first);
      expect(await store.rotate(current.tokenHash, next, NOW + i)).toMatchObject({
        outcome: "rotated",
      });
      spent.push(current);
      current = next;
    }
    const oldest = spent[spent.length - SPENT_TOKENS_KEPT - 1] as RefreshTokenRecord;
    expect(await store.find(oldest.tokenHash, NOW + 100)).toBeUndefined();
    expect(await store.rotate(oldest.tokenHash, successor(first), NOW + 100)).toEqual({
      outcome: "unknown",
    });
    const kept = spent[spent.length - SPENT_TOKENS_KEPT] as RefreshTokenRecord;
    expect(await store.rotate(kept.tokenHash, successor(first), NOW + 100)).toMatchObject({
      outcome: "reused",
    });
    expect(await store.find(current.tokenHash, NOW + 100)).toEqual(current);
  });

  it("a family past maxFamiliesPerClientAndPerson ends that pair's oldest; other clients and people keep theirs", async () => {
    const store = make({ maxFamiliesPerClientAndPerson: 2, maxFamiliesPerPerson: 10 });
    const person = unique("person");
    const mine = (clientId: string) => token({ approvedBy: person, clientId });
    const [a, b, c] = [mine("desktop"), mine("desktop"), mine("desktop")];
    const other = mine("web");
    const theirs = token({ clientId: "desktop", approvedBy: unique("person") });
    await store.create(a, NOW);
    await store.create(other, NOW + 1);
    await store.create(theirs, NOW + 2);
    await store.create(b, NOW + 3);
    await store.rotate(a.tokenHash, successor(a), NOW + 4);
    await store.create(c, NOW + 5);
    expect(await store.find(a.tokenHash, NOW + 6)).toBeUndefined();
    expect(await store.rotate(a.tokenHash, successor(a), NOW + 6)).toEqual({ outcome: "unknown" });
    for (const kept of [b, c, other, theirs])
      expect(await store.rotate(kept.tokenHash, successor(kept), NOW + 6)).toMatchObject({
        outcome: "rotated",
      });
  });

  it("a family past maxFamiliesPerPerson drops the person's oldest ended family first, then their oldest live one", async () => {
    const store = make({ maxFamiliesPerClientAndPerson: 3, maxFamiliesPerPerson: 3 });
    const person = unique("person");
    const mine = (i: number) => token({ approvedBy: person, clientId: `client-${i}` });
    const [a, b, c, d, e] = [mine(0), mine(1), mine(2), mine(3), mine(4)];
    await store.create(a, NOW);
    await store.create(b, NOW + 1);
    await store.create(c, NOW + 2);
    await store.revokeFamily(b.familyId);
    await store.create(d, NOW + 3);
    // b, ended, went: a is still live, and b's id may start again.
    expect(await store.find(a.tokenHash, NOW + 4)).toEqual(a);
    await store.create(e, NOW + 4);
    expect(await store.find(a.tokenHash, NOW + 5)).toBeUndefined();
    for (const kept of [c, d, e]) expect(await store.find(kept.tokenHash, NOW + 5)).toEqual(kept);
    await store.create(
      token({ ...b, approvedBy: unique("person"), tokenHash: unique("rt") }),
      NOW + 6,
    );
  });

  it("of 30 concurrent families by one person of one client, maxFamiliesPerClientAndPerson stay live", async () => {
    const store = make({ maxFamiliesPerClientAndPerson: 5, maxFamiliesPerPerson: 25 });
    const person = unique("person");
    const records = Array.from({ length: 30 }, () => token({ approvedBy: person }));
    await Promise.all(records.map((record) => store.create(record, NOW)));
    const found = await Promise.all(records.map((r) => store.find(r.tokenHash, NOW + 1)));
    expect(found.filter((record) => record !== undefined)).toHaveLength(5);
  });

  it("of 30 concurrent families by one person of 30 clients, maxFamiliesPerPerson stay", async () => {
    const store = make({ maxFamiliesPerClientAndPerson: 5, maxFamiliesPerPerson: 12 });
    const person = unique("person");
    const records = Array.from({ length: 30 }, (_, i) =>
      token({ approvedBy: person, clientId: `client-${i}` }),
    );
    await Promise.all(records.map((record) => store.create(record, NOW)));
    const found = await Promise.all(records.map((r) => store.find(r.tokenHash, NOW + 1)));
    expect(found.filter((record) => record !== undefined)).toHaveLength(12);
  });
});

describe("Redis keys expire with what they hold, by the caller's clock", () => {
  it("drops a code's key at its expiry and a family's keys at the family's", async () => {
    const codes = new RedisAuthorizationCodeStore({
      client: redis.client,
      prefix: `${redis.prefix}ttl-code:`,
    });
    const refresh = new RedisRefreshTokenStore({
      client: redis.client,
      prefix: `${redis.prefix}ttl-refresh:`,
    });
    // A caller two minutes behind Redis's clock: keys still live for their whole span.
    const now = Date.now() - 120_000;
    const record = code({ expiresAt: now + 200 });
    const a = token({ expiresAt: now + 200 });
    const b = successor(a);
    await codes.create(record, now);
    await refresh.create(a, now);
    await refresh.rotate(a.tokenHash, b, now);
    await codes.redeem(record.codeHash, now);
    const keys = await redis.client.keys(`${redis.prefix}ttl-*`);
    // The code and its person's index; the two tokens, the family, its spent list and the person's.
    expect(keys).toHaveLength(7);
    for (const key of keys) {
      const ttl = await redis.client.pTTL(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(200);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await redis.client.keys(`${redis.prefix}ttl-*`)).toEqual([]);
  });
});

describe("PostgreSQL prunes what has expired", () => {
  it("deletes expired codes, and expired families with their tokens, and nothing live", async () => {
    const codes = new PostgresAuthorizationCodeStore({ pool });
    const refresh = new PostgresRefreshTokenStore({ pool });
    const far = NOW + 400 * 86_400_000;
    const gone = code({ expiresAt: far });
    const kept = code({ expiresAt: far + 60_000, clientId: "https://other.example/meta.json" });
    await codes.create(gone, NOW);
    await codes.create(kept, NOW);
    const a = token({ expiresAt: far });
    await refresh.create(a, NOW);
    await refresh.rotate(a.tokenHash, successor(a), NOW);
    const live = token({ expiresAt: far + 60_000 });
    await refresh.create(live, NOW);
    expect(await codes.prune(far)).toBeGreaterThanOrEqual(1);
    expect(await refresh.prune(far)).toBeGreaterThanOrEqual(1);
    const left = await pool.query(
      "SELECT token_hash FROM portcullis_refresh_tokens WHERE family_id = $1",
      [a.familyId],
    );
    expect(left.rows).toEqual([]);
    expect(await codes.redeem(kept.codeHash, far)).toMatchObject({ outcome: "redeemed" });
    expect(await refresh.find(live.tokenHash, far)).toEqual(live);
  });
});

describe("memory stores are bounded", () => {
  it("a full code store refuses the newcomer with StoreFullError, then makes room as codes expire", async () => {
    const store = new MemoryAuthorizationCodeStore({ maxEntries: 3 });
    const held = [
      code({ approvedBy: "ann" }),
      code({ approvedBy: "bea" }),
      code({ approvedBy: "cid", expiresAt: NOW + 120_000 }),
    ];
    for (const record of held) await store.create(record, NOW);
    await store.redeem(held[0]?.codeHash as string, NOW);
    const refused = store.create(code({ approvedBy: "dan" }), NOW + 1);
    await expect(refused).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(refused).rejects.toMatchObject({
      code: "ERR_STORE_FULL",
      status: 503,
      quota: "store",
      held: 3,
      limit: 3,
    });
    // Nothing live was dropped to make room: the spent code still answers reused.
    expect(await store.redeem(held[0]?.codeHash as string, NOW + 2)).toMatchObject({
      outcome: "reused",
    });
    await store.create(code({ approvedBy: "dan", expiresAt: NOW + 200_000 }), NOW + 60_000);
    expect(store.size).toBe(2);
  });

  it("a full refresh store refuses a new family only: a live family reserves its rotations", async () => {
    const store = new MemoryRefreshTokenStore({ maxEntries: 25 });
    const a = token({ approvedBy: "ann", expiresAt: NOW + 1000 });
    const x = token({ approvedBy: "bea", expiresAt: NOW + 5000 });
    await store.create(a, NOW);
    await store.create(x, NOW);
    const refused = store.create(token({ approvedBy: "cid" }), NOW);
    await expect(refused).rejects.toBeInstanceOf(StoreFullError);
    await expect(refused).rejects.toMatchObject({ quota: "store", held: 20, limit: 25 });
    // Rotations need no room: a family holds at most what it reserved.
    let current = a;
    for (let i = 0; i < 20; i++) {
      const next = successor(a);
      expect(await store.rotate(current.tokenHash, next, NOW + i)).toMatchObject({
        outcome: "rotated",
      });
      current = next;
    }
    expect(store.size).toBe(2 + 1 + SPENT_TOKENS_KEPT + 1);
    // Once a's family has expired, its entries make room.
    await store.create(token({ approvedBy: "cid" }), NOW + 1000);
    expect(store.size).toBe(4);
    // Revoking a family drops its tokens and most of its reservation, keeping the ended family.
    await store.revokeFamily(x.familyId);
    expect(store.size).toBe(3);
    await store.create(token({ approvedBy: "dan" }), NOW + 1000);
  });

  it("a family keeps its last spent tokens only: a client refreshing in a loop cannot fill the store", async () => {
    const store = new MemoryRefreshTokenStore({ maxEntries: 20 });
    const first = token();
    await store.create(first, NOW);
    const spent: RefreshTokenRecord[] = [];
    let current = first;
    for (let i = 0; i < 100; i++) {
      const next = successor(first);
      expect(await store.rotate(current.tokenHash, next, NOW + i)).toMatchObject({
        outcome: "rotated",
      });
      spent.push(current);
      current = next;
    }
    // The family, its current token and its last 8 spent ones; another family still fits.
    expect(store.size).toBe(1 + 1 + SPENT_TOKENS_KEPT);
    await store.create(token(), NOW);
    // Reuse of a recent spent token is seen; an older one is refused, as unknown, revoking nothing.
    const recent = spent[spent.length - 1] as RefreshTokenRecord;
    expect(await store.rotate(recent.tokenHash, successor(first), NOW + 200)).toMatchObject({
      outcome: "reused",
    });
    expect(await store.rotate(first.tokenHash, successor(first), NOW + 200)).toEqual({
      outcome: "unknown",
    });
    expect(await store.find(current.tokenHash, NOW + 200)).toEqual(current);
  });

  it("rejects misspelt and malformed options", () => {
    expect(() => new MemoryAuthorizationCodeStore({ maxEntrys: 5 } as never)).toThrow(/maxEntrys/);
    expect(() => new MemoryRefreshTokenStore({ maxEntrys: 5 } as never)).toThrow(/maxEntrys/);
    expect(() => new MemoryAuthorizationCodeStore({ maxEntries: 0 })).toThrow(/maxEntries/);
    expect(() => new MemoryRefreshTokenStore({ maxEntries: 1.5 })).toThrow(/maxEntries/);
  });
});
