import type { Grant, GrantApproval, GrantLimits, GrantStore } from "../../agentauth/index.ts";
import { RedisScript, type ScriptedStoreOptions } from "./script.ts";
import { ScriptedStore } from "./scripted-store.ts";

// How long an ended grant stays listed ("expired", "revoked") after it expires.
const GRANT_RETENTION_MS = 30 * 86_400_000;

// The keys under the prefix: g:<grant id> the record (JSON); a:<approver> and p:<principal>
// the sets of their grant ids, ended ones included, for the lists; q:<principal> the agent's
// active grant ids scored by expiry, to count them without reading every record.

// KEYS: approver set, principal set, principal's active set, the new record.
// ARGV: grant json, now, per-approver limit, per-principal limit, prefix, retention ms.
// One step: the pair's active grant takes the approval, else a new grant within the limits;
// the approver's ended grants beyond their limit go, oldest first. Index sets live as long
// as their longest-kept grant, so the sets of ended grants go too.
const GRANT_APPROVE = new RedisScript(`
local g = cjson.decode(ARGV[1])
local now = tonumber(ARGV[2])
local perApprover = tonumber(ARGV[3])
local perPrincipal = tonumber(ARGV[4])
local prefix = ARGV[5]
local retention = tonumber(ARGV[6])
local function keepIndexes(record)
  local keep = redis.call('PTTL', record)
  for i = 1, 3 do
    if redis.call('PTTL', KEYS[i]) < keep then redis.call('PEXPIRE', KEYS[i], keep) end
  end
end
local pair, pairText, held, ended = nil, nil, 0, {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local text = redis.call('GET', prefix .. 'g:' .. id)
  if not text then
    redis.call('SREM', KEYS[1], id)
  else
    local r = cjson.decode(text)
    if r.status == 'active' and r.expiresAt > now then
      held = held + 1
      if r.principalId == g.principalId and (pair == nil or r.createdAt > pair.createdAt) then
        pair, pairText = r, text
      end
    else
      table.insert(ended, r)
    end
  end
end
if pair then
  if pair.jkt and pair.jkt ~= g.jkt then return {'refused', 'bound_to_another_key'} end
  local caps, have = {}, {}
  for _, name in ipairs(pair.capabilities) do have[name] = true; table.insert(caps, name) end
  for _, name in ipairs(g.capabilities) do
    if not have[name] then have[name] = true; table.insert(caps, name) end
  end
  pair.capabilities = caps
  if g.expiresAt > pair.expiresAt then pair.expiresAt = g.expiresAt end
  if pair.jkt == nil and g.jkt ~= nil then pair.jkt = g.jkt end
  local encoded = cjson.encode(pair)
  local record = prefix .. 'g:' .. pair.grantId
  redis.call('SET', record, encoded, 'PXAT', math.ceil(pair.expiresAt + retention))
  redis.call('ZADD', KEYS[3], pair.expiresAt, pair.grantId)
  keepIndexes(record)
  return {'extended', encoded, pairText}
end
if redis.call('EXISTS', KEYS[4]) == 1 then return {'exists'} end
if held >= perApprover then return {'refused', 'approver_limit'} end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[3]) >= perPrincipal then return {'refused', 'principal_limit'} end
if #ended > perApprover then
  table.sort(ended, function(x, y) return x.createdAt < y.createdAt end)
  for i = 1, #ended - perApprover do
    local r = ended[i]
    redis.call('DEL', prefix .. 'g:' .. r.grantId)
    redis.call('SREM', KEYS[1], r.grantId)
    redis.call('SREM', prefix .. 'p:' .. r.principalId, r.grantId)
    redis.call('ZREM', prefix .. 'q:' .. r.principalId, r.grantId)
  end
end
redis.call('SET', KEYS[4], ARGV[1], 'PXAT', math.ceil(g.expiresAt + retention))
redis.call('SADD', KEYS[1], g.grantId)
redis.call('SADD', KEYS[2], g.grantId)
redis.call('ZADD', KEYS[3], g.expiresAt, g.grantId)
keepIndexes(KEYS[4])
return {'created', ARGV[1]}
`);

// KEYS: record. ARGV: json list of capabilities to revoke, or '*' for all; now; prefix.
// Idempotent and permanent: a grant revoked as a whole leaves its agent's active set.
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
  redis.call('ZREM', ARGV[3] .. 'q:' .. grant.principalId, grant.grantId)
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

/**
 * `GrantStore` on Redis, for deployments that run Redis only (PostgreSQL
 * keeps grants durably). An approval is one script; it reads the approver's
 * grants (at most their limit active and as many ended), so what one human
 * keeps in Redis is bounded.
 */
export class RedisGrantStore extends ScriptedStore implements GrantStore {
  constructor(options: ScriptedStoreOptions) {
    super("RedisGrantStore", options, "portcullis:grant:");
  }

  async approve(grant: Grant, limits: GrantLimits): Promise<GrantApproval> {
    const reply = await this.run(
      GRANT_APPROVE,
      [
        `${this.prefix}a:${grant.approvedBy}`,
        `${this.prefix}p:${grant.principalId}`,
        `${this.prefix}q:${grant.principalId}`,
        `${this.prefix}g:${grant.grantId}`,
      ],
      [
        JSON.stringify(grant),
        grant.createdAt,
        limits.perApprover,
        limits.perPrincipal,
        this.prefix,
        GRANT_RETENTION_MS,
      ],
    );
    if (!Array.isArray(reply))
      throw new TypeError("unexpected reply from the grant approval script");
    const [outcome, first, second] = reply.map(String);
    if (outcome === "created") return { outcome, grant: readGrant(first) };
    if (outcome === "extended")
      return { outcome, grant: readGrant(first), previous: readGrant(second) };
    if (
      outcome === "refused" &&
      (first === "bound_to_another_key" ||
        first === "approver_limit" ||
        first === "principal_limit")
    )
      return { outcome, reason: first };
    if (outcome === "exists") throw new Error("a grant with this id exists");
    throw new TypeError("unexpected reply from the grant approval script");
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
      [capabilities === undefined ? "*" : JSON.stringify(capabilities), now, this.prefix],
    );
    if (reply === null || reply === undefined) return undefined;
    return readGrant(String(reply));
  }

  async #list(key: string): Promise<readonly Grant[]> {
    const reply = await this.run(GRANT_LIST, [key], [`${this.prefix}g:`]);
    if (!Array.isArray(reply)) throw new TypeError("unexpected reply from the grant list script");
    return reply.map((text) => readGrant(String(text))).sort((a, b) => b.createdAt - a.createdAt);
  }
}

function readGrant(text: string | undefined): Grant {
  return fixGrant(JSON.parse(String(text)) as Grant);
}

// Lua's cjson writes an empty table as {}: an empty capability list comes back as an object.
function fixGrant(grant: Grant): Grant {
  return Array.isArray(grant.capabilities) ? grant : { ...grant, capabilities: [] };
}
