import {
  ANONYMOUS,
  type Authentication,
  authenticationFrom,
  bindAuthentication,
  createAuthentication,
} from "../core/authentication.ts";
import { type ContextSource, contextFrom, createContextKey } from "../core/context.ts";
import { randomToken } from "../core/encoding.ts";
import { PortcullisError, StoreUnavailableError } from "../core/errors.ts";
import type { SessionRecord, SessionStore } from "./session-store.ts";

/** What the session leg hands each request's `Session`. */
export interface SessionRuntime {
  readonly store: SessionStore;
  readonly now: () => number;
  readonly idleTimeoutMs: number;
  /** Idle timeout of a stored session nobody is signed in to. */
  readonly anonymousIdleTimeoutMs: number;
  readonly absoluteTimeoutMs: number;
  /**
   * Runs one store call within the store's time limit; a failure or a timeout
   * rejects with `StoreUnavailableError`.
   */
  readonly call: <T>(operation: () => Promise<T>) => Promise<T>;
  /** Queues the session cookie (or its deletion) for `request`'s response. */
  readonly setCookie: (request: object, id: string | undefined) => void;
  /** Whether the session cookie carries `Secure`. */
  readonly secure: boolean;
}

let runtimeOf: (session: Session) => SessionRuntime;

/** Whether the cookie `session` would be set with carries `Secure`; for the session leg's own room. */
export function secureCookie(session: Session): boolean {
  return runtimeOf(session).secure;
}

/** Session ids: 32 random bytes, base64url. */
export const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

export function newSessionId(): string {
  return randomToken(32);
}

/** How long a record may live from `at`: its idle timeout, never past its absolute timeout. */
export function ttlOf(
  runtime: SessionRuntime,
  principal: SessionRecord["principal"],
  createdAt: number,
  at: number,
): number {
  const idle = principal === undefined ? runtime.anonymousIdleTimeoutMs : runtime.idleTimeoutMs;
  return Math.min(idle, createdAt + runtime.absoluteTimeoutMs - at);
}

/**
 * The current request's server-side session. Changes are kept in memory until
 * `await session.save()`; nothing is written implicitly. Signing in or
 * changing authorities rotates the id on the next save (session fixation).
 *
 * A session can have an id without a stored record: a visitor who only asked
 * for a CSRF token holds an id (in the cookie) that keys the token, and
 * nothing is written until the application saves data. Such an id carries no
 * principal, ever: a principal is only written under an id minted by the save
 * that writes it.
 */
export class Session {
  readonly #runtime: SessionRuntime;
  readonly #request: object;
  // The id tokens are bound to and the browser holds, or will once the response arrives.
  #id: string | undefined;
  // The id the browser holds as this response stands (the request's cookie, or one set since).
  #cookieId: string | undefined;
  readonly #requestId: string | undefined;
  // A record under #id is in the store, as far as this request knows.
  #stored: boolean;
  // A stored id this session is leaving: retired by the next save.
  #previousId: string | undefined;
  // Who was signed in when the record was read: a rotation that carries this
  // principal on needs the old record to be still there.
  #loadedPrincipal: SessionRecord["principal"];
  // Copied from the record on first use: most requests never read session data.
  #record: SessionRecord | undefined;
  #data: Record<string, unknown> | undefined;
  #principal: SessionRecord["principal"];
  #createdAt: number;
  #destroyed = false;
  readonly #fromCookie: boolean;
  #authentication: Authentication | undefined;

  /**
   * @internal made by the session leg: `id` is the well-formed id the request's
   * cookie carried, `record` what the store holds under it (none: an id
   * without a stored session).
   */
  constructor(runtime: SessionRuntime, request: object, id?: string, record?: SessionRecord) {
    this.#runtime = runtime;
    this.#request = request;
    this.#id = id;
    this.#cookieId = id;
    this.#requestId = id;
    this.#stored = id !== undefined && record !== undefined;
    this.#record = record;
    this.#principal = record?.principal;
    this.#loadedPrincipal = record?.principal;
    this.#createdAt = record?.createdAt ?? runtime.now();
    this.#fromCookie = id !== undefined;
  }

  static {
    runtimeOf = (session) => session.#runtime;
  }

  /** The session's id: the one CSRF tokens are bound to; `undefined` until it has one. */
  get id(): string | undefined {
    return this.#id;
  }

  /** True when the request carried a well-formed session id that this session kept. */
  get fromCookie(): boolean {
    return this.#fromCookie;
  }

  /** True when the store holds a record under `id`, as far as this request knows. */
  get stored(): boolean {
    return this.#stored;
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
    if (this.#stored && this.#previousId === undefined) this.#previousId = this.#id;
    this.#id = undefined;
    this.#stored = false;
  }

  /**
   * The session's id, giving it one when it has none: a new session gets a
   * fresh id and its cookie without any store write (enough to bind CSRF
   * tokens to); a session waiting to rotate is saved first.
   */
  async ensureId(): Promise<string> {
    this.#assertLive();
    if (this.#id === undefined && this.#previousId !== undefined) await this.save();
    if (this.#id === undefined) {
      this.#id = newSessionId();
      this.#stored = false;
      this.#cookie(this.#id);
    }
    return this.#id;
  }

  /**
   * Writes the session; creates it (and sets its cookie) when new, and retires
   * a rotated id. Resolves `true` once written. Resolves `false`, writing
   * nothing, when another request ended this session meanwhile (a logout, a
   * rotation, its expiry): a session that was ended never comes back. This
   * session is then a fresh anonymous one without an id, its cookie is
   * cleared, and the request's principal becomes anonymous. Rejects with
   * `StoreUnavailableError` (HTTP 503) when the store fails or stalls.
   */
  async save(): Promise<boolean> {
    this.#assertLive();
    const { store, now, call } = this.#runtime;
    const at = now();
    const principal = this.#principal;
    const ttl = ttlOf(this.#runtime, principal, this.#createdAt, at);
    const record: SessionRecord = {
      data: this.#ownData(),
      createdAt: this.#createdAt,
      lastAccessAt: at,
      ...(principal === undefined ? {} : { principal }),
    };
    const current = this.#id;
    if (this.#stored && current !== undefined) {
      if (await call(() => store.update(current, record, ttl))) return true;
      this.#end();
      return false;
    }
    const previous = this.#previousId;
    if (previous !== undefined) {
      // The old id goes first: once it is gone no request can read or refresh it.
      const existed = await call(() => store.delete(previous));
      this.#previousId = undefined;
      // Only a sign-in of someone else may go on from a session that was ended
      // meanwhile; carrying the same principal on would revive a logged-out session.
      const signsInAnew = principal !== undefined && principal.name !== this.#loadedPrincipal?.name;
      if (!existed && !signsInAnew) {
        this.#end();
        return false;
      }
    }
    if (!(ttl > 0)) {
      this.#end();
      return false;
    }
    const fresh = current === undefined || principal !== undefined;
    const id = fresh ? newSessionId() : current;
    let written = await call(() => store.create(id, record, ttl));
    // An id from the cookie: another request of this browser stored it first; write over it as any save would.
    if (!written && !fresh) written = await call(() => store.update(id, record, ttl));
    if (!written) {
      if (fresh) throw new StoreUnavailableError("the session store refused a new session id");
      this.#end();
      return false;
    }
    this.#id = id;
    this.#stored = true;
    this.#loadedPrincipal = principal;
    this.#cookie(id);
    return true;
  }

  /**
   * Deletes the session from the store and clears its cookie. Rejects with
   * `StoreUnavailableError` (HTTP 503) when the store fails or stalls: a
   * logout must not report success while the session lives on.
   */
  async destroy(): Promise<void> {
    if (this.#destroyed) return;
    const { store, call } = this.#runtime;
    const ids = new Set<string>();
    // An id of the request's cookie goes even when nothing was read under it:
    // another request of this browser may have stored it meanwhile.
    if (this.#id !== undefined && (this.#stored || this.#id === this.#requestId)) ids.add(this.#id);
    if (this.#previousId !== undefined) ids.add(this.#previousId);
    await Promise.all([...ids].map((id) => call(() => store.delete(id))));
    this.#end();
    this.#destroyed = true;
  }

  /** Forgets everything: a fresh anonymous session without an id, its cookie cleared. */
  #end(): void {
    const names = [this.#principal?.name, this.#loadedPrincipal?.name];
    this.#id = undefined;
    this.#stored = false;
    this.#previousId = undefined;
    this.#principal = undefined;
    this.#loadedPrincipal = undefined;
    this.#authentication = undefined;
    this.#data = {};
    this.#record = undefined;
    this.#createdAt = this.#runtime.now();
    if (this.#cookieId !== undefined) {
      this.#cookieId = undefined;
      this.#runtime.setCookie(this.#request, undefined);
    }
    const bound = authenticationFrom(this.#request);
    if (bound?.anonymous === false && names.includes(bound.name))
      bindAuthentication(this.#request, ANONYMOUS);
  }

  #cookie(id: string): void {
    if (this.#cookieId === id) return;
    this.#cookieId = id;
    this.#runtime.setCookie(this.#request, id);
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
