import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";
import type { ClientStore, OAuthClient } from "./clients.ts";

/**
 * Where clients registered through RFC 7591 dynamic registration are held,
 * each until it expires. The server makes their ids (`REGISTERED_CLIENT_PREFIX`
 * and a random part), so they never name a configured client (whose ids have
 * no colon) or a Client ID Metadata Document (an https URL).
 *
 * Implementations must make `add` atomic with its bound, and may throw or
 * reject on failure: the registration is then refused (503).
 */
export interface RegisteredClientStore {
  /**
   * Holds `client` until `expiresAt` (epoch ms); `false`, holding nothing,
   * when the store is full of clients that have not expired: a live client
   * is never pushed out to make room.
   */
  add(client: OAuthClient, expiresAt: number, now: number): Promise<boolean>;
  /** The client while it has not expired. */
  get(clientId: string, now: number): Promise<OAuthClient | undefined>;
}

/** The start of every registered client's id. */
export const REGISTERED_CLIENT_PREFIX = "dyn:";

/**
 * Options of `MemoryRegisteredClientStore`.
 *
 * @example
 * ```ts
 * import { MemoryRegisteredClientStore } from "portcullis/oauth2";
 *
 * const registered = new MemoryRegisteredClientStore({ maxClients: 1000 });
 * ```
 */
export interface MemoryRegisteredClientStoreOptions {
  /**
   * Most clients held; past it registrations are refused until some expire.
   *
   * @default 10_000
   */
  readonly maxClients?: number;
}

/** Process-local registered clients, for a single instance; bounded, never evicting a live one. */
export class MemoryRegisteredClientStore implements RegisteredClientStore {
  // Insertion order; expired clients are dropped when met, and from the front when making room.
  readonly #clients = new Map<string, { client: OAuthClient; expiresAt: number }>();
  readonly #max: number;

  constructor(options: MemoryRegisteredClientStoreOptions = {}) {
    rejectUnknownKeys("MemoryRegisteredClientStore", options, ["maxClients"]);
    this.#max = positiveInteger(
      "MemoryRegisteredClientStore",
      "maxClients",
      options.maxClients,
      10_000,
    );
  }

  /** How many clients are held, expired ones not yet dropped included. */
  get size(): number {
    return this.#clients.size;
  }

  async add(client: OAuthClient, expiresAt: number, now: number): Promise<boolean> {
    if (this.#clients.size >= this.#max) this.#dropExpired(now);
    if (this.#clients.size >= this.#max) return false;
    this.#clients.set(client.clientId, { client, expiresAt });
    return true;
  }

  async get(clientId: string, now: number): Promise<OAuthClient | undefined> {
    const entry = this.#clients.get(clientId);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > now) return entry.client;
    this.#clients.delete(clientId);
    return undefined;
  }

  // Every client is given the same lifetime, so the oldest expire first: the scan stops at the
  // first live one, and a full store of live clients costs one look.
  #dropExpired(now: number): void {
    for (const [clientId, entry] of this.#clients) {
      if (entry.expiresAt > now) return;
      this.#clients.delete(clientId);
    }
  }
}

/**
 * `clients` with the registered clients beside them: an id with the
 * registered prefix is looked up among the registered clients only, any
 * other in `clients`.
 */
export function clientsWithRegistrations(
  clients: ClientStore,
  registered: RegisteredClientStore,
  now: () => number,
): ClientStore {
  return {
    get: (clientId) =>
      clientId.startsWith(REGISTERED_CLIENT_PREFIX)
        ? registered.get(clientId, now())
        : clients.get(clientId),
  };
}
