import { createHash } from "node:crypto";
import { serverCutoff, withDeadline } from "../../core/deadline.ts";
import { InvalidOptionsError } from "../../core/errors.ts";
import { rejectUnknownKeys, timeoutOption } from "../../core/options.ts";
import { guardRedisClient } from "./client.ts";
import { redisClock } from "./redis-clock.ts";

/**
 * The node-redis v5 commands (`createClient()`, or a cluster client) the
 * scripted Redis stores use, typed by shape: the stores do not pin
 * node-redis's generics, and tests can wrap a client.
 */
export interface RedisScriptingClient {
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  del(keys: string | string[]): Promise<unknown>;
}

const LATE = "PORTCULLIS_LATE";

// The first lines of every script: begun after the caller's deadline (the last argument, in
// milliseconds of Redis's clock), a script changes nothing and answers the LATE error.
const LATE_CHECK = `local portcullis_time = redis.call('TIME')
if tonumber(portcullis_time[1]) * 1000 + math.floor(tonumber(portcullis_time[2]) / 1000) > tonumber(ARGV[#ARGV]) then
  return redis.error_reply('${LATE} begun after its caller gave up; nothing was changed')
end
`;

/**
 * A Lua script run by its SHA-1, sent again when Redis has forgotten it. Every
 * script first checks Redis's clock against the deadline `run` appends to its
 * arguments, so the script's own `ARGV` indices are as written.
 */
export class RedisScript {
  readonly #source: string;
  readonly #sha1: string;

  constructor(source: string) {
    this.#source = LATE_CHECK + source;
    this.#sha1 = createHash("sha1").update(this.#source).digest("hex");
  }

  /**
   * Runs the script unless Redis would begin it after `cutoff` (a
   * `performance.now()` time): then nothing changes and the call rejects.
   */
  async run(
    client: RedisScriptingClient,
    args: { keys: string[]; arguments: string[] },
    cutoff: number,
  ): Promise<unknown> {
    const clock = redisClock(client);
    const offset = await clock.offset(client);
    const withCutoff = {
      keys: args.keys,
      arguments: [...args.arguments, String(Math.floor(cutoff + offset))],
    };
    try {
      try {
        return await client.evalSha(this.#sha1, withCutoff);
      } catch (error) {
        // Redis forgets scripts on restart or SCRIPT FLUSH; EVAL sends it again and caches it.
        if (!String((error as Error)?.message).startsWith("NOSCRIPT")) throw error;
        return await client.eval(this.#source, withCutoff);
      }
    } catch (error) {
      if (!String((error as Error)?.message).startsWith(LATE)) throw error;
      clock.doubt();
      throw lateError();
    }
  }
}

function lateError(): Error {
  return new Error("Redis would have run the call after its caller gave up; it changed nothing");
}

/**
 * Runs `script` within `timeoutMs`, and only if Redis begins it in time for
 * the caller that is starting it (`serverCutoff`, read here before anything
 * is awaited): a call its caller gave up on (and answered 503) changes
 * nothing when a stalled Redis resumes.
 */
export function runScript(
  client: RedisScriptingClient,
  script: RedisScript,
  args: { keys: string[]; arguments: string[] },
  timeoutMs: number,
): Promise<unknown> {
  return withDeadline(script.run(client, args, serverCutoff(timeoutMs)), timeoutMs, "Redis");
}

// Deletes a key; a script, so a late delete is refused like any other change.
export const DEL = new RedisScript(`return redis.call('DEL', KEYS[1])`);

/** `promise`, or a rejection after `ms`: the caller's fail-closed answer applies instead of a hang. */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return withDeadline(promise, ms, "Redis");
}

/**
 * What the scripted Redis stores take: a client, a key prefix and a time
 * limit. Exported as `RedisStoreOptions`.
 *
 * @example
 * ```ts
 * import { createRedisClient, RedisGrantStore, RedisReplayStore } from "portcullis/stores/redis";
 *
 * const redis = await createRedisClient("redis://127.0.0.1:6379").connect();
 * // On a Redis Cluster, a hash-tagged prefix keeps each store's keys in one slot.
 * const replay = new RedisReplayStore({ client: redis, prefix: "{portcullis}:jti:" });
 * const grants = new RedisGrantStore({ client: redis, timeoutMs: 500 });
 * ```
 */
export interface ScriptedStoreOptions {
  /** A connected node-redis v5 client; the store never connects or closes it. */
  readonly client: RedisScriptingClient;
  /**
   * Prepended to every key the store writes.
   *
   * @default the store's own: "portcullis:jti:" (`RedisReplayStore`), "portcullis:grant:" (`RedisGrantStore`), "portcullis:pending:" (`RedisPendingRequestStore`), "portcullis:device:" (`RedisDeviceCodeStore`), "portcullis:code:" (`RedisAuthorizationCodeStore`), "portcullis:refresh:" (`RedisRefreshTokenStore`)
   */
  readonly prefix?: string;
  /**
   * A call Redis has not answered within this many milliseconds rejects.
   *
   * @default 1000
   */
  readonly timeoutMs?: number;
  /**
   * Told about the client's connection errors (see `guardRedisClient`).
   *
   * @default when the client has no `error` listener, one logging through console.error at most once every 10 s
   */
  readonly onError?: (error: unknown) => void;
}

/** Validates a scripted store's options, throwing `InvalidOptionsError`, and fills in the defaults. */
export function scriptedStoreOptions(
  store: string,
  options: ScriptedStoreOptions,
  defaultPrefix: string,
): { client: RedisScriptingClient; prefix: string; timeoutMs: number } {
  rejectUnknownKeys(store, options, ["client", "prefix", "timeoutMs", "onError"]);
  const client = options?.client;
  if (
    typeof client?.evalSha !== "function" ||
    typeof client.eval !== "function" ||
    typeof client.del !== "function"
  )
    throw new InvalidOptionsError(`${store} needs a node-redis v5 client`);
  const prefix = options.prefix ?? defaultPrefix;
  if (typeof prefix !== "string") throw new InvalidOptionsError(`${store} prefix must be a string`);
  const timeoutMs = timeoutOption(store, "timeoutMs", options.timeoutMs, 1000);
  // Without an error listener, the first Redis outage would end the process.
  guardRedisClient(client, options.onError);
  return { client, prefix, timeoutMs };
}
