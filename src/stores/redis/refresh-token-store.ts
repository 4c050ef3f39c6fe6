import type { RefreshRotation, RefreshTokenRecord, RefreshTokenStore } from "../../oauth2/index.ts";
import { RedisScript, type ScriptedStoreOptions } from "./script.ts";
import { ScriptedStore } from "./scripted-store.ts";

// Keys: "t:<hash>" holds "<family expiresAt>:<record JSON>" (the JSON never re-encoded by the
// scripts; the expiry tells a family from an earlier one of the same id); "f:<id>" holds
// "<family expiresAt>:<current hash>", with no hash once revoked. Every key of a family expires
// with the family, relative to the caller's clock, so spent tokens are kept exactly that long.
const PARTS = `
local function parts(value)
  if not value then return nil end
  return string.match(value, '^(%d+):(.*)$')
end
`;

// KEYS: token, family. ARGV: token value, family value, ttl, now. A family id or a token hash
// of an unexpired family is refused.
const REFRESH_CREATE = new RedisScript(`${PARTS}
local now = tonumber(ARGV[4])
local family = parts(redis.call('GET', KEYS[2]))
if family and tonumber(family) > now then return 0 end
local token = parts(redis.call('GET', KEYS[1]))
if token and tonumber(token) > now then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
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

// KEYS: token, next token, next's family. ARGV: now, hash, next hash, next json, next familyId,
// next clientId. Everything is checked before anything is written.
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
return {'rotated', text}
`);

// KEYS: family. Keeps the family, ended, until it expires: its id cannot start again.
const REFRESH_REVOKE = new RedisScript(`${PARTS}
local expires = parts(redis.call('GET', KEYS[1]))
if not expires then return 0 end
redis.call('SET', KEYS[1], expires .. ':', 'KEEPTTL')
return 1
`);

/**
 * `RefreshTokenStore` on Redis: a key per token and one per family, all
 * expiring with the family; rotation and revocation are single scripts.
 */
export class RedisRefreshTokenStore extends ScriptedStore implements RefreshTokenStore {
  constructor(options: ScriptedStoreOptions) {
    super("RedisRefreshTokenStore", options, "portcullis:refresh:");
  }

  async create(record: RefreshTokenRecord, now: number): Promise<void> {
    const ttl = Math.max(Math.ceil(record.expiresAt - now), 1);
    const reply = await this.run(
      REFRESH_CREATE,
      [this.#token(record.tokenHash), this.#family(record.familyId)],
      [
        `${Math.ceil(record.expiresAt)}:${JSON.stringify(record)}`,
        `${Math.ceil(record.expiresAt)}:${record.tokenHash}`,
        ttl,
        now,
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
      [this.#token(tokenHash), this.#token(next.tokenHash), this.#family(next.familyId)],
      [now, tokenHash, next.tokenHash, JSON.stringify(next), next.familyId, next.clientId],
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
    await this.run(REFRESH_REVOKE, [this.#family(familyId)], []);
  }

  #token(hash: string): string {
    return `${this.prefix}t:${hash}`;
  }

  #family(familyId: string): string {
    return `${this.prefix}f:${familyId}`;
  }
}
