/**
 * Stores on Redis (node-redis v5) shared by every instance: sessions, rate limits, login
 * attempts and the agent stores, with `createRedisClient` for a client that survives outages.
 *
 * Needs the optional peer `redis` 5: `npm install redis`; `createRedisClient` throws
 * `MissingPeerError` without it.
 *
 * @module portcullis/stores/redis
 */
export {
  RedisAuthorizationCodeStore,
  type RedisAuthorizationCodeStoreOptions,
} from "./authorization-code-store.ts";
export { createRedisClient, guardRedisClient, type RedisClientSetup } from "./client.ts";
export { RedisDeviceCodeStore, type RedisDeviceCodeStoreOptions } from "./device-code-store.ts";
export { RedisGrantStore } from "./grant-store.ts";
export {
  RedisLoginAttemptStore,
  type RedisLoginAttemptStoreOptions,
} from "./login-attempt-store.ts";
export { RedisPendingRequestStore } from "./pending-request-store.ts";
export {
  RATE_LIMIT_SCRIPT,
  RedisRateLimitStore,
  type RedisRateLimitStoreOptions,
  type RedisScriptingClient,
} from "./rate-limit-store.ts";
export {
  RedisRefreshTokenStore,
  type RedisRefreshTokenStoreOptions,
} from "./refresh-token-store.ts";
export { RedisReplayStore } from "./replay-store.ts";
export type { ScriptedStoreOptions as RedisStoreOptions } from "./script.ts";
export {
  type RedisSessionClient,
  RedisSessionStore,
  type RedisSessionStoreOptions,
} from "./session-store.ts";
