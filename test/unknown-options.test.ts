import Fastify from "fastify";
import { createClient } from "redis";
import { afterAll, describe, expect, it } from "vitest";
import { expressMiddleware } from "../src/adapters/express/index.ts";
import { fastifyHook, fastifyPortcullis } from "../src/adapters/fastify/index.ts";
import { honoMiddleware } from "../src/adapters/hono/index.ts";
import { koaMiddleware } from "../src/adapters/koa/index.ts";
import { nextMiddleware, routeHandlers, withChain } from "../src/adapters/next/index.ts";
import {
  chainRunner,
  nodeClientMetadataTransport,
  nodeListener,
  toNodeListener,
} from "../src/adapters/node/index.ts";
import {
  agentApproveHandler,
  agentCredentials,
  capabilitiesHandler,
  executeHandler,
  MemoryGrantStore,
  MemoryPendingRequestStore,
  MemoryReplayStore,
} from "../src/agentauth/index.ts";
import {
  authz,
  basicAuth,
  cors,
  csrf,
  InvalidOptionsError,
  login,
  MemoryLoginAttemptStore,
  MemoryRateLimitStore,
  MemorySessionStore,
  newChain,
  passwordCredentials,
  rateLimit,
  securityHeaders,
  sessions,
} from "../src/index.ts";
import { jwtSigner, jwtVerifier } from "../src/jwt/index.ts";
import {
  authorizationServer,
  clientMetadataDocuments,
  DeviceAuthorizationService,
  deviceApproveHandler,
  MemoryAuthorizationCodeStore,
  MemoryClientStore,
  MemoryDeviceCodeStore,
  MemoryRefreshTokenStore,
} from "../src/oauth2/index.ts";
import {
  PostgresAuthorizationCodeStore,
  PostgresRefreshTokenStore,
} from "../src/stores/postgres/index.ts";
import {
  RedisAuthorizationCodeStore,
  RedisLoginAttemptStore,
  RedisRateLimitStore,
  RedisRefreshTokenStore,
  RedisSessionStore,
} from "../src/stores/redis/index.ts";

const redis = createClient({ url: "redis://127.0.0.1:6379" });
redis.on("error", () => {});
afterAll(async () => {
  if (redis.isOpen) await redis.quit();
});

const credentials = () => passwordCredentials({ findUser: () => undefined });
const deny = authz.routes([]);

// Each factory with one misspelt key: it must throw when built, naming the key.
const misspelt: Array<[string, () => unknown]> = [
  [
    "rateLimit",
    () => rateLimit({ rules: [{ limit: 1, windowMs: 1000 }], stroe: undefined } as never),
  ],
  [
    "rateLimit rule",
    () => rateLimit({ rules: [{ mathc: "/api/**", limit: 1, windowMs: 1000 }] } as never),
  ],
  ["cors", () => cors({ origin: "https://a.example", credential: true } as never)],
  ["csrf", () => csrf({ trustedOrigin: ["https://a.example"] } as never)],
  ["securityHeaders", () => securityHeaders({ contentSecurityPolicys: {} } as never)],
  ["sessions", () => sessions({ idleTimeout: 1000 } as never)],
  ["newChain", () => newChain({ authorization: deny, sesion: false } as never)],
  ["login", () => login({ credentials: credentials(), loginpath: "/signin" } as never)],
  ["basicAuth", () => basicAuth({ credentials: credentials(), requried: false } as never)],
  [
    "passwordCredentials",
    () => passwordCredentials({ findUser: () => undefined, throtle: false } as never),
  ],
  ["MemoryRateLimitStore", () => new MemoryRateLimitStore({ maxEntry: 5 } as never)],
  ["MemorySessionStore", () => new MemorySessionStore({ maxEntry: 5 } as never)],
  ["MemoryLoginAttemptStore", () => new MemoryLoginAttemptStore({ maxEntry: 5 } as never)],
  ["RedisRateLimitStore", () => new RedisRateLimitStore({ client: redis, timeout: 5 } as never)],
  ["RedisSessionStore", () => new RedisSessionStore({ client: redis, timeout: 5 } as never)],
  [
    "RedisLoginAttemptStore",
    () => new RedisLoginAttemptStore({ client: redis, timeout: 5 } as never),
  ],
  ["jwtSigner", () => jwtSigner({ timeout: 5 } as never)],
  ["jwtVerifier", () => jwtVerifier({ timeout: 5 } as never)],
  ["MemoryClientStore", () => new MemoryClientStore({ maxEntry: 5 } as never)],
  [
    "clientMetadataDocuments",
    () => clientMetadataDocuments({ ...nodeClientMetadataTransport(), timeout: 5 } as never),
  ],
  ["nodeClientMetadataTransport", () => nodeClientMetadataTransport({ timeout: 5 } as never)],
  ["MemoryDeviceCodeStore", () => new MemoryDeviceCodeStore({ maxEntry: 5 } as never)],
  [
    "MemoryAuthorizationCodeStore",
    () => new MemoryAuthorizationCodeStore({ maxEntry: 5 } as never),
  ],
  ["MemoryRefreshTokenStore", () => new MemoryRefreshTokenStore({ maxEntry: 5 } as never)],
  [
    "RedisAuthorizationCodeStore",
    () => new RedisAuthorizationCodeStore({ client: redis, timeout: 5 } as never),
  ],
  [
    "RedisRefreshTokenStore",
    () => new RedisRefreshTokenStore({ client: redis, timeout: 5 } as never),
  ],
  [
    "PostgresAuthorizationCodeStore",
    () =>
      new PostgresAuthorizationCodeStore({
        pool: { query: async () => ({ rows: [], rowCount: 0 }) },
        timeout: 5,
      } as never),
  ],
  [
    "PostgresRefreshTokenStore",
    () =>
      new PostgresRefreshTokenStore({
        pool: { query: async () => ({ rows: [], rowCount: 0 }) },
        timeout: 5,
      } as never),
  ],
  [
    "DeviceAuthorizationService",
    () =>
      new DeviceAuthorizationService({
        verificationUri: "https://a.example/d",
        timeout: 5,
      } as never),
  ],
  ["authorizationServer", () => authorizationServer({ timeout: 5 } as never)],
  ["deviceApproveHandler", () => deviceApproveHandler({ timeout: 5 } as never)],
  ["MemoryGrantStore", () => new MemoryGrantStore({ maxEntry: 5 } as never)],
  ["MemoryReplayStore", () => new MemoryReplayStore({ maxEntry: 5 } as never)],
  ["MemoryPendingRequestStore", () => new MemoryPendingRequestStore({ maxEntry: 5 } as never)],
  ["agentCredentials", () => agentCredentials({ timeout: 5 } as never)],
  ["executeHandler", () => executeHandler({} as never, { timeout: 5 } as never)],
  ["capabilitiesHandler", () => capabilitiesHandler({ timeout: 5 } as never)],
  [
    "agentApproveHandler",
    () => agentApproveHandler({} as never, {} as never, { timeout: 5 } as never),
  ],
  // The adapters' entry points: a misspelt onError would leave failures unreported.
  ["nodeListener", () => nodeListener(deny, () => {}, { onErr: () => {} } as never)],
  ["toNodeListener", () => toNodeListener(async () => new Response(), { onErr: 1 } as never)],
  ["chainRunner", () => chainRunner(deny, { onErr: () => {} } as never)],
  ["expressMiddleware", () => expressMiddleware(deny, { onErr: () => {} } as never)],
  ["koaMiddleware", () => koaMiddleware(deny, { onErr: () => {} } as never)],
  ["fastifyHook", () => fastifyHook(deny, { onErr: () => {} } as never)],
  ["nextMiddleware", () => nextMiddleware(deny, { onErr: () => {} } as never)],
  ["withChain", () => withChain(deny, async () => new Response(), { onErr: () => {} } as never)],
  ["routeHandlers", () => routeHandlers(deny, {}, { onErr: () => {} } as never)],
  ["honoMiddleware", () => (honoMiddleware as (...args: unknown[]) => unknown)(deny, { onErr: 1 })],
];

describe("misspelt options", () => {
  it.each(misspelt)("%s refuses a misspelt key when built, naming it", (_name, build) => {
    let thrown: unknown;
    try {
      build();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidOptionsError);
    expect((thrown as Error).message).toMatch(
      /stroe|mathc|credential|trustedOrigin|contentSecurityPolicys|idleTimeout|sesion|loginpath|requried|throtle|maxEntry|timeout|onErr|onError/,
    );
  });

  it("an adapter's onError that is no function throws when built", () => {
    expect(() => expressMiddleware(deny, { onError: "log" } as never)).toThrow(
      /expressMiddleware: onError must be a function/,
    );
    expect(() => nodeListener(deny, () => {}, { onError: {} } as never)).toThrow(
      InvalidOptionsError,
    );
  });

  it("the Fastify plugin refuses a misspelt key and keeps Fastify's own register options", async () => {
    const misspeltApp = Fastify();
    await expect(
      misspeltApp.register(fastifyPortcullis, { chain: deny, onErr: () => {} } as never),
    ).rejects.toThrow(/fastifyPortcullis: unknown option "onErr"/);
    const app = Fastify();
    await app.register(fastifyPortcullis, { chain: deny, prefix: "/x" } as never);
    await app.ready();
    await app.close();
  });

  it("limits only the paths a correctly spelt rule matches", async () => {
    const limited = rateLimit({ rules: [{ match: "/api/**", limit: 1, windowMs: 60_000 }] })(
      async () => new Response("ok"),
    );
    const hit = (path: string) => limited(new Request(`https://a.example${path}`));
    expect((await hit("/other")).status).toBe(200);
    expect((await hit("/other")).status).toBe(200);
    expect((await hit("/api/x")).status).toBe(200);
    expect((await hit("/api/x")).status).toBe(429);
  });
});
