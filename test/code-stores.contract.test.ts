import { describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../src/core/errors.ts";
import {
  type AuthorizationCodeRecord,
  type AuthorizationCodeStore,
  MEMORY_SPENT_KEPT,
  MemoryAuthorizationCodeStore,
  MemoryRefreshTokenStore,
  type RefreshTokenRecord,
  type RefreshTokenStore,
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

const codeStores: [string, () => AuthorizationCodeStore][] = [
  ["memory", () => new MemoryAuthorizationCodeStore()],
  [
    "Redis",
    () => new RedisAuthorizationCodeStore({ client: redis.client, prefix: `${redis.prefix}code:` }),
  ],
  ["PostgreSQL", () => new PostgresAuthorizationCodeStore({ pool })],
];
const refreshStores: [string, () => RefreshTokenStore][] = [
  ["memory", () => new MemoryRefreshTokenStore()],
  [
    "Redis",
    () => new RedisRefreshTokenStore({ client: redis.client, prefix: `${redis.prefix}refresh:` }),
  ],
  ["PostgreSQL", () => new PostgresRefreshTokenStore({ pool })],
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
    expect(keys).toHaveLength(4);
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
    const kept = code({ expiresAt: far + 60_000 });
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
  it("a full code store refuses the newcomer with StoreUnavailableError, then makes room as codes expire", async () => {
    const store = new MemoryAuthorizationCodeStore({ maxEntries: 3 });
    const held = [code(), code(), code({ expiresAt: NOW + 120_000 })];
    for (const record of held) await store.create(record, NOW);
    await store.redeem(held[0]?.codeHash as string, NOW);
    const refused = store.create(code(), NOW + 1);
    await expect(refused).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(refused).rejects.toMatchObject({ code: "ERR_STORE_UNAVAILABLE", status: 503 });
    // Nothing live was dropped to make room: the spent code still answers reused.
    expect(await store.redeem(held[0]?.codeHash as string, NOW + 2)).toMatchObject({
      outcome: "reused",
    });
    await store.create(code({ expiresAt: NOW + 200_000 }), NOW + 60_000);
    expect(store.size).toBe(2);
  });

  it("a full refresh store refuses a family and a rotation, spending nothing", async () => {
    const store = new MemoryRefreshTokenStore({ maxEntries: 4 });
    const a = token({ expiresAt: NOW + 1000 });
    const x = token({ expiresAt: NOW + 5000 });
    await store.create(a, NOW);
    await store.create(x, NOW);
    await expect(store.create(token(), NOW)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.rotate(a.tokenHash, successor(a), NOW)).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect(await store.find(a.tokenHash, NOW)).toEqual(a);
    // Once a's family has expired, its entries make room.
    expect(await store.rotate(x.tokenHash, successor(x), NOW + 1000)).toMatchObject({
      outcome: "rotated",
    });
    expect(store.size).toBe(3);
    // Revoking a family drops its tokens, keeping the ended family until it expires.
    await store.revokeFamily(x.familyId);
    expect(store.size).toBe(1);
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
    expect(store.size).toBe(1 + 1 + MEMORY_SPENT_KEPT);
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
