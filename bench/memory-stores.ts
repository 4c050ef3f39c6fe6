/**
 * The memory stores' cost per operation as they fill, at 10 000 and 100 000
 * entries: recording n entries into an empty store sized for n, reading each,
 * recording n more once the first n have expired (so every call also drops
 * what has expired), and 2 000 newcomers at a store full of live entries (the
 * flood path: refused, or pushing out only what the store may drop).
 * express-session's MemoryStore is the reference line. A phase that runs past
 * its budget stops and reports the cost per operation of what it did.
 */
import MemoryStoreModule from "express-session";
import { MemoryLoginAttemptStore, MemoryRateLimitStore, MemorySessionStore } from "portcullis";
import {
  type Grant,
  MemoryGrantStore,
  MemoryPendingRequestStore,
  MemoryReplayStore,
} from "portcullis/agentauth";
import { type DeviceCodeRecord, MemoryClientStore, MemoryDeviceCodeStore } from "portcullis/oauth2";

const SIZES = [10_000, 100_000] as const;
const NEWCOMERS = 2_000;
const BUDGET_MS = 3_000;
// Entries live ten minutes; the expire phase runs an hour later.
const T0 = 1_800_000_000_000;
const LIFETIME = 600_000;
const LATER = T0 + 3_600_000;

type Call = (i: number, now: number) => unknown;

interface Subject {
  readonly record: Call;
  readonly read?: Call;
  /** Records entry i once the first n have expired; defaults to `record` with fresh keys. */
  readonly expire?: Call;
  /** A newcomer at a full store. */
  readonly newcomer?: Call;
}

interface StoreUnderTest {
  readonly name: string;
  make(n: number): Subject;
}

const swallow = (result: unknown): unknown =>
  result instanceof Promise ? result.catch(() => undefined) : result;

const policy = { algorithm: "fixed-window", limit: 100, windowMs: LIFETIME } as const;

function deviceRecord(client: string, i: number, now: number): DeviceCodeRecord {
  return {
    deviceCodeHash: `dc-${client}-${i}`,
    userCodeHash: `uc-${client}-${i}`,
    clientId: client,
    scope: ["read"],
    createdAt: now,
    expiresAt: now + LIFETIME,
    intervalMs: 5000,
    status: "pending",
  };
}

// One grant per human and per agent here: no limit is reached.
const LIMITS = { perApprover: 100, perPrincipal: 10_000 };

function grant(i: number, now: number, prefix = "g"): Grant {
  return {
    grantId: `${prefix}-${i}`,
    principalId: `agent-${prefix}-${i}`,
    status: "active",
    capabilities: ["read"],
    approvedBy: `human-${prefix}-${i}`,
    createdAt: now,
    expiresAt: now + LIFETIME,
  };
}

const stores: readonly StoreUnderTest[] = [
  {
    name: "MemoryReplayStore",
    make(n) {
      const store = new MemoryReplayStore({ maxEntries: n });
      return {
        record: (i, now) => store.setIfAbsent(`id-${i}`, now + LIFETIME, now),
        read: (i, now) => store.setIfAbsent(`id-${i}`, now + LIFETIME, now),
        expire: (i, now) => store.setIfAbsent(`later-${i}`, now + LIFETIME, now),
        newcomer: (i, now) => swallow(store.setIfAbsent(`new-${i}`, now + LIFETIME, now)),
      };
    },
  },
  {
    name: "MemoryDeviceCodeStore",
    make(n) {
      const store = new MemoryDeviceCodeStore({ maxEntries: n });
      return {
        record: (i, now) => store.create(deviceRecord(`client-${i}`, 0, now), now),
        read: (i, now) => store.findByUserCode(`uc-client-${i}-0`, now),
        expire: (i, now) => store.create(deviceRecord(`client-${i}`, 1, now), now),
        newcomer: (i, now) => store.create(deviceRecord(`newcomer-${i}`, 0, now), now),
      };
    },
  },
  {
    name: "MemoryGrantStore",
    make(n) {
      const store = new MemoryGrantStore({ maxEntries: n });
      return {
        record: (i, now) => store.approve(grant(i, now), LIMITS),
        read: (i) => store.listByPrincipal(`agent-g-${i}`),
        expire: (i, now) => store.approve(grant(i, now, "later"), LIMITS),
        newcomer: (i, now) => swallow(store.approve(grant(i, now, "new"), LIMITS)),
      };
    },
  },
  {
    name: "MemoryPendingRequestStore",
    make(n) {
      const store = new MemoryPendingRequestStore({ maxEntries: n });
      const request = (i: number, now: number, prefix: string) =>
        store.create({
          principalId: `${prefix}-${i}`,
          userCodeHash: `uc-${prefix}-${i}`,
          capabilities: ["read"],
          createdAt: now,
          expiresAt: now + LIFETIME,
        });
      return {
        record: (i, now) => request(i, now, "agent"),
        read: (i, now) => store.getByUserCode(`uc-agent-${i}`, now),
        expire: (i, now) => request(i, now, "later"),
        newcomer: (i, now) => swallow(request(i, now, "new")),
      };
    },
  },
  {
    name: "MemorySessionStore",
    make(n) {
      let clock = T0;
      const store = new MemorySessionStore({ maxEntries: n, now: () => clock });
      const signedIn = (now: number) => ({
        data: { theme: "dark" },
        principal: { name: "alice", authorities: ["ROLE_USER"] },
        createdAt: now,
        lastAccessAt: now,
      });
      return {
        record: (i, now) => {
          clock = now;
          return store.create(`s-${i}`, signedIn(now), LIFETIME);
        },
        read: (i, now) => {
          clock = now;
          return store.get(`s-${i}`);
        },
        expire: (i, now) => {
          clock = now;
          return store.create(`later-${i}`, signedIn(now), LIFETIME);
        },
        newcomer: (i, now) => {
          clock = now;
          return store.create(
            `anon-${i}`,
            { data: {}, createdAt: now, lastAccessAt: now },
            LIFETIME,
          );
        },
      };
    },
  },
  {
    name: "MemoryRateLimitStore",
    make(n) {
      const store = new MemoryRateLimitStore({ maxEntries: n });
      return {
        record: (i, now) => store.hit(`ip-${i}`, policy, now),
        read: (i, now) => store.hit(`ip-${i}`, policy, now),
        expire: (i, now) => store.hit(`later-${i}`, policy, now),
        newcomer: (i, now) => store.hit(`new-${i}`, policy, now),
      };
    },
  },
  {
    name: "MemoryLoginAttemptStore",
    make(n) {
      const store = new MemoryLoginAttemptStore({ maxEntries: n });
      return {
        record: (i, now) => store.consume(`user-${i}`, 100, LIFETIME, now),
        read: (i, now) => store.consume(`user-${i}`, 100, LIFETIME, now),
        expire: (i, now) => store.consume(`later-${i}`, 100, LIFETIME, now),
        newcomer: (i, now) => store.consume(`new-${i}`, 100, LIFETIME, now),
      };
    },
  },
  {
    name: "MemoryClientStore",
    make(n) {
      const store = new MemoryClientStore({ maxEntries: n });
      return {
        record: (i) => store.register({ clientId: `client-${i}`, public: true }),
        read: (i) => store.get(`client-${i}`),
        newcomer: (i) => swallow(store.register({ clientId: `new-${i}`, public: true })),
      };
    },
  },
  {
    // The reference: unbounded, expiry checked on read only.
    name: "express-session MemoryStore",
    make() {
      const store = new MemoryStoreModule.MemoryStore();
      const cookie = { originalMaxAge: LIFETIME, expires: new Date(Date.now() + LIFETIME) };
      return {
        record: (i) =>
          new Promise<void>((done) =>
            store.set(`s-${i}`, { cookie, user: "alice" } as never, () => done()),
          ),
        read: (i) => new Promise<void>((done) => store.get(`s-${i}`, () => done())),
      };
    },
  },
];

interface Phase {
  readonly ms: number;
  readonly done: number;
}

async function timed(calls: number, call: Call, now: number): Promise<Phase> {
  const start = performance.now();
  let done = 0;
  while (done < calls) {
    const result = call(done, now);
    if (result instanceof Promise) await result;
    done++;
    if ((done & 255) === 0 && performance.now() - start > BUDGET_MS) break;
  }
  return { ms: performance.now() - start, done };
}

function cell(phase: Phase | undefined, calls: number): string {
  if (phase === undefined) return "—".padStart(22);
  const ns = (phase.ms * 1e6) / phase.done;
  const total = phase.done === calls ? `${phase.ms.toFixed(1)} ms` : `stopped at ${phase.done}`;
  return `${total.padStart(13)} ${`${ns.toFixed(0)} ns`.padStart(8)}`;
}

async function measure(store: StoreUnderTest, n: number): Promise<string> {
  const subject = store.make(n);
  const record = await timed(n, subject.record, T0);
  const read = subject.read === undefined ? undefined : await timed(n, subject.read, T0 + 1);
  // A second store, full of live entries, for the newcomers.
  let newcomer: Phase | undefined;
  if (subject.newcomer !== undefined) {
    const full = store.make(n);
    await timed(n, full.record, T0);
    newcomer = await timed(NEWCOMERS, full.newcomer as Call, T0 + 2);
  }
  const expire = subject.expire === undefined ? undefined : await timed(n, subject.expire, LATER);
  return `  ${store.name.padEnd(28)} ${String(n).padStart(7)} ${cell(record, n)} ${cell(read, n)} ${cell(expire, n)} ${cell(newcomer, NEWCOMERS)}`;
}

export async function memoryStoreBenchmarks(): Promise<void> {
  console.log(
    `\nmemory stores: n entries recorded, read, and recorded again once expired; ${NEWCOMERS} newcomers at a full store (total, then per operation)`,
  );
  console.log(
    `  ${"store".padEnd(28)} ${"n".padStart(7)} ${"record".padStart(22)} ${"read".padStart(22)} ${"expire".padStart(22)} ${"full".padStart(22)}`,
  );
  for (const store of stores) await measure(store, 1_000); // warm-up
  for (const store of stores) for (const n of SIZES) console.log(await measure(store, n));
}

if (import.meta.url === `file://${process.argv[1]}`) await memoryStoreBenchmarks();
