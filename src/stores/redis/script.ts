import { createHash } from "node:crypto";
import { withDeadline } from "../../core/deadline.ts";
import { InvalidOptionsError } from "../../core/errors.ts";
import { rejectUnknownKeys, timeoutOption } from "../../core/options.ts";
import { guardRedisClient } from "./client.ts";

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

/** A Lua script run by its SHA-1, sent again when Redis has forgotten it. */
export class RedisScript {
  readonly #source: string;
  readonly #sha1: string;

  constructor(source: string) {
    this.#source = source;
    this.#sha1 = createHash("sha1").update(source).digest("hex");
  }

  async run(
    client: RedisScriptingClient,
    args: { keys: string[]; arguments: string[] },
  ): Promise<unknown> {
    try {
      return await client.evalSha(this.#sha1, args);
    } catch (error) {
      // Redis forgets scripts on restart or SCRIPT FLUSH; EVAL sends it again and caches it.
      if (!String((error as Error)?.message).startsWith("NOSCRIPT")) throw error;
      return client.eval(this.#source, args);
    }
  }
}

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
