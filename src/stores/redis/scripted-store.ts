import { guardRedisClient } from "./client.ts";
import {
  RedisScript,
  type RedisScriptingClient,
  runScript,
  type ScriptedStoreOptions,
  scriptedStoreOptions,
} from "./script.ts";

// Shared by every store: read one key.
export const GET = new RedisScript(`return redis.call('GET', KEYS[1])`);

/**
 * The base of the agent stores on Redis, for several instances: a token id used
 * on one is refused on all, a revocation on one is seen by all, a device code is
 * consumed once across all. Every single-use or state-changing step is one Lua
 * script (atomic in Redis); every call is bounded by `timeoutMs` and by its
 * caller's deadline, past which Redis refuses to begin it (`runScript`).
 * Records are JSON; keys expire with what they hold, by Redis's clock.
 */
export abstract class ScriptedStore {
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
    return runScript(this.client, script, { keys, arguments: args.map(String) }, this.#timeoutMs);
  }

  protected async getJson<T>(key: string): Promise<T | undefined> {
    const text = await this.run(GET, [key], []);
    if (text === null || text === undefined) return undefined;
    if (typeof text !== "string") throw new TypeError("unexpected reply from Redis");
    return JSON.parse(text) as T;
  }
}
