/**
 * The authorization-code grant on two agentAuth instances sharing their
 * stores (Redis, then PostgreSQL: grants, replay, codes, refresh tokens; one
 * key set and one issuer), as behind a load balancer: a code redeemed on
 * both at once, and a refresh token rotated on both at once. Exactly one
 * wins; the other is a reuse, and reuse ends the grant (the documented
 * behaviour: the server cannot tell the legitimate client's retry from a
 * thief's). Then a stalled Redis during the exchange: 503 in bounded time.
 */
import { decodeJwt } from "jose";
import * as oauth from "oauth4webapi";
import { generateKeySet } from "portcullis/jwt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentAuthOptions,
  type AgentAuthStores,
  type Grant,
  MemoryGrantStore,
} from "../src/agentauth/index.ts";
import {
  PostgresAuthorizationCodeStore,
  PostgresGrantStore,
  PostgresRefreshTokenStore,
  PostgresReplayStore,
} from "../src/stores/postgres/index.ts";
import {
  createRedisClient,
  RedisAuthorizationCodeStore,
  RedisGrantStore,
  RedisRefreshTokenStore,
  RedisReplayStore,
} from "../src/stores/redis/index.ts";
import { fetchWithin, type RedisProcess, startRedis } from "./processes.ts";
import {
  approvedCallback,
  type CodeSite,
  codeClients,
  DESKTOP,
  insecure,
  jsonConsentPage,
  mcpStatus,
  pkce,
  redeem,
  refreshRequest,
  signedInHeader,
  testHuman,
  tokensFor,
} from "./support/code-flow.ts";
import { mcpSite } from "./support/mcp.ts";
import { postgresForTests } from "./support/postgres.ts";
import { redisForTests } from "./support/redis.ts";

const redis = redisForTests();

/** The grant the last approval on `site` created. */
function lastGrant(site: CodeSite): string {
  const created = site.events.filter((event) => event.type === "grant.created").at(-1);
  return (created as { grantId: string }).grantId;
}
const postgres = postgresForTests("codeshared");

/** A code-flow site on `stores`, with `keys` and `issuer` shared with its twin. */
async function instance(
  stores: AgentAuthStores,
  keys: Awaited<ReturnType<typeof generateKeySet>>,
  issuer?: string,
  extra: Partial<AgentAuthOptions> = {},
): Promise<CodeSite> {
  const clients = await codeClients();
  const consents: CodeSite["consents"] = [];
  const made = await mcpSite(
    {
      clients,
      keys,
      stores,
      authorizationCode: {
        consentPage: jsonConsentPage(consents),
        signedInAt: signedInHeader,
        signInPath: "/login",
      },
      ...extra,
    },
    {},
    issuer,
    testHuman,
  );
  const as = await oauth.processDiscoveryResponse(
    new URL(made.base),
    await oauth.discoveryRequest(new URL(made.socket), { algorithm: "oauth2", ...insecure }),
  );
  return { ...made, clients, consents, clock: { offset: 0 }, now: Date.now, as };
}

/** The same site seen through another instance's socket. */
function through(site: CodeSite, other: CodeSite): CodeSite {
  const swap = (url: string) => url.replace(site.base, other.socket);
  return {
    ...site,
    as: {
      ...site.as,
      token_endpoint: swap(site.as.token_endpoint as string),
      authorization_endpoint: swap(site.as.authorization_endpoint as string),
    },
  };
}

const kinds: [string, () => AgentAuthStores][] = [
  [
    "Redis",
    () => {
      const options = { client: redis.client, prefix: `${redis.prefix}${crypto.randomUUID()}:` };
      return {
        grants: new RedisGrantStore({ ...options, prefix: `${options.prefix}grant:` }),
        replay: new RedisReplayStore({ ...options, prefix: `${options.prefix}jti:` }),
        authorizationCodes: new RedisAuthorizationCodeStore({
          ...options,
          prefix: `${options.prefix}code:`,
        }),
        refreshTokens: new RedisRefreshTokenStore({
          ...options,
          prefix: `${options.prefix}refresh:`,
        }),
      };
    },
  ],
  [
    "PostgreSQL",
    () => ({
      grants: new PostgresGrantStore({ pool: postgres.pool }),
      replay: new PostgresReplayStore({ pool: postgres.pool }),
      authorizationCodes: new PostgresAuthorizationCodeStore({ pool: postgres.pool }),
      refreshTokens: new PostgresRefreshTokenStore({ pool: postgres.pool }),
    }),
  ],
];

describe.each(kinds)("two instances sharing %s stores", (_name, storesOf) => {
  let a: CodeSite;
  let b: CodeSite;
  beforeAll(async () => {
    const keys = await generateKeySet();
    const stores = storesOf();
    a = await instance(stores, keys, undefined, { dpop: {} });
    b = await instance(stores, keys, a.base, { dpop: {} });
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  async function statusAndError(response: Response) {
    const body = (await response.json()) as Record<string, unknown>;
    return { status: response.status, body };
  }

  it("approves on one and redeems on the other", async () => {
    const tokens = await tokensFor(a, {}, { redeemAt: through(a, b) });
    expect(await mcpStatus(a, tokens.access_token)).toBe(200);
    expect(await mcpStatus(b, tokens.access_token, `${b.socket}/mcp`)).toBe(200);
  });

  it("keeps a refresh token's DPoP binding in the shared store: refused on the other instance without the key, refreshed with it", async () => {
    const key = await oauth.generateKeyPair("ES256");
    const tokens = await tokensFor(a, {}, { DPoP: oauth.DPoP({}, key) });
    // Sent to B's socket; the proof names the issuer's token URL, as behind a load balancer.
    const toB = (url: string, init: RequestInit) => fetch(url.replace(a.base, b.socket), init);
    const refreshOnB = (DPoP?: oauth.DPoPHandle) =>
      oauth.refreshTokenGrantRequest(
        a.as,
        { client_id: DESKTOP },
        oauth.None(),
        tokens.refresh_token as string,
        { ...insecure, [oauth.customFetch]: toB, ...(DPoP === undefined ? {} : { DPoP }) },
      );
    expect((await statusAndError(await refreshOnB())).body.error).toBe("invalid_grant");
    const next = await oauth.processRefreshTokenResponse(
      a.as,
      { client_id: DESKTOP },
      await refreshOnB(oauth.DPoP({}, key)),
    );
    expect(next.token_type).toBe("dpop");
  });

  it("a code redeemed on both at once: one token, one invalid_grant, and the grant ends", async () => {
    const { verifier, challenge } = await pkce();
    const callback = await approvedCallback(a, { challenge });
    const answers = await Promise.all([
      redeem(a, callback, verifier).then(statusAndError),
      redeem(through(a, b), callback, verifier).then(statusAndError),
    ]);
    // Never two tokens. The loser's reuse ends the grant, and may do so before the
    // winner's token is minted: then neither gets one. Either way the grant is over.
    const won = answers.filter((answer) => answer.status === 200);
    const lost = answers.filter((answer) => answer.status !== 200);
    expect(won.length).toBeLessThanOrEqual(1);
    for (const answer of lost)
      expect([answer.status, answer.body.error]).toEqual([400, "invalid_grant"]);
    expect((await a.agents.runtime.grants.get(lastGrant(a)))?.status).toBe("revoked");
    for (const answer of won) {
      expect(await mcpStatus(a, answer.body.access_token as string)).toBe(401);
      const refused = await refreshRequest(a, answer.body.refresh_token as string);
      expect((await statusAndError(refused)).body.error).toBe("invalid_grant");
    }
  });

  it("a refresh token rotated on both at once: one wins, the other is refused, and reuse ends the grant", async () => {
    for (let round = 0; round < 5; round++) {
      const { verifier, challenge } = await pkce();
      const callback = await approvedCallback(a, { challenge });
      const first = await oauth.processAuthorizationCodeResponse(
        a.as,
        { client_id: DESKTOP },
        await redeem(a, callback, verifier),
      );
      const refresh = first.refresh_token as string;
      const answers = await Promise.all([
        refreshRequest(a, refresh).then(statusAndError),
        refreshRequest(a, refresh, { base: b.socket }).then(statusAndError),
      ]);
      // Exactly one rotation: never two tokens, and the other is refused as a reuse, which
      // ends the grant (before or after the winner's token is minted: then it is refused too).
      const won = answers.filter((answer) => answer.status === 200);
      const lost = answers.filter((answer) => answer.status !== 200);
      expect(won.length).toBeLessThanOrEqual(1);
      expect(lost.length).toBeGreaterThanOrEqual(1);
      for (const answer of lost)
        expect([answer.status, answer.body.error]).toEqual([400, "invalid_grant"]);
      const grantId = decodeJwt(first.access_token).grant_id as string;
      expect((await b.agents.runtime.grants.get(grantId))?.status).toBe("revoked");
      // Everything of the grant is refused now: the winner's tokens too.
      expect(await mcpStatus(b, first.access_token, `${b.socket}/mcp`)).toBe(401);
      if (won[0] === undefined) continue;
      expect(await mcpStatus(a, won[0].body.access_token as string)).toBe(401);
      const next = await refreshRequest(a, won[0].body.refresh_token as string, {
        base: b.socket,
      });
      expect((await statusAndError(next)).body.error).toBe("invalid_grant");
    }
  });
});

describe("a Redis that stalls during the exchange", () => {
  const TIMEOUT_MS = 300;
  let server: RedisProcess;
  let client: ReturnType<typeof createRedisClient>;
  let site: CodeSite;
  /** Grants that freeze Redis as the next one is read: between a refresh's lookup and its rotation. */
  class FreezingGrants extends MemoryGrantStore {
    freezeOnNextGet = false;
    override async get(grantId: string): Promise<Grant | undefined> {
      if (this.freezeOnNextGet) {
        this.freezeOnNextGet = false;
        server.freeze();
      }
      return super.get(grantId);
    }
  }
  const grants = new FreezingGrants();
  beforeAll(async () => {
    server = await startRedis();
    client = createRedisClient(server.url, { onError: () => {} });
    await client.connect();
    const options = { client, timeoutMs: TIMEOUT_MS };
    site = await instance(
      {
        grants,
        authorizationCodes: new RedisAuthorizationCodeStore(options),
        refreshTokens: new RedisRefreshTokenStore(options),
      },
      await generateKeySet(),
    );
  }, 30_000);
  afterAll(async () => {
    await site?.close();
    client?.destroy();
    await server?.kill();
  });

  async function frozen<T>(work: () => Promise<T>): Promise<T> {
    server.freeze();
    try {
      return await work();
    } finally {
      server.thaw();
    }
  }

  function tokenForm(form: Record<string, string>) {
    return {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: DESKTOP, ...form }).toString(),
    };
  }

  it("answers the code exchange 503 temporarily_unavailable within the store's timeout, and the code works once Redis is back", async () => {
    const { verifier, challenge } = await pkce();
    const callback = await approvedCallback(site, { challenge });
    const form = {
      grant_type: "authorization_code",
      code: callback.searchParams.get("code") as string,
      redirect_uri: "http://127.0.0.1:7777/callback",
      code_verifier: verifier,
      resource: site.mcpUrl,
    };
    const answer = await frozen(async () => {
      const started = performance.now();
      const response = await fetch(`${site.base}/oauth/token`, tokenForm(form));
      return {
        status: response.status,
        body: (await response.json()) as Record<string, unknown>,
        elapsed: performance.now() - started,
      };
    });
    expect([answer.status, answer.body.error]).toEqual([503, "temporarily_unavailable"]);
    expect(answer.elapsed).toBeLessThan(TIMEOUT_MS + 1500);
    // Redis ran the stalled redemption once it thawed, and refused it: the client's retry is the first.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = await fetch(`${site.base}/oauth/token`, tokenForm(form));
    expect(after.status, await after.clone().text()).toBe(200);
    expect(
      await mcpStatus(site, ((await after.json()) as { access_token: string }).access_token),
    ).toBe(200);
  });

  it("answers a refresh 503 within the store's timeout while Redis stalls, and the retry with the same token is served", async () => {
    const tokens = await tokensFor(site);
    const refresh = tokenForm({
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token as string,
    });
    const answer = await frozen(() =>
      fetchWithin(`${site.base}/oauth/token`, refresh, TIMEOUT_MS + 3000),
    );
    expect(answer.status).toBe(503);
    expect(answer.elapsed).toBeLessThan(TIMEOUT_MS + 1500);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const retried = await fetch(`${site.base}/oauth/token`, refresh);
    const body = (await retried.json()) as { access_token: string };
    expect(retried.status, JSON.stringify(body)).toBe(200);
    expect(await mcpStatus(site, body.access_token)).toBe(200);
  });

  it("answers 503 when Redis stalls as the refresh token rotates, and the grant lives on: the retry is served", async () => {
    const tokens = await tokensFor(site);
    const refresh = tokenForm({
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token as string,
    });
    grants.freezeOnNextGet = true;
    let answer: Awaited<ReturnType<typeof fetchWithin>>;
    try {
      answer = await fetchWithin(`${site.base}/oauth/token`, refresh, TIMEOUT_MS + 3000);
    } finally {
      server.thaw();
    }
    expect(answer.status).toBe(503);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Taken for a stolen token's reuse, the retry would end the grant: Redis refused the late rotation.
    const retried = await fetch(`${site.base}/oauth/token`, refresh);
    const body = (await retried.json()) as { access_token: string };
    expect(retried.status, JSON.stringify(body)).toBe(200);
    expect(await mcpStatus(site, body.access_token)).toBe(200);
  });

  it("answers the consent 503 within the store's timeout when the code cannot be stored", async () => {
    const { challenge } = await pkce();
    const url = new URL(site.as.authorization_endpoint as string);
    url.search = new URLSearchParams({
      response_type: "code",
      client_id: DESKTOP,
      redirect_uri: "http://127.0.0.1:7777/callback",
      code_challenge: challenge,
      code_challenge_method: "S256",
      resource: site.mcpUrl,
    }).toString();
    const headers = { "x-test-human": "alice", "x-test-signed-in": String(Date.now()) };
    const consent = (await (await fetch(url, { headers })).json()) as { consentToken: string };
    const before = (await site.agents.grantsApprovedBy("alice")).length;
    const answer = await frozen(() =>
      fetchWithin(
        url.origin + url.pathname,
        {
          method: "POST",
          headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            consent: consent.consentToken,
            action: "approve",
          }).toString(),
          redirect: "manual",
        },
        TIMEOUT_MS + 3000,
      ),
    );
    expect(answer.status).toBe(503);
    expect(answer.elapsed).toBeLessThan(TIMEOUT_MS + 1500);
    // No grant is left behind by an approval whose code could not be stored.
    expect((await site.agents.grantsApprovedBy("alice")).length).toBe(before);
  });
});
