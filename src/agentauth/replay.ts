import { StoreFullError } from "../core/errors.ts";
import { ExpiryQueue } from "../core/expiry-queue.ts";
import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";
import type { AgentRuntime } from "./runtime.ts";
import type { CapabilityClaims } from "./token.ts";

/** Remembers used token ids until the tokens could no longer verify anyway. */
export interface ReplayStore {
  /**
   * Records `jti` until `expiresAt` (epoch ms, by the caller's clock `now`)
   * and answers true, or answers false when it is already recorded. One atomic
   * step, on every instance.
   */
  setIfAbsent(jti: string, expiresAt: number, now: number): Promise<boolean>;
}

/**
 * Until when (epoch ms) a used capability token's id is kept, judged by the
 * clock of whichever instance records or prunes it. An instance accepts the
 * token until `exp + tolerance` by its own clock; with every clock within the
 * tolerance of the true time, two instances differ by up to twice it, so the
 * one recording may be 2 × tolerance ahead of one that still accepts.
 */
export function usedTokenKeptUntil(expSeconds: number, toleranceSeconds: number): number {
  return (expSeconds + 3 * toleranceSeconds) * 1000;
}

/**
 * Consumes a verified capability token's id: true the first time, false for a
 * replay, and false for a token the replay store cannot know about (issued
 * before a process-local store was made, see `runtime.predatesReplayStore`).
 */
export function consumeTokenId(runtime: AgentRuntime, claims: CapabilityClaims): Promise<boolean> {
  if (runtime.predatesReplayStore?.(claims.iat, claims.jti) === true) return Promise.resolve(false);
  const now = runtime.now();
  const keepUntil = usedTokenKeptUntil(claims.exp, runtime.tokens.clockToleranceSeconds);
  return runtime.store(() => runtime.replay.setIfAbsent(claims.jti, keepUntil, now));
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
   * An id is held for its token's lifetime plus 15 s (135 s for 120 s tokens), so the default
   * carries 100 000 ÷ 135 ≈ 740 executes a second on one instance (about 476 with DPoP, whose
   * proof ids are held 75 s). Set it to the rate times the retention for more.
   *
   * @default 100_000
   */
  readonly maxEntries?: number;
}

/**
 * Process-local replay protection: a token replayed on another instance is not
 * caught, and what it held is gone when the process ends. So `agentAuth`, on
 * this store, refuses every token issued before it was built: a token used
 * before a restart cannot run again after it, even with imported keys and
 * durable grants.
 */
export class MemoryReplayStore implements ReplayStore {
  readonly #until = new Map<string, number>();
  readonly #queue = new ExpiryQueue<string>();
  readonly #max: number;

  constructor(options: MemoryReplayStoreOptions = {}) {
    rejectUnknownKeys("MemoryReplayStore", options, ["maxEntries"]);
    this.#max = positiveInteger("MemoryReplayStore", "maxEntries", options.maxEntries, 100_000);
  }

  async setIfAbsent(jti: string, expiresAt: number, now: number): Promise<boolean> {
    this.#queue.popDue(now, (id, at) => {
      if (this.#until.get(id) === at) this.#until.delete(id);
    });
    // Every id still held is live: the expired ones just left.
    if (this.#until.has(jti)) return false;
    // Forgetting a live id would let its token be replayed: refuse instead.
    if (this.#until.size >= this.#max)
      throw new StoreFullError({
        store: "the replay store",
        quota: "store",
        held: this.#until.size,
        limit: this.#max,
      });
    this.#until.set(jti, expiresAt);
    this.#queue.push(jti, expiresAt);
    return true;
  }

  get size(): number {
    return this.#until.size;
  }
}
