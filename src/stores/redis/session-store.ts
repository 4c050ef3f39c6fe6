import { InvalidOptionsError } from "../../core/errors.ts";
import { rejectUnknownKeys, timeoutOption } from "../../core/options.ts";
import type { SessionRecord, SessionStore } from "../../session/index.ts";
import { guardRedisClient } from "./client.ts";
import { DEL, RedisScript, type RedisScriptingClient, runScript, withTimeout } from "./script.ts";

/** The node-redis (`redis` v5) commands this store uses; a connected client or cluster satisfies it. */
export interface RedisSessionClient extends RedisScriptingClient {
  get(key: string): Promise<string | null | unknown>;
  set(
    key: string,
    value: string,
    options: { expiration: { type: "PX"; value: number }; condition: "NX" | "XX" },
  ): Promise<unknown>;
}

/**
 * Options of `RedisSessionStore`.
 *
 * @example
 * ```ts
 * import { sessions } from "portcullis";
 * import { createRedisClient, RedisSessionStore } from "portcullis/stores/redis";
 *
 * const redis = await createRedisClient("redis://127.0.0.1:6379").connect();
 * const session = sessions({
 *   store: new RedisSessionStore({ client: redis, prefix: "myapp:session:" }),
 * });
 * ```
 */
export interface RedisSessionStoreOptions {
  /** A connected node-redis v5 client (see `createRedisClient`); the store never connects or closes it. */
  readonly client: RedisSessionClient;
  /**
   * Prefix of every key this store writes.
   *
   * @default "portcullis:session:"
   */
  readonly prefix?: string;
  /**
   * A call Redis has not answered within this many milliseconds rejects, so
   * the request answers 503 instead of waiting for Redis to come back.
   *
   * @default 1000
   */
  readonly timeoutMs?: number;
  /**
   * Told about the client's connection errors. Without any listener,
   * node-redis ends the process when Redis goes away.
   *
   * @default when the client has no `error` listener, one logging through console.error at most once every 10 s
   */
  readonly onError?: (error: unknown) => void;
}

// The refresh rewrites only the leading `lastAccessAt` of the JSON this store
// writes, inside Redis: the data and principal stay whatever is stored now, so
// a refresh never undoes a save that ran meanwhile. A record in another layout
// gets its TTL refreshed only.
const TOUCH = new RedisScript(`
local value = redis.call('GET', KEYS[1])
if not value then return 0 end
local rest = string.match(value, '^{"lastAccessAt":[^,]*(,.*)$')
if rest then
  redis.call('SET', KEYS[1], '{"lastAccessAt":' .. ARGV[1] .. rest, 'PX', ARGV[2])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
`);

// KEYS: session. ARGV: record, ttl, NX or XX. A script rather than SET, so a late write is refused.
const WRITE = new RedisScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], ARGV[3]) then return 1 end
return 0
`);

/**
 * Sessions in Redis, shared by every instance behind a load balancer. Records
 * are JSON under `prefix + id` with a millisecond TTL, so Redis drops expired
 * sessions by itself. Every write is conditional and atomic in Redis (`SET NX`,
 * `SET XX`, a script for the refresh), so a logout or rotation on one instance
 * holds against requests still running on any other; and every write is a
 * script that Redis refuses to begin once its caller has given up. A value
 * that does not parse as a record reads as no session.
 */
export class RedisSessionStore implements SessionStore {
  readonly #client: RedisSessionClient;
  readonly #prefix: string;
  readonly #timeoutMs: number;

  constructor(options: RedisSessionStoreOptions) {
    rejectUnknownKeys("RedisSessionStore", options, ["client", "prefix", "timeoutMs", "onError"]);
    const client = options?.client;
    if (
      typeof client?.get !== "function" ||
      typeof client.set !== "function" ||
      typeof client.del !== "function" ||
      typeof client.evalSha !== "function" ||
      typeof client.eval !== "function"
    ) {
      throw new InvalidOptionsError("RedisSessionStore needs a node-redis v5 client");
    }
    const prefix = options.prefix ?? "portcullis:session:";
    if (typeof prefix !== "string")
      throw new InvalidOptionsError("RedisSessionStore prefix must be a string");
    const timeoutMs = timeoutOption("RedisSessionStore", "timeoutMs", options.timeoutMs, 1000);
    if (options.onError !== undefined && typeof options.onError !== "function")
      throw new InvalidOptionsError("RedisSessionStore onError must be a function");
    guardRedisClient(client, options.onError);
    this.#client = client;
    this.#prefix = prefix;
    this.#timeoutMs = timeoutMs;
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const raw = await withTimeout(this.#client.get(this.#prefix + id), this.#timeoutMs);
    if (typeof raw !== "string") return undefined;
    try {
      const record = JSON.parse(raw) as SessionRecord;
      return isRecord(record) ? record : undefined;
    } catch {
      return undefined;
    }
  }

  create(id: string, record: SessionRecord, ttlMs: number): Promise<boolean> {
    return this.#set(id, record, ttlMs, "NX");
  }

  async update(id: string, record: SessionRecord, ttlMs: number): Promise<boolean> {
    if (Math.floor(ttlMs) < 1) {
      await this.delete(id);
      return false;
    }
    return this.#set(id, record, ttlMs, "XX");
  }

  async touch(id: string, lastAccessAt: number, ttlMs: number): Promise<boolean> {
    const ttl = Math.floor(ttlMs);
    if (ttl < 1) {
      await this.delete(id);
      return false;
    }
    if (!Number.isFinite(lastAccessAt))
      throw new RangeError("lastAccessAt must be a finite number");
    const reply = await runScript(
      this.#client,
      TOUCH,
      { keys: [this.#prefix + id], arguments: [JSON.stringify(lastAccessAt), String(ttl)] },
      this.#timeoutMs,
    );
    return reply === 1;
  }

  async delete(id: string): Promise<boolean> {
    const removed = await runScript(
      this.#client,
      DEL,
      { keys: [this.#prefix + id], arguments: [] },
      this.#timeoutMs,
    );
    return removed === 1;
  }

  async #set(
    id: string,
    record: SessionRecord,
    ttlMs: number,
    condition: "NX" | "XX",
  ): Promise<boolean> {
    const ttl = Math.floor(ttlMs);
    if (ttl < 1) return false;
    const reply = await runScript(
      this.#client,
      WRITE,
      { keys: [this.#prefix + id], arguments: [serialize(record), String(ttl), condition] },
      this.#timeoutMs,
    );
    return reply === 1;
  }
}

/** JSON with `lastAccessAt` first, where the refresh script finds it. */
function serialize(record: SessionRecord): string {
  const { lastAccessAt, createdAt, principal, data } = record;
  if (!Number.isFinite(lastAccessAt)) throw new RangeError("lastAccessAt must be a finite number");
  return JSON.stringify(
    principal === undefined
      ? { lastAccessAt, createdAt, data }
      : { lastAccessAt, createdAt, principal, data },
  );
}

function isRecord(value: unknown): value is SessionRecord {
  const r = value as SessionRecord;
  return (
    typeof r === "object" &&
    r !== null &&
    typeof r.data === "object" &&
    r.data !== null &&
    typeof r.createdAt === "number" &&
    typeof r.lastAccessAt === "number" &&
    (r.principal === undefined ||
      (typeof r.principal === "object" &&
        r.principal !== null &&
        typeof r.principal.name === "string" &&
        Array.isArray(r.principal.authorities) &&
        r.principal.authorities.every((a) => typeof a === "string")))
  );
}
