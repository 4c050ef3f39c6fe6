import type { Grant, GrantStore } from "../../agentauth/grants.ts";
import type { PendingRequest, PendingRequestStore } from "../../agentauth/pending.ts";
import type { ReplayStore } from "../../agentauth/replay.ts";
import { InvalidOptionsError } from "../../core/errors.ts";
import type {
  CreateOutcome,
  DecideOutcome,
  Decision,
  DeviceCodeRecord,
  DeviceCodeStore,
  PollOutcome,
} from "../../oauth2/device-code-store.ts";
import { guardRedisClient } from "./client.ts";
import {
  RedisScript,
  type RedisScriptingClient,
  type ScriptedStoreOptions,
  scriptedStoreOptions,
  withTimeout,
} from "./script.ts";

/**
 * Agent stores on Redis, for several instances: a token id used on one is
 * refused on all, a revocation on one is seen by all, a device code is
 * consumed once across all. Every single-use or state-changing step is one
 * Lua script (atomic in Redis); every call is bounded by `timeoutMs`. Records
 * are JSON; keys expire with what they hold, by Redis's clock.
 */

// Shared by every store: read one key.
const GET = new RedisScript(`return redis.call('GET', KEYS[1])`);

abstract class RedisStore {
  protected readonly client: RedisScriptingClient;
  protected readonly prefix: string;
  readonly #timeoutMs: number;

  constructor(name: string, options: ScriptedStoreOptions, defaultPrefix: string) {
    const checked = scriptedStoreOptions(name, options, defaultPrefix);
    guardRedisClient(options.client, options.onError);
    this.client = checked.client;
    this.prefix = checked.prefix;
    this.#timeoutMs = checked.timeoutMs;
  }

  protected run(script: RedisScript, keys: string[], args: (string | number)[]): Promise<unknown> {
    return withTimeout(
      script.run(this.client, { keys, arguments: args.map(String) }),
      this.#timeoutMs,
    );
  }

  protected async getJson<T>(key: string): Promise<T | undefined> {
    const text = await this.run(GET, [key], []);
    if (text === null || text === undefined) return undefined;
    if (typeof text !== "string") throw new TypeError("unexpected reply from Redis");
    return JSON.parse(text) as T;
  }
}

// SET NX: one command, so two instances cannot both record the id. The expiry is relative:
// an absolute one would be read on Redis's clock, and a caller whose clock is behind would
// record ids that expire at once and are accepted again.
const SET_IF_ABSENT = new RedisScript(
  `return redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) and 1 or 0`,
);

/** `ReplayStore` on Redis: `SET NX PX` per token id. */
export class RedisReplayStore extends RedisStore implements ReplayStore {
  constructor(options: ScriptedStoreOptions) {
    super("RedisReplayStore", options, "portcullis:jti:");
  }

  async setIfAbsent(jti: string, expiresAt: number, now: number): Promise<boolean> {
    const ttl = Math.max(Math.ceil(expiresAt - now), 1);
    const reply = await this.run(SET_IF_ABSENT, [this.prefix + jti], [ttl]);
    if (reply !== 0 && reply !== 1) throw new TypeError("unexpected reply from the replay script");
    return reply === 1;
  }
}

// How long an ended device code is kept, so a late poll still learns why.
const DEVICE_LINGER_MS = 10 * 60_000;

// KEYS: record, user-code index, client's set. ARGV: json, userCodeHash, deviceHash,
// now, expiresAt, maxPending, recordPrefix. Supersedes the client's oldest live codes (pending,
// or decided and not yet collected); consumed ones no longer count and leave the set.
const DEVICE_CREATE = new RedisScript(`
local held = redis.call('GET', KEYS[2])
if held then
  local other = redis.call('GET', ARGV[7] .. held)
  if other and cjson.decode(other).expiresAt > tonumber(ARGV[4]) then return 'user_code_taken' end
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[4])
local live = redis.call('ZRANGE', KEYS[3], 0, -1)
local pending = {}
for _, hash in ipairs(live) do
  local text = redis.call('GET', ARGV[7] .. hash)
  if text and cjson.decode(text).status ~= 'consumed' then table.insert(pending, hash)
  else redis.call('ZREM', KEYS[3], hash) end
end
local excess = #pending - tonumber(ARGV[6]) + 1
for i = 1, excess do
  local text = redis.call('GET', ARGV[7] .. pending[i])
  if text then
    local old = cjson.decode(text)
    redis.call('DEL', ARGV[7] .. pending[i])
    local index = KEYS[2]:sub(1, #KEYS[2] - #ARGV[2]) .. old.userCodeHash
    if redis.call('GET', index) == pending[i] then redis.call('DEL', index) end
  end
  redis.call('ZREM', KEYS[3], pending[i])
end
local keepUntil = tonumber(ARGV[5]) + ${DEVICE_LINGER_MS}
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', keepUntil)
redis.call('SET', KEYS[2], ARGV[3], 'PXAT', keepUntil)
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[3])
redis.call('PEXPIREAT', KEYS[3], keepUntil)
return 'created'
`);

// KEYS: user-code index. ARGV: recordPrefix, decision json, now.
const DEVICE_DECIDE = new RedisScript(`
local hash = redis.call('GET', KEYS[1])
if not hash then return cjson.encode({outcome = 'unknown'}) end
local text = redis.call('GET', ARGV[1] .. hash)
if not text then return cjson.encode({outcome = 'unknown'}) end
local record = cjson.decode(text)
if record.expiresAt <= tonumber(ARGV[3]) then return cjson.encode({outcome = 'expired'}) end
if record.status ~= 'pending' then return cjson.encode({outcome = 'already_decided'}) end
for k, v in pairs(cjson.decode(ARGV[2])) do record[k] = v end
local encoded = cjson.encode(record)
redis.call('SET', ARGV[1] .. hash, encoded, 'KEEPTTL')
return cjson.encode({outcome = 'decided', record = record})
`);

// KEYS: record. ARGV: clientId, now, slowDownMs.
const DEVICE_POLL = new RedisScript(`
local text = redis.call('GET', KEYS[1])
if not text then return cjson.encode({outcome = 'invalid'}) end
local record = cjson.decode(text)
if record.clientId ~= ARGV[1] or record.status == 'consumed' then return cjson.encode({outcome = 'invalid'}) end
local now = tonumber(ARGV[2])
if record.expiresAt <= now then return cjson.encode({outcome = 'expired'}) end
if record.lastPolledAt and now - record.lastPolledAt < record.intervalMs then
  record.intervalMs = record.intervalMs + tonumber(ARGV[3])
  record.lastPolledAt = now
  redis.call('SET', KEYS[1], cjson.encode(record), 'KEEPTTL')
  return cjson.encode({outcome = 'slow_down', intervalMs = record.intervalMs})
end
record.lastPolledAt = now
if record.status == 'approved' then
  record.status = 'consumed'
  redis.call('SET', KEYS[1], cjson.encode(record), 'KEEPTTL')
  return cjson.encode({outcome = 'approved', record = record})
end
redis.call('SET', KEYS[1], cjson.encode(record), 'KEEPTTL')
if record.status == 'denied' then return cjson.encode({outcome = 'denied'}) end
return cjson.encode({outcome = 'pending'})
`);

// KEYS: record. ARGV: clientId, consumedAt. Only the poll that consumed the record undoes it.
const DEVICE_RELEASE = new RedisScript(`
local text = redis.call('GET', KEYS[1])
if not text then return 0 end
local record = cjson.decode(text)
if record.clientId ~= ARGV[1] or record.status ~= 'consumed' or record.lastPolledAt ~= tonumber(ARGV[2]) then return 0 end
record.status = 'approved'
redis.call('SET', KEYS[1], cjson.encode(record), 'KEEPTTL')
return 1
`);

/**
 * Options of `RedisDeviceCodeStore`.
 *
 * @example
 * ```ts
 * import { DeviceAuthorizationService } from "portcullis/oauth2";
 * import { createRedisClient, RedisDeviceCodeStore } from "portcullis/stores/redis";
 *
 * const redis = await createRedisClient("redis://127.0.0.1:6379").connect();
 * const service = new DeviceAuthorizationService({
 *   verificationUri: "https://api.example.com/device",
 *   store: new RedisDeviceCodeStore({ client: redis, maxPendingPerClient: 3 }),
 * });
 * ```
 */
export interface RedisDeviceCodeStoreOptions extends ScriptedStoreOptions {
  /**
   * Most live codes per client (pending, or decided and not yet collected); a
   * new one supersedes the client's oldest.
   *
   * @default 1
   */
  readonly maxPendingPerClient?: number;
}

/** `DeviceCodeStore` on Redis: decisions and polls are single scripts. */
export class RedisDeviceCodeStore extends RedisStore implements DeviceCodeStore {
  readonly #maxPending: number;

  constructor(options: RedisDeviceCodeStoreOptions) {
    const { maxPendingPerClient, ...rest } = options ?? ({} as RedisDeviceCodeStoreOptions);
    super("RedisDeviceCodeStore", rest, "portcullis:device:");
    this.#maxPending = maxPendingPerClient ?? 1;
    if (!Number.isSafeInteger(this.#maxPending) || this.#maxPending < 1)
      throw new InvalidOptionsError(
        "RedisDeviceCodeStore: maxPendingPerClient must be a positive integer",
      );
  }

  async create(record: DeviceCodeRecord, now: number): Promise<CreateOutcome> {
    const reply = await this.run(
      DEVICE_CREATE,
      [
        `${this.prefix}dc:${record.deviceCodeHash}`,
        `${this.prefix}uc:${record.userCodeHash}`,
        `${this.prefix}client:${record.clientId}`,
      ],
      [
        JSON.stringify(record),
        record.userCodeHash,
        record.deviceCodeHash,
        now,
        record.expiresAt,
        this.#maxPending,
        `${this.prefix}dc:`,
      ],
    );
    if (reply !== "created" && reply !== "user_code_taken")
      throw new TypeError("unexpected reply from the device-code script");
    return reply;
  }

  async findByUserCode(userCodeHash: string, now: number): Promise<DeviceCodeRecord | undefined> {
    const hash = await this.run(GET, [`${this.prefix}uc:${userCodeHash}`], []);
    if (typeof hash !== "string") return undefined;
    const record = await this.getJson<DeviceCodeRecord>(`${this.prefix}dc:${hash}`);
    return record === undefined || record.expiresAt <= now ? undefined : withScopeList(record);
  }

  async decide(userCodeHash: string, decision: Decision, now: number): Promise<DecideOutcome> {
    return parse<DecideOutcome>(
      await this.run(
        DEVICE_DECIDE,
        [`${this.prefix}uc:${userCodeHash}`],
        [`${this.prefix}dc:`, JSON.stringify(decision), now],
      ),
    );
  }

  async poll(
    deviceCodeHash: string,
    clientId: string,
    now: number,
    slowDownMs: number,
  ): Promise<PollOutcome> {
    return parse<PollOutcome>(
      await this.run(
        DEVICE_POLL,
        [`${this.prefix}dc:${deviceCodeHash}`],
        [clientId, now, slowDownMs],
      ),
    );
  }

  async release(deviceCodeHash: string, clientId: string, consumedAt: number): Promise<boolean> {
    const reply = await this.run(
      DEVICE_RELEASE,
      [`${this.prefix}dc:${deviceCodeHash}`],
      [clientId, consumedAt],
    );
    if (reply !== 0 && reply !== 1) throw new TypeError("unexpected reply from the release script");
    return reply === 1;
  }
}

// KEYS: principal record, user-code index. ARGV: json, expiresAt, indexPrefix.
// The agent's earlier request, and its user code, go with it.
const PENDING_CREATE = new RedisScript(`
local old = redis.call('GET', KEYS[1])
if old then
  local index = ARGV[3] .. cjson.decode(old).userCodeHash
  if redis.call('GET', index) == cjson.decode(ARGV[1]).principalId then redis.call('DEL', index) end
end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2])
redis.call('SET', KEYS[2], cjson.decode(ARGV[1]).principalId, 'PXAT', ARGV[2])
return 1
`);

// KEYS: principal record, user-code index. ARGV: userCodeHash.
const PENDING_DELETE = new RedisScript(`
local text = redis.call('GET', KEYS[1])
if text and cjson.decode(text).userCodeHash == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if redis.call('GET', KEYS[2]) == cjson.decode(text).principalId then redis.call('DEL', KEYS[2]) end
end
return 1
`);

/** `PendingRequestStore` on Redis: one request per agent, indexed by user code. */
export class RedisPendingRequestStore extends RedisStore implements PendingRequestStore {
  constructor(options: ScriptedStoreOptions) {
    super("RedisPendingRequestStore", options, "portcullis:pending:");
  }

  async create(request: PendingRequest): Promise<void> {
    await this.run(
      PENDING_CREATE,
      [`${this.prefix}p:${request.principalId}`, `${this.prefix}u:${request.userCodeHash}`],
      [JSON.stringify(request), Math.ceil(request.expiresAt), `${this.prefix}u:`],
    );
  }

  async getByUserCode(userCodeHash: string, now: number): Promise<PendingRequest | undefined> {
    const principal = await this.run(GET, [`${this.prefix}u:${userCodeHash}`], []);
    if (typeof principal !== "string") return undefined;
    const pending = await this.getByPrincipal(principal, now);
    return pending?.userCodeHash === userCodeHash ? pending : undefined;
  }

  async getByPrincipal(principalId: string, now: number): Promise<PendingRequest | undefined> {
    const pending = await this.getJson<PendingRequest>(`${this.prefix}p:${principalId}`);
    return pending === undefined || pending.expiresAt <= now ? undefined : pending;
  }

  async delete(principalId: string, userCodeHash: string): Promise<void> {
    await this.run(
      PENDING_DELETE,
      [`${this.prefix}p:${principalId}`, `${this.prefix}u:${userCodeHash}`],
      [userCodeHash],
    );
  }
}

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
export class RedisGrantStore extends RedisStore implements GrantStore {
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

function parse<T>(reply: unknown): T {
  if (typeof reply !== "string") throw new TypeError("unexpected reply from a device-code script");
  const value = JSON.parse(reply) as { record?: DeviceCodeRecord };
  if (value.record !== undefined) value.record = withScopeList(value.record);
  return value as T;
}

// cjson writes an empty scope list as {}, in replies and in every record a script rewrote.
function withScopeList(record: DeviceCodeRecord): DeviceCodeRecord {
  return Array.isArray(record.scope) ? record : { ...record, scope: [] };
}
