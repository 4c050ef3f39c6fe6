import {
  type RefreshQuotaOptions,
  refreshQuotas,
  SPENT_TOKENS_KEPT,
} from "../../core/store-quotas.ts";
import type { RefreshRotation, RefreshTokenRecord, RefreshTokenStore } from "../../oauth2/index.ts";
import { RedisScript, type ScriptedStoreOptions } from "./script.ts";
import { ScriptedStore } from "./scripted-store.ts";

// Keys: "t:<hash>" holds "<family expiresAt>:<record JSON>" (the JSON never re-encoded by the
// scripts; the expiry tells a family from an earlier one of the same id); "f:<id>" holds
// "<family expiresAt>:<current hash>", with no hash once revoked; "s:<id>" lists the family's
// last spent hashes, newest first; "p:<person>" maps each family id of a person to
// "<created>:<clientId>". Every key of a family expires with the family, relative to the
// caller's clock; a person's with their last family.
const PARTS = `
local function parts(value)
  if not value then return nil end
  return string.match(value, '^(%d+):(.*)$')
end
`;

// Forgets a family whole: its tokens, its spent list, its entry. ARGV[p] is the key prefix.
const FORGET = `
local function forget(prefix, id)
  local _, current = parts(redis.call('GET', prefix .. 'f:' .. id))
  if current and current ~= '' then redis.call('DEL', prefix .. 't:' .. current) end
  for _, hash in ipairs(redis.call('LRANGE', prefix .. 's:' .. id, 0, -1)) do
    redis.call('DEL', prefix .. 't:' .. hash)
  end
  redis.call('DEL', prefix .. 'f:' .. id, prefix .. 's:' .. id)
end
`;

// KEYS: token, family, person. ARGV: token value, family value, ttl, now, familyId, clientId,
// maxFamiliesPerClientAndPerson, maxFamiliesPerPerson, prefix. A family id or a token hash of an
// unexpired family is refused; then the person's quotas make room: the pair's oldest live
// families, then the person's oldest ended, then their oldest live ones are forgotten.
const REFRESH_CREATE = new RedisScript(`${PARTS}${FORGET}
local now = tonumber(ARGV[4])
local family = parts(redis.call('GET', KEYS[2]))
if family and tonumber(family) > now then return 0 end
local token = parts(redis.call('GET', KEYS[1]))
if token and tonumber(token) > now then return 0 end
local entries = redis.call('HGETALL', KEYS[3])
local held = {}
for i = 1, #entries, 2 do
  local id = entries[i]
  local created, client = parts(entries[i + 1])
  local expires, current = parts(redis.call('GET', ARGV[9] .. 'f:' .. id))
  if not created or not expires or tonumber(expires) <= now then
    redis.call('HDEL', KEYS[3], id)
  else
    table.insert(held, {id = id, created = tonumber(created), client = client, live = current ~= ''})
  end
end
table.sort(held, function(a, b)
  if a.created ~= b.created then return a.created < b.created end
  return a.id < b.id
end)
local function drop(entry)
  forget(ARGV[9], entry.id)
  redis.call('HDEL', KEYS[3], entry.id)
  entry.gone = true
end
local pair, count = 0, #held
for _, entry in ipairs(held) do
  if entry.live and entry.client == ARGV[6] then pair = pair + 1 end
end
for _, entry in ipairs(held) do
  if pair < tonumber(ARGV[7]) then break end
  if entry.live and entry.client == ARGV[6] then drop(entry); pair = pair - 1; count = count - 1 end
end
for _, entry in ipairs(held) do
  if count < tonumber(ARGV[8]) then break end
  if not entry.gone and not entry.live then drop(entry); count = count - 1 end
end
for _, entry in ipairs(held) do
  if count < tonumber(ARGV[8]) then break end
  if not entry.gone then drop(entry); count = count - 1 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('DEL', ARGV[9] .. 's:' .. ARGV[5])
redis.call('HSET', KEYS[3], ARGV[5], math.floor(now) .. ':' .. ARGV[6])
if redis.call('PTTL', KEYS[3]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[3], ARGV[3]) end
return 1
`);

// KEYS: token. ARGV: family key prefix, now. A token of its family as it is now, live and unrevoked.
const REFRESH_FIND = new RedisScript(`${PARTS}
local expires, text = parts(redis.call('GET', KEYS[1]))
if not expires or tonumber(expires) <= tonumber(ARGV[2]) then return false end
local current_expires, current = parts(redis.call('GET', ARGV[1] .. cjson.decode(text).familyId))
if current_expires ~= expires or current == '' then return false end
return text
`);

// KEYS: token, next token, next's family, its spent list. ARGV: now, hash, next hash, next json,
// next familyId, next clientId, spent kept, token key prefix. Everything is checked before
// anything is written; the spent tokens past the kept ones are forgotten.
const REFRESH_ROTATE = new RedisScript(`${PARTS}
local now = tonumber(ARGV[1])
local expires, text = parts(redis.call('GET', KEYS[1]))
if not expires or tonumber(expires) <= now then return {'unknown'} end
local record = cjson.decode(text)
if record.familyId ~= ARGV[5] or record.clientId ~= ARGV[6] then return {'unknown'} end
local family_expires, current = parts(redis.call('GET', KEYS[3]))
if family_expires ~= expires or current == '' then return {'unknown'} end
if current ~= ARGV[2] then return {'reused', text} end
if record.expiresAt <= now then return {'unknown'} end
local taken = parts(redis.call('GET', KEYS[2]))
if taken and tonumber(taken) > now then return {'taken'} end
local ttl = redis.call('PTTL', KEYS[3])
if ttl <= 0 then return {'unknown'} end
redis.call('SET', KEYS[2], expires .. ':' .. ARGV[4], 'PX', ttl)
redis.call('SET', KEYS[3], expires .. ':' .. ARGV[3], 'KEEPTTL')
redis.call('LPUSH', KEYS[4], ARGV[2])
while redis.call('LLEN', KEYS[4]) > tonumber(ARGV[7]) do
  redis.call('DEL', ARGV[8] .. redis.call('RPOP', KEYS[4]))
end
redis.call('PEXPIRE', KEYS[4], ttl)
return {'rotated', text}
`);

// KEYS: family, its spent list. ARGV: token key prefix. Keeps the family, ended, until it
// expires (its id cannot start again); its tokens go.
const REFRESH_REVOKE = new RedisScript(`${PARTS}
local expires, current = parts(redis.call('GET', KEYS[1]))
if not expires then return 0 end
if current ~= '' then redis.call('DEL', ARGV[1] .. current) end
for _, hash in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do redis.call('DEL', ARGV[1] .. hash) end
redis.call('DEL', KEYS[2])
redis.call('SET', KEYS[1], expires .. ':', 'KEEPTTL')
return 1
`);

/**
 * Options of `RedisRefreshTokenStore`.
 *
 * @example
 * ```ts
 * import { createRedisClient, RedisRefreshTokenStore } from "portcullis/stores/redis";
 *
 * const redis = await createRedisClient("redis://127.0.0.1:6379").connect();
 * const refreshTokens = new RedisRefreshTokenStore({ client: redis, maxFamiliesPerPerson: 50 });
 * ```
 */
export interface RedisRefreshTokenStoreOptions extends ScriptedStoreOptions, RefreshQuotaOptions {}

/**
 * `RefreshTokenStore` on Redis: a key per token, one per family and its spent
 * list, all expiring with the family, and one per person; creation, rotation
 * and revocation are single scripts.
 */
export class RedisRefreshTokenStore extends ScriptedStore implements RefreshTokenStore {
  readonly #quotas: Required<RefreshQuotaOptions>;

  constructor(options: RedisRefreshTokenStoreOptions) {
    const where = "RedisRefreshTokenStore";
    const { maxFamiliesPerPerson, maxFamiliesPerClientAndPerson, ...rest } =
      options ?? ({} as RedisRefreshTokenStoreOptions);
    super(where, rest, "portcullis:refresh:");
    this.#quotas = refreshQuotas(where, { maxFamiliesPerPerson, maxFamiliesPerClientAndPerson });
  }

  async create(record: RefreshTokenRecord, now: number): Promise<void> {
    const ttl = Math.max(Math.ceil(record.expiresAt - now), 1);
    const reply = await this.run(
      REFRESH_CREATE,
      [
        this.#token(record.tokenHash),
        this.#family(record.familyId),
        `${this.prefix}p:${record.approvedBy}`,
      ],
      [
        `${Math.ceil(record.expiresAt)}:${JSON.stringify(record)}`,
        `${Math.ceil(record.expiresAt)}:${record.tokenHash}`,
        ttl,
        now,
        record.familyId,
        record.clientId,
        this.#quotas.maxFamiliesPerClientAndPerson,
        this.#quotas.maxFamiliesPerPerson,
        this.prefix,
      ],
    );
    if (reply === 0) throw new Error("a refresh token or family with this id is held");
    if (reply !== 1) throw new TypeError("unexpected reply from the refresh script");
  }

  async find(tokenHash: string, now: number): Promise<RefreshTokenRecord | undefined> {
    const reply = await this.run(REFRESH_FIND, [this.#token(tokenHash)], [`${this.prefix}f:`, now]);
    if (reply === null || reply === undefined) return undefined;
    if (typeof reply !== "string") throw new TypeError("unexpected reply from the refresh script");
    return JSON.parse(reply) as RefreshTokenRecord;
  }

  async rotate(tokenHash: string, next: RefreshTokenRecord, now: number): Promise<RefreshRotation> {
    const reply = await this.run(
      REFRESH_ROTATE,
      [
        this.#token(tokenHash),
        this.#token(next.tokenHash),
        this.#family(next.familyId),
        this.#spent(next.familyId),
      ],
      [
        now,
        tokenHash,
        next.tokenHash,
        JSON.stringify(next),
        next.familyId,
        next.clientId,
        SPENT_TOKENS_KEPT,
        `${this.prefix}t:`,
      ],
    );
    if (!Array.isArray(reply)) throw new TypeError("unexpected reply from the refresh script");
    const [outcome, text] = reply as unknown[];
    if (outcome === "unknown") return { outcome };
    if (outcome === "taken") throw new Error("a refresh token with this hash is held");
    if ((outcome !== "rotated" && outcome !== "reused") || typeof text !== "string")
      throw new TypeError("unexpected reply from the refresh script");
    return { outcome, record: JSON.parse(text) as RefreshTokenRecord };
  }

  async revokeFamily(familyId: string): Promise<void> {
    await this.run(
      REFRESH_REVOKE,
      [this.#family(familyId), this.#spent(familyId)],
      [`${this.prefix}t:`],
    );
  }

  #token(hash: string): string {
    return `${this.prefix}t:${hash}`;
  }

  #family(familyId: string): string {
    return `${this.prefix}f:${familyId}`;
  }

  #spent(familyId: string): string {
    return `${this.prefix}s:${familyId}`;
  }
}
