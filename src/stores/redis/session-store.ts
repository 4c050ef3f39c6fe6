import { InvalidOptionsError } from "../../core/errors.ts";
import type { SessionRecord, SessionStore } from "../../session/store.ts";

/** The node-redis (`redis` v5) commands this store uses; a connected client or cluster satisfies it. */
export interface RedisSessionClient {
  get(key: string): Promise<string | null | unknown>;
  set(
    key: string,
    value: string,
    options: { expiration: { type: "PX"; value: number } },
  ): Promise<unknown>;
  del(key: string): Promise<unknown>;
}

export interface RedisSessionStoreOptions {
  /** Prefix of every key this store writes. Default `"portcullis:session:"`. */
  readonly prefix?: string;
}

/**
 * Sessions in Redis, shared by every instance behind a load balancer. Records
 * are JSON under `prefix + id` with a millisecond TTL, so Redis drops expired
 * sessions by itself. A value that does not parse as a record reads as no session.
 */
export class RedisSessionStore implements SessionStore {
  readonly #client: RedisSessionClient;
  readonly #prefix: string;

  constructor(client: RedisSessionClient, options: RedisSessionStoreOptions = {}) {
    if (
      typeof client?.get !== "function" ||
      typeof client.set !== "function" ||
      typeof client.del !== "function"
    ) {
      throw new InvalidOptionsError("RedisSessionStore needs a node-redis client");
    }
    this.#client = client;
    this.#prefix = options.prefix ?? "portcullis:session:";
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const raw = await this.#client.get(this.#prefix + id);
    if (typeof raw !== "string") return undefined;
    try {
      const record = JSON.parse(raw) as SessionRecord;
      return isRecord(record) ? record : undefined;
    } catch {
      return undefined;
    }
  }

  async set(id: string, record: SessionRecord, ttlMs: number): Promise<void> {
    const ttl = Math.floor(ttlMs);
    if (ttl <= 0) {
      await this.delete(id);
      return;
    }
    await this.#client.set(this.#prefix + id, JSON.stringify(record), {
      expiration: { type: "PX", value: ttl },
    });
  }

  async delete(id: string): Promise<void> {
    await this.#client.del(this.#prefix + id);
  }
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
      (typeof r.principal.name === "string" &&
        Array.isArray(r.principal.authorities) &&
        r.principal.authorities.every((a) => typeof a === "string")))
  );
}
