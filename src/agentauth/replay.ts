import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";

/** Remembers used token ids until the tokens could no longer verify anyway. */
export interface ReplayStore {
  /**
   * Records `jti` until `expiresAt` (epoch ms) and answers true, or answers
   * false when it is already recorded. One atomic step, on every instance.
   */
  setIfAbsent(jti: string, expiresAt: number, now: number): Promise<boolean>;
}

/**
 * Options of `MemoryReplayStore`.
 *
 * @example
 * ```ts
 * import { agentAuth, MemoryReplayStore } from "portcullis/agentauth";
 *
 * const agents = await agentAuth({
 *   issuer,
 *   clients,
 *   capabilities,
 *   stores: { replay: new MemoryReplayStore({ maxEntries: 500_000 }) },
 * });
 * ```
 */
export interface MemoryReplayStoreOptions {
  /**
   * Most ids held; when full of live ids, `setIfAbsent` fails (closed) rather than forget one.
   *
   * @default 100_000
   */
  readonly maxEntries?: number;
}

/** Process-local replay protection: a token replayed on another instance is not caught. */
export class MemoryReplayStore implements ReplayStore {
  readonly #seen = new Map<string, number>();
  readonly #max: number;

  constructor(options: MemoryReplayStoreOptions = {}) {
    rejectUnknownKeys("MemoryReplayStore", options, ["maxEntries"]);
    this.#max = positiveInteger("MemoryReplayStore", "maxEntries", options.maxEntries, 100_000);
  }

  async setIfAbsent(jti: string, expiresAt: number, now: number): Promise<boolean> {
    const until = this.#seen.get(jti);
    if (until !== undefined && until > now) return false;
    if (this.#seen.size >= this.#max) this.#sweep(now);
    // Forgetting a live id would let its token be replayed: refuse instead.
    if (this.#seen.size >= this.#max) throw new Error("the replay store is full of live token ids");
    this.#seen.delete(jti);
    this.#seen.set(jti, expiresAt);
    return true;
  }

  get size(): number {
    return this.#seen.size;
  }

  #sweep(now: number): void {
    for (const [jti, until] of this.#seen) if (until <= now) this.#seen.delete(jti);
  }
}
