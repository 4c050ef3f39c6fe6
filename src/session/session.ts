import { type Authentication, createAuthentication } from "../core/authentication.ts";
import { type ContextSource, contextFrom, createContextKey } from "../core/context.ts";
import { randomToken } from "../core/encoding.ts";
import { PortcullisError } from "../core/errors.ts";
import type { SessionRecord, SessionStore } from "./store.ts";

/** What the session leg hands each request's `Session`. */
export interface SessionRuntime {
  readonly store: SessionStore;
  readonly now: () => number;
  readonly idleTimeoutMs: number;
  readonly absoluteTimeoutMs: number;
  /** Queues the session cookie (or its deletion) for `request`'s response. */
  readonly setCookie: (request: object, id: string | undefined) => void;
}

/** Session ids: 32 random bytes, base64url. */
export const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

export function newSessionId(): string {
  return randomToken(32);
}

/**
 * The current request's server-side session. Changes are kept in memory until
 * `await session.save()`; nothing is written implicitly. Signing in or
 * changing authorities rotates the id on the next save (session fixation).
 */
export class Session {
  readonly #runtime: SessionRuntime;
  readonly #request: object;
  #id: string | undefined;
  #previousId: string | undefined;
  // Copied from the record on first use: most requests never read session data.
  #record: SessionRecord | undefined;
  #data: Record<string, unknown> | undefined;
  #principal: SessionRecord["principal"];
  #createdAt: number;
  #destroyed = false;
  readonly #fromCookie: boolean;
  #authentication: Authentication | undefined;

  /** @internal made by the session leg */
  constructor(runtime: SessionRuntime, request: object, id?: string, record?: SessionRecord) {
    this.#runtime = runtime;
    this.#request = request;
    this.#id = record === undefined ? undefined : id;
    this.#record = record;
    this.#principal = record?.principal;
    this.#createdAt = record?.createdAt ?? runtime.now();
    this.#fromCookie = record !== undefined;
  }

  /** The id, once the session exists in the store. */
  get id(): string | undefined {
    return this.#id;
  }

  /** True when the request carried a cookie for a live session. */
  get fromCookie(): boolean {
    return this.#fromCookie;
  }

  get destroyed(): boolean {
    return this.#destroyed;
  }

  get createdAt(): number {
    return this.#createdAt;
  }

  /** The principal signed in to this session, if any. */
  get authentication(): Authentication | undefined {
    if (this.#principal === undefined) return undefined;
    this.#authentication ??= sharedAuthentication(this.#principal);
    return this.#authentication;
  }

  get<T = unknown>(key: string): T | undefined {
    return this.#ownData()[key] as T | undefined;
  }

  set(key: string, value: unknown): void {
    this.#assertLive();
    this.#ownData()[key] = value;
  }

  delete(key: string): void {
    this.#assertLive();
    delete this.#ownData()[key];
  }

  #ownData(): Record<string, unknown> {
    if (this.#data === undefined) {
      const stored = this.#record?.data;
      // A store may hand out frozen records (the memory store shares one per
      // session): those are copied deep, so nested values can be changed too.
      this.#data =
        stored === undefined
          ? {}
          : Object.isFrozen(stored)
            ? (JSON.parse(JSON.stringify(stored)) as Record<string, unknown>)
            : { ...stored };
      this.#record = undefined;
    }
    return this.#data;
  }

  /**
   * Signs `authentication` in (or out, with `undefined`). Rotates the id when
   * the principal or its authorities change, so an id planted before login
   * never becomes an authenticated one.
   */
  setAuthentication(authentication: Authentication | undefined): void {
    this.#assertLive();
    const next =
      authentication === undefined || !authentication.authenticated || authentication.anonymous
        ? undefined
        : { name: authentication.name, authorities: [...authentication.authorities] };
    const current = this.#principal;
    const same =
      current?.name === next?.name &&
      current?.authorities.length === next?.authorities.length &&
      (next?.authorities.every((a) => current?.authorities.includes(a)) ?? true);
    this.#principal = next;
    this.#authentication = undefined;
    if (!same) {
      // The absolute timeout counts from sign-in, not from the anonymous visit before it.
      this.#createdAt = this.#runtime.now();
      this.regenerate();
    }
  }

  /** Gives the session a new id on the next save; the old id stops working then. */
  regenerate(): void {
    this.#assertLive();
    if (this.#id !== undefined && this.#previousId === undefined) this.#previousId = this.#id;
    this.#id = undefined;
  }

  /** Writes the session; creates it (and its cookie) when new, and retires a rotated id. */
  async save(): Promise<void> {
    this.#assertLive();
    const { store, now, idleTimeoutMs, absoluteTimeoutMs } = this.#runtime;
    const at = now();
    const ttl = Math.min(idleTimeoutMs, this.#createdAt + absoluteTimeoutMs - at);
    const isNewId = this.#id === undefined;
    const id = this.#id ?? newSessionId();
    const record: SessionRecord = {
      data: this.#ownData(),
      createdAt: this.#createdAt,
      lastAccessAt: at,
      ...(this.#principal === undefined ? {} : { principal: this.#principal }),
    };
    await store.set(id, record, ttl);
    if (this.#previousId !== undefined) {
      await store.delete(this.#previousId);
      this.#previousId = undefined;
    }
    this.#id = id;
    if (isNewId) this.#runtime.setCookie(this.#request, id);
  }

  /** Deletes the session from the store and clears its cookie. */
  async destroy(): Promise<void> {
    if (this.#destroyed) return;
    const { store } = this.#runtime;
    if (this.#id !== undefined) await store.delete(this.#id);
    if (this.#previousId !== undefined) await store.delete(this.#previousId);
    const hadCookie = this.#id !== undefined || this.#previousId !== undefined;
    this.#id = undefined;
    this.#previousId = undefined;
    this.#principal = undefined;
    this.#authentication = undefined;
    this.#data = {};
    this.#record = undefined;
    this.#destroyed = true;
    if (hadCookie) this.#runtime.setCookie(this.#request, undefined);
  }

  #assertLive(): void {
    if (this.#destroyed) throw new PortcullisError("this session was destroyed");
  }
}

// Principals are frozen, so one object can serve every request of the same
// user: it saves an allocation per request and lets per-principal caches (the
// role hierarchy's) hit. Bounded: past the limit the oldest entry goes.
const PRINCIPAL_CACHE_SIZE = 1000;
const principals = new Map<string, Authentication>();
// A store that hands out the same frozen principal on every read (the memory
// store does) is answered without building the key.
const byFrozenPrincipal = new WeakMap<object, Authentication>();

function sharedAuthentication(principal: NonNullable<SessionRecord["principal"]>): Authentication {
  const known = byFrozenPrincipal.get(principal);
  if (known !== undefined) return known;
  const { name, authorities } = principal;
  // JSON keeps the key unambiguous whatever characters a name holds.
  const key = JSON.stringify([name, authorities]);
  let auth = principals.get(key);
  if (auth === undefined) {
    auth = createAuthentication(name, authorities);
    principals.set(key, auth);
    if (principals.size > PRINCIPAL_CACHE_SIZE)
      principals.delete(principals.keys().next().value as string);
  }
  if (Object.isFrozen(principal) && Object.isFrozen(authorities))
    byFrozenPrincipal.set(principal, auth);
  return auth;
}

/** Where the session leg keeps the request's `Session`. */
export const SESSION = createContextKey<Session>("portcullis.session");

/** The session of `source`, or `undefined` when no session leg ran. */
export function sessionFrom(source: ContextSource): Session | undefined {
  return contextFrom(source).get(SESSION);
}
