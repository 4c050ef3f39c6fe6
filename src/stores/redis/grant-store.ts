import type { Grant, GrantStore } from "../../agentauth/index.ts";
import { RedisScript, type ScriptedStoreOptions } from "./script.ts";
import { ScriptedStore } from "./scripted-store.ts";

// How long an ended grant stays listed ("expired", "revoked") after it expires.
const GRANT_RETENTION_MS = 30 * 86_400_000;

// KEYS: record, principal set, approver set. ARGV: json, grantId, keepUntil.
// An index set lives as long as its longest-kept grant, so sets of ended grants go too.
const GRANT_CREATE = new RedisScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[3])
local keep = redis.call('PTTL', KEYS[1])
for i = 2, 3 do
  redis.call('SADD', KEYS[i], ARGV[2])
  if redis.call('PTTL', KEYS[i]) < keep then redis.call('PEXPIRE', KEYS[i], keep) end
end
return 1
`);

// KEYS: record. ARGV: json list of capabilities to revoke, or '*' for all; now.
// Idempotent and permanent: revoked capabilities never come back to this grant.
const GRANT_REVOKE = new RedisScript(`
local text = redis.call('GET', KEYS[1])
if not text then return false end
local grant = cjson.decode(text)
local left = {}
if ARGV[1] ~= '*' then
  local drop = {}
  for _, name in ipairs(cjson.decode(ARGV[1])) do drop[name] = true end
  for _, name in ipairs(grant.capabilities) do
    if not drop[name] then table.insert(left, name) end
  end
end
grant.capabilities = left
if #left == 0 then
  if grant.status ~= 'revoked' then grant.revokedAt = tonumber(ARGV[2]) end
  grant.status = 'revoked'
end
local encoded = cjson.encode(grant)
redis.call('SET', KEYS[1], encoded, 'KEEPTTL')
return encoded
`);

// KEYS: an index set. ARGV: record prefix. Answers the live records, dropping dead ids.
const GRANT_LIST = new RedisScript(`
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local text = redis.call('GET', ARGV[1] .. id)
  if text then table.insert(out, text) else redis.call('SREM', KEYS[1], id) end
end
return out
`);

/** `GrantStore` on Redis, for deployments that run Redis only (PostgreSQL keeps grants durably). */
export class RedisGrantStore extends ScriptedStore implements GrantStore {
  constructor(options: ScriptedStoreOptions) {
    super("RedisGrantStore", options, "portcullis:grant:");
  }

  async create(grant: Grant): Promise<void> {
    const created = await this.run(
      GRANT_CREATE,
      [
        `${this.prefix}g:${grant.grantId}`,
        `${this.prefix}p:${grant.principalId}`,
        `${this.prefix}a:${grant.approvedBy}`,
      ],
      [JSON.stringify(grant), grant.grantId, Math.ceil(grant.expiresAt + GRANT_RETENTION_MS)],
    );
    if (created !== 1) throw new Error("a grant with this id exists");
  }

  async get(grantId: string): Promise<Grant | undefined> {
    const grant = await this.getJson<Grant>(`${this.prefix}g:${grantId}`);
    return grant === undefined ? undefined : fixGrant(grant);
  }

  listByPrincipal(principalId: string): Promise<readonly Grant[]> {
    return this.#list(`${this.prefix}p:${principalId}`);
  }

  listByApprover(approvedBy: string): Promise<readonly Grant[]> {
    return this.#list(`${this.prefix}a:${approvedBy}`);
  }

  async revoke(
    grantId: string,
    capabilities: readonly string[] | undefined,
    now: number,
  ): Promise<Grant | undefined> {
    const reply = await this.run(
      GRANT_REVOKE,
      [`${this.prefix}g:${grantId}`],
      [capabilities === undefined ? "*" : JSON.stringify(capabilities), now],
    );
    if (reply === null || reply === undefined) return undefined;
    return fixGrant(JSON.parse(String(reply)) as Grant);
  }

  async #list(key: string): Promise<readonly Grant[]> {
    const reply = await this.run(GRANT_LIST, [key], [`${this.prefix}g:`]);
    if (!Array.isArray(reply)) throw new TypeError("unexpected reply from the grant list script");
    return reply
      .map((text) => fixGrant(JSON.parse(String(text)) as Grant))
      .sort((a, b) => b.createdAt - a.createdAt);
  }
}

// Lua's cjson writes an empty table as {}: an empty capability list comes back as an object.
function fixGrant(grant: Grant): Grant {
  return Array.isArray(grant.capabilities) ? grant : { ...grant, capabilities: [] };
}
