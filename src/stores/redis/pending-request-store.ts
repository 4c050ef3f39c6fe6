import type { PendingRequest, PendingRequestStore } from "../../agentauth/index.ts";
import { RedisScript, type ScriptedStoreOptions } from "./script.ts";
import { GET, ScriptedStore } from "./scripted-store.ts";

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
export class RedisPendingRequestStore extends ScriptedStore implements PendingRequestStore {
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
