import type { AttemptReservation, LoginAttemptStore } from "../../core/login-attempt-store.ts";
import { rejectUnknownKeys } from "../../core/options.ts";
import {
  DEL,
  RedisScript,
  type RedisScriptingClient,
  runScript,
  scriptedStoreOptions,
} from "./script.ts";

/**
 * Options of `RedisLoginAttemptStore`.
 *
 * @example
 * ```ts
 * import { passwordCredentials } from "portcullis";
 * import { createRedisClient, RedisLoginAttemptStore } from "portcullis/stores/redis";
 *
 * const redis = await createRedisClient("redis://127.0.0.1:6379").connect();
 * const credentials = passwordCredentials({
 *   findUser: (name) => users.get(name),
 *   throttle: { store: new RedisLoginAttemptStore({ client: redis, timeoutMs: 500 }) },
 * });
 * ```
 */
export interface RedisLoginAttemptStoreOptions {
  /** A connected node-redis v5 client; the store never connects or closes it. */
  readonly client: RedisScriptingClient;
  /**
   * Prepended to every counter key; give each use its own (wrong user codes:
   * `"portcullis:usercodes:"`).
   *
   * @default "portcullis:login:"
   */
  readonly prefix?: string;
  /**
   * A call Redis has not answered within this many milliseconds rejects.
   *
   * @default 1000
   */
  readonly timeoutMs?: number;
}

// Counts one attempt only while the counter is under ARGV[1]; the window
// (ARGV[2] ms) starts with the first one. Answers {1 counted | 0 refused, ms left}.
const CONSUME = new RedisScript(`
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count >= tonumber(ARGV[1]) then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    ttl = tonumber(ARGV[2])
  end
  return { 0, ttl }
end
count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if count == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return { 1, ttl }
`);

// Gives one attempt back, never below zero; the window is left as it runs.
const RELEASE = new RedisScript(`
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count > 1 then
  return redis.call('DECR', KEYS[1])
end
if count == 1 then
  redis.call('DEL', KEYS[1])
end
return 0
`);

/**
 * Sign-in attempt counters in Redis, so every instance behind a load balancer
 * throttles against the same count: an attacker cannot multiply the allowance
 * by the number of instances, nor overrun it with concurrent guesses (each
 * check-and-count is one Lua script). Each counter expires with its window,
 * timed by Redis's clock. The keys of one sign-in are touched one at a time,
 * so a Redis Cluster may hold them in different slots.
 */
export class RedisLoginAttemptStore implements LoginAttemptStore {
  readonly #client: RedisScriptingClient;
  readonly #prefix: string;
  readonly #timeoutMs: number;

  constructor(options: RedisLoginAttemptStoreOptions) {
    rejectUnknownKeys("RedisLoginAttemptStore", options, ["client", "prefix", "timeoutMs"]);
    ({
      client: this.#client,
      prefix: this.#prefix,
      timeoutMs: this.#timeoutMs,
    } = scriptedStoreOptions("RedisLoginAttemptStore", options, "portcullis:login:"));
  }

  async consume(
    key: string,
    max: number,
    windowMs: number,
    now: number,
  ): Promise<AttemptReservation> {
    if (!Number.isSafeInteger(max) || max < 1)
      throw new RangeError("max must be a positive integer");
    if (!Number.isSafeInteger(windowMs) || windowMs < 1)
      throw new RangeError("windowMs must be a positive integer");
    const reply = await runScript(
      this.#client,
      CONSUME,
      { keys: [this.#prefix + key], arguments: [String(max), String(windowMs)] },
      this.#timeoutMs,
    );
    if (
      !Array.isArray(reply) ||
      reply.length !== 2 ||
      (reply[0] !== 0 && reply[0] !== 1) ||
      !Number.isSafeInteger(reply[1])
    )
      throw new TypeError("unexpected reply from the login-attempt script");
    return { allowed: reply[0] === 1, resetAt: now + Math.max(1, reply[1] as number) };
  }

  async release(key: string, _now: number): Promise<void> {
    await runScript(
      this.#client,
      RELEASE,
      { keys: [this.#prefix + key], arguments: [] },
      this.#timeoutMs,
    );
  }

  async reset(key: string): Promise<void> {
    await runScript(
      this.#client,
      DEL,
      { keys: [this.#prefix + key], arguments: [] },
      this.#timeoutMs,
    );
  }
}
