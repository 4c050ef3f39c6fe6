import { createHash } from "node:crypto";

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

/**
 * `promise`, or a rejection after `ms`: a store call Redis does not answer in
 * time fails, so the caller's fail-closed answer applies instead of requests
 * hanging while the client waits to reconnect.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
