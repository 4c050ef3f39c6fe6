import { InvalidOptionsError } from "../../core/errors.ts";
import type {
  CreateOutcome,
  DecideOutcome,
  Decision,
  DeviceCodeRecord,
  DeviceCodeStore,
  PollOutcome,
} from "../../oauth2/index.ts";
import { RedisScript, type ScriptedStoreOptions } from "./script.ts";
import { GET, ScriptedStore } from "./scripted-store.ts";

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
export class RedisDeviceCodeStore extends ScriptedStore implements DeviceCodeStore {
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
