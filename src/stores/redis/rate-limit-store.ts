import type { RateLimitDecision, RateLimitPolicy, RateLimitStore } from "../../ratelimit/index.ts";
import {
  DEL,
  RedisScript,
  type RedisScriptingClient,
  runScript,
  scriptedStoreOptions,
} from "./script.ts";

export type { RedisScriptingClient } from "./script.ts";

/**
 * Options of `RedisRateLimitStore`.
 *
 * @example
 * ```ts
 * import { rateLimit } from "portcullis";
 * import { createRedisClient, RedisRateLimitStore } from "portcullis/stores/redis";
 *
 * const redis = await createRedisClient("redis://127.0.0.1:6379").connect();
 * const limits = rateLimit({
 *   rules: [{ name: "api", match: "/api/**", limit: 100, windowMs: 60_000 }],
 *   store: new RedisRateLimitStore({ client: redis, prefix: "myapp:ratelimit:" }),
 * });
 * ```
 */
export interface RedisRateLimitStoreOptions {
  /** A connected node-redis v5 client; the store never connects or closes it. */
  readonly client: RedisScriptingClient;
  /**
   * Prepended to every counter key.
   *
   * @default "portcullis:ratelimit:"
   */
  readonly prefix?: string;
  /**
   * A hit that Redis has not answered within this many milliseconds rejects,
   * so the middleware's `failOpen` choice applies instead of requests hanging
   * while the client waits to reconnect.
   *
   * @default 1000
   */
  readonly timeoutMs?: number;
}

/**
 * One counter per key in a Redis hash, updated by a Lua script: Redis runs a
 * script without interleaving other commands, which makes each hit atomic
 * across every instance. The script mirrors `step` in `ratelimit/algorithms.ts`;
 * times come from the caller (`now`), so instances need synchronized clocks,
 * as they do for token expiry anyway. Keys expire (`PEXPIRE`) once their state
 * no longer matters.
 */
export const RATE_LIMIT_SCRIPT = `
local key = KEYS[1]
local algorithm = ARGV[1]
local limit = tonumber(ARGV[2])
local w = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
local eps = 1e-9
local saved = redis.call('HMGET', key, 'k', 'a', 'b', 'c')
local same = saved[1] == algorithm
local allowed, remaining, resetAt, retryAt, expiresAt
local function num(x) return string.format('%.17g', x) end
local function ceilms(x) return math.ceil(x - 1e-6) end

if algorithm == 'fixed-window' then
  local start = math.floor(now / w) * w
  local count = 0
  if same and tonumber(saved[2]) >= start then
    start = tonumber(saved[2])
    count = tonumber(saved[3])
  end
  allowed = count < limit
  if allowed then count = count + 1 end
  resetAt = start + w
  remaining = limit - count
  retryAt = allowed and now or resetAt
  expiresAt = resetAt
  redis.call('HSET', key, 'k', algorithm, 'a', num(start), 'b', num(count))
elseif algorithm == 'sliding-window' then
  local start = math.floor(now / w) * w
  local count = 0
  local previous = 0
  if same then
    local savedStart = tonumber(saved[2])
    if savedStart >= start then
      start = savedStart
      count = tonumber(saved[3])
      previous = tonumber(saved[4])
    elseif savedStart == start - w then
      previous = tonumber(saved[3])
    end
  end
  local weight = math.min(1, math.max(0, 1 - (now - start) / w))
  allowed = previous * weight + count + 1 <= limit + eps
  if allowed then count = count + 1 end
  remaining = math.max(0, math.floor(limit - (previous * weight + count) + eps))
  retryAt = now
  if not allowed then
    if count + 1 <= limit then
      retryAt = start + ceilms(w * (1 - (limit - count - 1) / previous))
    else
      retryAt = start + w + ceilms(w * (1 - (limit - 1) / count))
    end
    retryAt = math.max(retryAt, now + 1)
  end
  resetAt = start + w
  expiresAt = start + 2 * w
  redis.call('HSET', key, 'k', algorithm, 'a', num(start), 'b', num(count), 'c', num(previous))
elseif algorithm == 'token-bucket' then
  local tokens = limit
  local updated = now
  if same then
    local elapsed = math.max(0, now - tonumber(saved[3]))
    tokens = math.min(limit, tonumber(saved[2]) + (elapsed * limit) / w)
    updated = math.max(now, tonumber(saved[3]))
  end
  allowed = tokens >= 1 - eps
  if allowed then tokens = math.max(0, tokens - 1) end
  resetAt = now + ceilms(((limit - tokens) * w) / limit)
  if allowed then
    retryAt = now
  else
    retryAt = now + math.max(1, ceilms(((1 - tokens) * w) / limit))
  end
  remaining = math.floor(tokens + eps)
  expiresAt = resetAt
  redis.call('HSET', key, 'k', algorithm, 'a', num(tokens), 'b', num(updated))
else
  return redis.error_reply('unknown rate-limit algorithm')
end
redis.call('PEXPIRE', key, math.max(1, math.ceil(expiresAt - now)))
return { allowed and 1 or 0, remaining, resetAt, retryAt }
`;

const SCRIPT = new RedisScript(RATE_LIMIT_SCRIPT);

/** `RateLimitStore` on Redis (node-redis v5), shared by every instance of an application. */
export class RedisRateLimitStore implements RateLimitStore {
  readonly #client: RedisScriptingClient;
  readonly #prefix: string;
  readonly #timeoutMs: number;

  constructor(options: RedisRateLimitStoreOptions) {
    ({
      client: this.#client,
      prefix: this.#prefix,
      timeoutMs: this.#timeoutMs,
    } = scriptedStoreOptions("RedisRateLimitStore", options, "portcullis:ratelimit:"));
  }

  async hit(key: string, policy: RateLimitPolicy, now: number): Promise<RateLimitDecision> {
    const args = {
      keys: [this.#prefix + key],
      arguments: [policy.algorithm, String(policy.limit), String(policy.windowMs), String(now)],
    };
    const reply = await runScript(this.#client, SCRIPT, args, this.#timeoutMs);
    if (!Array.isArray(reply) || reply.length !== 4 || !reply.every(Number.isFinite))
      throw new TypeError("unexpected reply from the rate-limit script");
    const [allowed, remaining, resetAt, retryAt] = reply as [number, number, number, number];
    return { allowed: allowed === 1, remaining, resetAt, retryAt };
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
