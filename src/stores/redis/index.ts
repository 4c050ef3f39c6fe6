export { createRedisClient, guardRedisClient, type RedisClientSetup } from "./client.ts";
export {
  RedisLoginAttemptStore,
  type RedisLoginAttemptStoreOptions,
} from "./login-attempt-store.ts";
export {
  RATE_LIMIT_SCRIPT,
  RedisRateLimitStore,
  type RedisRateLimitStoreOptions,
  type RedisScriptingClient,
} from "./rate-limit-store.ts";
export {
  type RedisSessionClient,
  RedisSessionStore,
  type RedisSessionStoreOptions,
} from "./session-store.ts";
