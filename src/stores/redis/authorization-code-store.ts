import { StoreFullError } from "../../core/errors.ts";
import { type CodeQuotaOptions, codeQuotas } from "../../core/store-quotas.ts";
import type {
  AuthorizationCodeRecord,
  AuthorizationCodeStore,
  CodeRedemption,
} from "../../oauth2/index.ts";
import { RedisScript, type ScriptedStoreOptions } from "./script.ts";
import { ScriptedStore } from "./scripted-store.ts";

// A code's value is "L" (live) or "S" (spent) then its record's JSON, which the scripts never
// re-encode. Each person's codes are a hash "p:<person>": code hash -> "<expiresAt>:<clientId>".
// KEYS: code, person. ARGV: value, ttl, now, clientId, hash, maxCodesPerPerson, prefix,
// expiresAt. A hash held by an unexpired code is refused; the pair's earlier code goes; then a
// person at the quota is refused, nothing written.
const CODE_CREATE = new RedisScript(`
local now = tonumber(ARGV[3])
local held = redis.call('GET', KEYS[1])
if held and cjson.decode(string.sub(held, 2)).expiresAt > now then return {'taken'} end
local entries = redis.call('HGETALL', KEYS[2])
local count = 0
for i = 1, #entries, 2 do
  local at, client = string.match(entries[i + 1], '^(%d+):(.*)$')
  if not at or tonumber(at) <= now then
    redis.call('HDEL', KEYS[2], entries[i])
  elseif client == ARGV[4] then
    redis.call('DEL', ARGV[7] .. entries[i])
    redis.call('HDEL', KEYS[2], entries[i])
  else
    count = count + 1
  end
end
if count >= tonumber(ARGV[6]) then return {'full', count} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[2], ARGV[5], ARGV[8] .. ':' .. ARGV[4])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
return {'created'}
`);

// KEYS: code. ARGV: now. Spends a live, unexpired code; answers what was there before.
const CODE_REDEEM = new RedisScript(`
local value = redis.call('GET', KEYS[1])
if not value then return false end
if cjson.decode(string.sub(value, 2)).expiresAt <= tonumber(ARGV[1]) then return false end
if string.sub(value, 1, 1) == 'L' then
  redis.call('SET', KEYS[1], 'S' .. string.sub(value, 2), 'KEEPTTL')
end
return value
`);

/**
 * Options of `RedisAuthorizationCodeStore`.
 *
 * @example
 * ```ts
 * import { createRedisClient, RedisAuthorizationCodeStore } from "portcullis/stores/redis";
 *
 * const redis = await createRedisClient("redis://127.0.0.1:6379").connect();
 * const codes = new RedisAuthorizationCodeStore({ client: redis, maxCodesPerPerson: 5 });
 * ```
 */
export interface RedisAuthorizationCodeStoreOptions
  extends ScriptedStoreOptions,
    CodeQuotaOptions {}

/**
 * `AuthorizationCodeStore` on Redis: one key per code hash, expiring with the
 * code (relative to the caller's clock), and one per person listing theirs;
 * creation and redemption are one script each.
 */
export class RedisAuthorizationCodeStore extends ScriptedStore implements AuthorizationCodeStore {
  readonly #perPerson: number;

  constructor(options: RedisAuthorizationCodeStoreOptions) {
    const where = "RedisAuthorizationCodeStore";
    const { maxCodesPerPerson, ...rest } = options ?? ({} as RedisAuthorizationCodeStoreOptions);
    super(where, rest, "portcullis:code:");
    this.#perPerson = codeQuotas(where, { maxCodesPerPerson }).maxCodesPerPerson;
  }

  async create(record: AuthorizationCodeRecord, now: number): Promise<void> {
    const ttl = Math.max(Math.ceil(record.expiresAt - now), 1);
    const reply = await this.run(
      CODE_CREATE,
      [this.prefix + record.codeHash, `${this.prefix}p:${record.approvedBy}`],
      [
        `L${JSON.stringify(record)}`,
        ttl,
        now,
        record.clientId,
        record.codeHash,
        this.#perPerson,
        this.prefix,
        Math.ceil(record.expiresAt),
      ],
    );
    const [outcome, held] = Array.isArray(reply) ? reply : [];
    if (outcome === "created") return;
    if (outcome === "taken") throw new Error("an authorization code with this hash is held");
    if (outcome === "full" && typeof held === "number")
      throw new StoreFullError({
        store: "the authorization code store",
        quota: "person",
        held,
        limit: this.#perPerson,
      });
    throw new TypeError("unexpected reply from the code script");
  }

  async redeem(codeHash: string, now: number): Promise<CodeRedemption> {
    const reply = await this.run(CODE_REDEEM, [this.prefix + codeHash], [now]);
    if (reply === null || reply === undefined) return { outcome: "unknown" };
    if (typeof reply !== "string") throw new TypeError("unexpected reply from the code script");
    const record = JSON.parse(reply.slice(1)) as AuthorizationCodeRecord;
    return { outcome: reply.startsWith("L") ? "redeemed" : "reused", record };
  }
}
