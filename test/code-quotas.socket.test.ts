/**
 * One signed-in person looping consents, over a real socket with oauth4webapi
 * redeeming: what the loop leaves in the code and refresh-token stores is
 * bounded per person, a new consent of the same client replaces what the
 * earlier one made, and only the person over a quota is refused; on the
 * memory stores, on Redis and on PostgreSQL, with many consents in flight.
 */
import * as oauth from "oauth4webapi";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import type { AgentAuthStores } from "../src/agentauth/index.ts";
import {
  type AuthorizationCodeStore,
  MemoryAuthorizationCodeStore,
  MemoryRefreshTokenStore,
  type RefreshTokenStore,
} from "../src/oauth2/index.ts";
import {
  PostgresAuthorizationCodeStore,
  PostgresRefreshTokenStore,
} from "../src/stores/postgres/index.ts";
import { RedisAuthorizationCodeStore, RedisRefreshTokenStore } from "../src/stores/redis/index.ts";
import {
  approvedCallback,
  type CodeSite,
  codeSite,
  DESKTOP,
  LOOPBACK_REDIRECT,
  pkce,
  redeem,
  refreshRequest,
  tokenError,
} from "./support/code-flow.ts";
import { postgresForTests } from "./support/postgres.ts";
import { redisForTests } from "./support/redis.ts";

const redis = redisForTests();
const postgres = postgresForTests("quotas", { max: 30 });

const sites: CodeSite[] = [];
afterAll(async () => {
  await Promise.all(sites.map((site) => site.close()));
});
afterEach(() => {
  vi.restoreAllMocks();
});

async function site(stores: AgentAuthStores = {}): Promise<CodeSite> {
  const made = await codeSite({ stores });
  sites.push(made);
  return made;
}

/** `count` more public clients on `site`, each with the loopback redirect. */
async function moreClients(on: CodeSite, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `quota-client-${i}-${crypto.randomUUID()}`);
  for (const clientId of ids)
    await on.clients.register({ clientId, public: true, redirectUris: [LOOPBACK_REDIRECT] });
  return ids;
}

/** A consent by `human` for `clientId`, and the verifier its code needs. */
async function consented(on: CodeSite, human: string, clientId = DESKTOP) {
  const { verifier, challenge } = await pkce();
  const callback = await approvedCallback(on, { challenge, clientId }, { human });
  return { callback, verifier, clientId };
}

async function tokensOf(on: CodeSite, given: Awaited<ReturnType<typeof consented>>) {
  const response = await redeem(on, given.callback, given.verifier, { clientId: given.clientId });
  return oauth.processAuthorizationCodeResponse(on.as, { client_id: given.clientId }, response);
}

const prefixOf = (name: string) => `${redis.prefix}${name}:`;

interface Engine {
  readonly codes: AuthorizationCodeStore;
  readonly refresh: RefreshTokenStore;
  /** Entries (keys, rows) the two stores hold. */
  readonly held: () => Promise<number>;
}

/** Each engine's stores, fresh. */
const engines: [string, () => Engine][] = [
  [
    "memory",
    () => {
      const codes = new MemoryAuthorizationCodeStore();
      const refresh = new MemoryRefreshTokenStore();
      return { codes, refresh, held: async () => codes.size + refresh.size };
    },
  ],
  [
    "Redis",
    () => {
      const prefix = prefixOf(crypto.randomUUID());
      return {
        codes: new RedisAuthorizationCodeStore({ client: redis.client, prefix: `${prefix}code:` }),
        refresh: new RedisRefreshTokenStore({ client: redis.client, prefix: `${prefix}refresh:` }),
        held: async () => (await redis.client.keys(`${prefix}*`)).length,
      };
    },
  ],
  [
    "PostgreSQL",
    () => ({
      codes: new PostgresAuthorizationCodeStore({ pool: postgres.pool, timeoutMs: 5000 }),
      refresh: new PostgresRefreshTokenStore({ pool: postgres.pool, timeoutMs: 5000 }),
      held: async () => {
        const { rows } = await postgres.pool.query(
          `SELECT (SELECT count(*) FROM portcullis_authorization_codes)
                + (SELECT count(*) FROM portcullis_refresh_families)
                + (SELECT count(*) FROM portcullis_refresh_tokens) AS n`,
        );
        return Number(rows[0]?.n);
      },
    }),
  ],
];

describe("memory stores: one person looping consents denies nobody else", () => {
  it("30 consents of one client by alice hold one code, and bob then gets his", async () => {
    const on = await site({
      authorizationCodes: new MemoryAuthorizationCodeStore({ maxEntries: 20 }),
    });
    let last: Awaited<ReturnType<typeof consented>> | undefined;
    const first = await consented(on, "alice");
    for (let i = 0; i < 30; i++) {
      last = await consented(on, "alice");
      expect(last.callback.searchParams.get("code")).toBeTypeOf("string");
    }
    const bob = await consented(on, "bob");
    expect(bob.callback.searchParams.get("code")).toBeTypeOf("string");
    expect((await tokensOf(on, bob)).access_token).toBeTypeOf("string");
    // The newest consent's code works; the earlier one was replaced and no longer does.
    expect((await tokensOf(on, last as NonNullable<typeof last>)).access_token).toBeTypeOf(
      "string",
    );
    expect(await tokenError(on, await redeem(on, first.callback, first.verifier))).toEqual({
      status: 400,
      error: "invalid_grant",
    });
  });

  it("30 redeemed consents of one client by alice leave her five families, and bob then redeems", async () => {
    const on = await site({ refreshTokens: new MemoryRefreshTokenStore({ maxEntries: 60 }) });
    const refreshTokens: string[] = [];
    for (let i = 0; i < 30; i++)
      refreshTokens.push(
        (await tokensOf(on, await consented(on, "alice"))).refresh_token as string,
      );
    const bob = await tokensOf(on, await consented(on, "bob"));
    expect(bob.refresh_token).toBeTypeOf("string");
    // The oldest families were ended to make room for the newest five.
    expect(await tokenError(on, await refreshRequest(on, refreshTokens[0] as string))).toEqual({
      status: 400,
      error: "invalid_grant",
    });
    expect(await tokenError(on, await refreshRequest(on, refreshTokens[24] as string))).toEqual({
      status: 400,
      error: "invalid_grant",
    });
    for (const token of refreshTokens.slice(25)) {
      const response = await refreshRequest(on, token);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
  });

  it("a person approving more clients than the quota within a code's life is refused, alone, and warned about once", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const on = await site({
      authorizationCodes: new MemoryAuthorizationCodeStore({ maxEntries: 12 }),
    });
    const clients = await moreClients(on, 14);
    const answers = [];
    for (const clientId of clients) answers.push(await consented(on, "alice", clientId));
    const codes = answers.filter((a) => a.callback.searchParams.has("code"));
    const refused = answers.filter((a) => !a.callback.searchParams.has("code"));
    expect(codes).toHaveLength(10);
    expect(refused).toHaveLength(4);
    for (const { callback } of refused) {
      expect(callback.searchParams.get("error")).toBe("temporarily_unavailable");
      expect(`${callback.origin}${callback.pathname}`).toBe(LOOPBACK_REDIRECT);
    }
    // Bob is not over his quota: he gets a code, and so does alice for a client she holds one for.
    expect((await consented(on, "bob")).callback.searchParams.has("code")).toBe(true);
    expect((await consented(on, "alice", clients[0])).callback.searchParams.has("code")).toBe(true);
    expect(error).not.toHaveBeenCalled();
    expect(warn).toHaveBeenCalledTimes(1);
    const line = String(warn.mock.calls[0]?.[0]);
    expect(line).toMatch(/authorization code store/);
    expect(line).toMatch(/10 of 10/);
    expect(line).toMatch(/per person/);
    expect(line).not.toMatch(/alice/);
    expect(warn.mock.calls[0]).toHaveLength(1);
  });
});

describe.each(engines)("%s stores: bounded per person, with consents in flight", (name, make) => {
  it("20 concurrent consents by alice of 20 clients: exactly 10 get a code, bob still gets his", async () => {
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const { codes, refresh } = make();
    const on = await site({ authorizationCodes: codes, refreshTokens: refresh });
    const clients = await moreClients(on, 20);
    const human = `alice-${name}-${crypto.randomUUID()}`;
    const answers = await Promise.all(clients.map((clientId) => consented(on, human, clientId)));
    expect(answers.filter((a) => a.callback.searchParams.has("code"))).toHaveLength(10);
    expect(
      (await consented(on, `bob-${crypto.randomUUID()}`)).callback.searchParams.has("code"),
    ).toBe(true);
  });

  it("20 concurrent consents by alice of one client: one code of them redeems", async () => {
    const { codes, refresh } = make();
    const on = await site({ authorizationCodes: codes, refreshTokens: refresh });
    const human = `alice-${name}-${crypto.randomUUID()}`;
    const answers = await Promise.all(Array.from({ length: 20 }, () => consented(on, human)));
    const statuses = await Promise.all(
      answers.map(async (given) => {
        const response = await redeem(on, given.callback, given.verifier);
        await response.arrayBuffer();
        return response.status;
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
  });

  it("40 redeemed consents by alice of one client leave what five families hold, whatever the loop's length", async () => {
    const { codes, refresh, held } = make();
    const on = await site({ authorizationCodes: codes, refreshTokens: refresh });
    const human = `alice-${name}-${crypto.randomUUID()}`;
    const before = await held();
    const counts: number[] = [];
    for (let i = 0; i < 40; i++) {
      const tokens = await tokensOf(on, await consented(on, human));
      // Each family refreshes a few times, as a client in use does.
      let current = tokens.refresh_token as string;
      for (let r = 0; r < 3; r++) {
        const next = await oauth.processRefreshTokenResponse(
          on.as,
          { client_id: DESKTOP },
          await refreshRequest(on, current),
        );
        current = next.refresh_token as string;
      }
      counts.push((await held()) - before);
    }
    // What ten consents left is what forty leave.
    expect(counts[39]).toBeLessThanOrEqual(counts[9] as number);
    expect(counts[39]).toBeLessThanOrEqual(40);
  }, 120_000);
});
