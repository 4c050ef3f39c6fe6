import type { LoginAttemptStore } from "../../login/attempts.ts";
import {
  RedisScript,
  type RedisScriptingClient,
  scriptedStoreOptions,
  withTimeout,
} from "./script.ts";

export interface RedisLoginAttemptStoreOptions {
  /** A connected node-redis v5 client; the store never connects or closes it. */
  readonly client: RedisScriptingClient;
  /** Prepended to every counter key. Default `"portcullis:login:"`. */
  readonly prefix?: string;
  /** A call Redis has not answered within this many milliseconds rejects. Default 1000. */
  readonly timeoutMs?: number;
}

// One failure: the counter and its window start together, atomically, with the first one.
const FAIL = new RedisScript(`
local count = redis.call('INCR', KEYS[1])
if count == 1 or redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return count
`);

// The count and the time left in its window, read together.
const READ = new RedisScript(`
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
return { count, redis.call('PTTL', KEYS[1]) }
`);

/**
 * Failed-login counters in Redis, so every instance behind a load balancer
 * throttles against the same count: an attacker cannot multiply the allowance
 * by the number of instances. Each counter expires with its window, timed by
 * Redis's clock.
 */
export class RedisLoginAttemptStore implements LoginAttemptStore {
  readonly #client: RedisScriptingClient;
  readonly #prefix: string;
  readonly #timeoutMs: number;

  constructor(options: RedisLoginAttemptStoreOptions) {
    ({
      client: this.#client,
      prefix: this.#prefix,
      timeoutMs: this.#timeoutMs,
    } = scriptedStoreOptions("RedisLoginAttemptStore", options, "portcullis:login:"));
  }

  async failures(key: string, now: number): Promise<{ count: number; resetAt: number }> {
    const reply = await withTimeout(
      READ.run(this.#client, { keys: [this.#prefix + key], arguments: [] }),
      this.#timeoutMs,
    );
    if (!Array.isArray(reply) || reply.length !== 2 || !reply.every(Number.isFinite))
      throw new TypeError("unexpected reply from the login-attempt script");
    const [count, ttl] = reply as [number, number];
    // PTTL is -2 for a missing key: no failures in a live window.
    return count > 0 && ttl > 0 ? { count, resetAt: now + ttl } : { count: 0, resetAt: now };
  }

  async fail(key: string, windowMs: number, _now: number): Promise<void> {
    if (!Number.isSafeInteger(windowMs) || windowMs < 1)
      throw new RangeError("windowMs must be a positive integer");
    await withTimeout(
      FAIL.run(this.#client, { keys: [this.#prefix + key], arguments: [String(windowMs)] }),
      this.#timeoutMs,
    );
  }

  async reset(key: string): Promise<void> {
    await withTimeout(this.#client.del(this.#prefix + key), this.#timeoutMs);
  }
}
