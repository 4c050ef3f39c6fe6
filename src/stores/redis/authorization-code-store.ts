import type {
  AuthorizationCodeRecord,
  AuthorizationCodeStore,
  CodeRedemption,
} from "../../oauth2/index.ts";
import { RedisScript, type ScriptedStoreOptions } from "./script.ts";
import { ScriptedStore } from "./scripted-store.ts";

// A code's value is "L" (live) or "S" (spent) then its record's JSON, which the scripts never
// re-encode. KEYS: code. ARGV: value, ttl, now. A hash held by an unexpired code is refused.
const CODE_CREATE = new RedisScript(`
local held = redis.call('GET', KEYS[1])
if held and cjson.decode(string.sub(held, 2)).expiresAt > tonumber(ARGV[3]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
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
 * `AuthorizationCodeStore` on Redis: one key per code hash, expiring with the
 * code (relative to the caller's clock); redemption is one script.
 */
export class RedisAuthorizationCodeStore extends ScriptedStore implements AuthorizationCodeStore {
  constructor(options: ScriptedStoreOptions) {
    super("RedisAuthorizationCodeStore", options, "portcullis:code:");
  }

  async create(record: AuthorizationCodeRecord, now: number): Promise<void> {
    const ttl = Math.max(Math.ceil(record.expiresAt - now), 1);
    const reply = await this.run(
      CODE_CREATE,
      [this.prefix + record.codeHash],
      [`L${JSON.stringify(record)}`, ttl, now],
    );
    if (reply === 0) throw new Error("an authorization code with this hash is held");
    if (reply !== 1) throw new TypeError("unexpected reply from the code script");
  }

  async redeem(codeHash: string, now: number): Promise<CodeRedemption> {
    const reply = await this.run(CODE_REDEEM, [this.prefix + codeHash], [now]);
    if (reply === null || reply === undefined) return { outcome: "unknown" };
    if (typeof reply !== "string") throw new TypeError("unexpected reply from the code script");
    const record = JSON.parse(reply.slice(1)) as AuthorizationCodeRecord;
    return { outcome: reply.startsWith("L") ? "redeemed" : "reused", record };
  }
}
