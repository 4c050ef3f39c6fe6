import { bindAuthentication } from "../core/authentication.ts";
import { bindValue } from "../core/context.ts";
import {
  type CookieAttributes,
  MAX_COOKIE_HEADER_LENGTH,
  readCookie,
  serializeCookie,
  validateCookie,
} from "../core/cookie.ts";
import { InvalidOptionsError, StoreUnavailableError } from "../core/errors.ts";
import { directLeg, type FetchHandler, type Middleware, onAnswer } from "../core/handler.ts";
import { throttledConsole } from "../core/log.ts";
import { rejectUnknownKeys, timeoutOption } from "../core/options.ts";
import { existingOutbox, outboxOf } from "../core/outbox.ts";
import { problemResponse } from "../core/problem.ts";
import { inProduction } from "../core/production.ts";
import { storeCaller } from "../core/store-call.ts";
import { warnOnce } from "../core/warning.ts";
import {
  SESSION,
  SESSION_ID,
  Session,
  type SessionRuntime,
  secureCookie,
  sessionFrom,
  ttlOf,
} from "./session.ts";
import {
  getNow,
  MemorySessionStore,
  type SessionRecord,
  type SessionStore,
} from "./session-store.ts";

const MEMORY_GET = MemorySessionStore.prototype.get;

/**
 * Options of `sessions`.
 *
 * @example
 * ```ts
 * import { newHandler, sessions } from "portcullis";
 * import { RedisSessionStore } from "portcullis/stores/redis";
 *
 * const handler = newHandler(app.fetch, {
 *   session: sessions({
 *     store: new RedisSessionStore({ client: redis }), // shared by every instance
 *     idleTimeoutMs: 15 * 60_000,
 *     sameSite: "Strict",
 *   }),
 *   authorization,
 * });
 * ```
 */
export interface SessionOptions {
  /**
   * Where sessions live; use a shared store, such as `RedisSessionStore`,
   * behind a load balancer.
   *
   * @default a new `MemorySessionStore()` (one process only)
   */
  readonly store?: SessionStore | undefined;
  /**
   * Cookie name. Browsers refuse `__Host-` cookies without `Secure`, hence
   * the other name when `secure` is off.
   *
   * @default "__Host-portcullis-session" when `secure`, else "portcullis-session"
   */
  readonly cookieName?: string | undefined;
  /**
   * `Secure` attribute; turn off only for plain-HTTP development on localhost.
   *
   * @default true
   */
  readonly secure?: boolean | undefined;
  /**
   * `SameSite` attribute.
   *
   * @default "Lax"
   */
  readonly sameSite?: "Lax" | "Strict" | undefined;
  /**
   * A signed-in session unused this long (ms) is over, enforced server-side.
   *
   * @default 1_800_000 (30 minutes)
   */
  readonly idleTimeoutMs?: number | undefined;
  /**
   * A stored session nobody is signed in to (data an application saved for a
   * visitor) unused this long (ms) is over. Never longer than `idleTimeoutMs`.
   *
   * @default 900_000 (15 minutes), or `idleTimeoutMs` when that is shorter
   */
  readonly anonymousIdleTimeoutMs?: number | undefined;
  /**
   * A session older than this (ms) is over however busy it is.
   *
   * @default 28_800_000 (8 hours)
   */
  readonly absoluteTimeoutMs?: number | undefined;
  /**
   * How often (ms) a request refreshes the last-access time in the store.
   *
   * @default min(60_000, anonymousIdleTimeoutMs / 4)
   */
  readonly touchIntervalMs?: number | undefined;
  /**
   * Longest wait for one store call (read, refresh, save, delete), in ms; past
   * it the request answers 503. The built-in `MemorySessionStore` answers at
   * once and is not timed.
   *
   * @default 1000
   */
  readonly storeTimeoutMs?: number | undefined;
  /**
   * Told about every store failure and timeout (the request then answers 503).
   * Throttled so an outage does not flood the log.
   *
   * @default console.error, at most once every 10 s
   */
  readonly onStoreError?: ((error: unknown) => void) | undefined;
  /**
   * Clock, for tests.
   *
   * @default Date.now
   */
  readonly now?: (() => number) | undefined;
}

/**
 * Session lookup (chain leg 4): reads the session cookie, loads the session,
 * enforces both timeouts, and binds the `Session` and its principal to the
 * request. A missing, malformed or expired cookie means a fresh session
 * without an id; a well-formed id with nothing stored is kept as the id of an
 * empty, anonymous session (it keys CSRF tokens). Nothing is written until
 * `await session.save()`. A store that fails or stalls answers 503; a `Cookie`
 * header longer than `MAX_COOKIE_HEADER_LENGTH` answers 431.
 */
export function sessions(options: SessionOptions = {}): Middleware {
  rejectUnknownKeys("sessions", options, [
    "store",
    "cookieName",
    "secure",
    "sameSite",
    "idleTimeoutMs",
    "anonymousIdleTimeoutMs",
    "absoluteTimeoutMs",
    "touchIntervalMs",
    "storeTimeoutMs",
    "onStoreError",
    "now",
  ]);
  const secure = options.secure ?? true;
  const cookieName =
    options.cookieName ?? (secure ? "__Host-portcullis-session" : "portcullis-session");
  const attributes: CookieAttributes = {
    secure,
    httpOnly: true,
    sameSite: options.sameSite ?? "Lax",
    path: "/",
  };
  const problem = validateCookie(cookieName, attributes);
  if (problem !== undefined) throw new InvalidOptionsError(`sessions: ${problem}`);
  if (
    options.sameSite !== undefined &&
    options.sameSite !== "Lax" &&
    options.sameSite !== "Strict"
  ) {
    throw new InvalidOptionsError('sessions: sameSite must be "Lax" or "Strict"');
  }
  const idleTimeoutMs = positive("idleTimeoutMs", options.idleTimeoutMs ?? 30 * 60_000);
  const anonymousIdleTimeoutMs = Math.min(
    idleTimeoutMs,
    positive("anonymousIdleTimeoutMs", options.anonymousIdleTimeoutMs ?? 15 * 60_000),
  );
  const absoluteTimeoutMs = positive(
    "absoluteTimeoutMs",
    options.absoluteTimeoutMs ?? 8 * 60 * 60_000,
  );
  const touchIntervalMs = positive(
    "touchIntervalMs",
    options.touchIntervalMs ?? Math.min(60_000, anonymousIdleTimeoutMs / 4),
  );
  const storeTimeoutMs = timeoutOption("sessions", "storeTimeoutMs", options.storeTimeoutMs, 1000);
  const store = options.store ?? new MemorySessionStore();
  for (const method of ["get", "create", "update", "touch", "delete"] as const) {
    if (typeof store?.[method] !== "function")
      throw new InvalidOptionsError(
        `sessions: store must implement SessionStore (get, create, update, touch, delete); ${method} is missing`,
      );
  }
  if (options.onStoreError !== undefined && typeof options.onStoreError !== "function")
    throw new InvalidOptionsError("sessions: onStoreError must be a function");
  const report = options.onStoreError ?? throttledConsole("session store failed");
  const now = options.now ?? Date.now;
  const clearCookie = serializeCookie(cookieName, "", { ...attributes, maxAge: 0 });
  // The built-in memory store answers within the call: no timer for it.
  const timed = Object.getPrototypeOf(store) !== MemorySessionStore.prototype;

  const runtime: SessionRuntime = {
    store,
    now,
    idleTimeoutMs,
    anonymousIdleTimeoutMs,
    absoluteTimeoutMs,
    call: storeCaller({ what: "the session store", timeoutMs: storeTimeoutMs, report, timed }),
    // The outbox is made only when a cookie is actually set: most requests set none.
    setCookie: (request, id) => {
      if (id !== undefined && secure) warnIfDropped(request);
      outboxOf(request).setCookie(
        id === undefined ? clearCookie : serializeCookie(cookieName, id, attributes),
      );
    },
    secure,
  };

  return directLeg((next) => (request, ...rest) => {
    const header = request.headers.get("cookie");
    // Beyond the bound, answering is better than reading no cookie: that would sign the user out silently.
    if (header !== null && header.length > MAX_COOKIE_HEADER_LENGTH) return cookieTooLarge();
    let loaded: Session | Promise<Session>;
    try {
      loaded = load(runtime, request, readCookie(header, cookieName), touchIntervalMs);
    } catch {
      return unavailable();
    }
    if (loaded instanceof Promise)
      return loaded.then(
        (session) => withSession(session, request, rest, next),
        () => unavailable(),
      );
    return withSession(loaded, request, rest, next);
  });
}

/** Binds the session and runs the rest of the chain; a store failure further in is a 503. */
function withSession(
  session: Session,
  request: Request,
  rest: unknown[],
  next: FetchHandler,
): Response | Promise<Response> {
  bindValue(request, SESSION, session);
  const auth = session.authentication;
  if (auth !== undefined) bindAuthentication(request, auth);
  let answer: Response | Promise<Response>;
  try {
    answer = next(request, ...rest);
  } catch (error) {
    return finish(request, failedFurtherIn(error));
  }
  return onAnswer(
    answer,
    (response) => finish(request, response),
    (error) => finish(request, failedFurtherIn(error)),
  );
}

/** A save or destroy deeper in the chain found the store down: 503, not 500. */
function failedFurtherIn(error: unknown): Response {
  if (!(error instanceof StoreUnavailableError)) throw error;
  return unavailable();
}

/** The answer with the cookie a leg or the route queued. */
function finish(request: Request, response: Response): Response {
  return existingOutbox(request)?.drainIntoResponse(response) ?? response;
}

/** The request's session; within the call when the built-in memory store holds it. */
function load(
  runtime: SessionRuntime,
  request: Request,
  id: string | undefined,
  touchIntervalMs: number,
): Session | Promise<Session> {
  if (id === undefined) return new Session(runtime, request);
  // Only well-formed ids reach the store: garbage never costs a lookup.
  if (!SESSION_ID.test(id)) {
    runtime.setCookie(request, undefined);
    return new Session(runtime, request);
  }
  const { store, call } = runtime;
  // A replaced `get` (a test's spy, a wrapper) goes the way of any other store.
  if (store instanceof MemorySessionStore && store.get === MEMORY_GET) {
    let record: SessionRecord | undefined;
    try {
      record = getNow(store, id);
    } catch (error) {
      return call(() => Promise.reject(error)); // reported and answered as any store failure
    }
    return resume(runtime, request, id, record, touchIntervalMs);
  }
  return call(() => store.get(id)).then((record) =>
    resume(runtime, request, id, record, touchIntervalMs),
  );
}

/** The session for what the store answered; a promise only when it has to write. */
function resume(
  runtime: SessionRuntime,
  request: Request,
  id: string,
  record: SessionRecord | undefined,
  touchIntervalMs: number,
): Session | Promise<Session> {
  // Nothing stored: the id still keys CSRF tokens, and carries no principal.
  if (record === undefined) return new Session(runtime, request, id);
  const at = runtime.now();
  const idle =
    record.principal === undefined ? runtime.anonymousIdleTimeoutMs : runtime.idleTimeoutMs;
  if (at - record.lastAccessAt >= idle || at - record.createdAt >= runtime.absoluteTimeoutMs) {
    return expire(runtime, request, id);
  }
  if (at - record.lastAccessAt >= touchIntervalMs) return touch(runtime, request, id, record, at);
  return new Session(runtime, request, id, record);
}

async function expire(runtime: SessionRuntime, request: Request, id: string): Promise<Session> {
  const { store, call } = runtime;
  await call(() => store.delete(id));
  runtime.setCookie(request, undefined);
  return new Session(runtime, request);
}

async function touch(
  runtime: SessionRuntime,
  request: Request,
  id: string,
  record: SessionRecord,
  at: number,
): Promise<Session> {
  const { store, call } = runtime;
  const ttl = ttlOf(runtime, record.principal, record.createdAt, at);
  // Refreshed only if still there: a logout that ran since the read stays done.
  if (!(await call(() => store.touch(id, at, ttl)))) return new Session(runtime, request, id);
  return new Session(runtime, request, id, record);
}

function unavailable(): Response {
  return problemResponse(503, { detail: "Sessions are unavailable; try again later." });
}

function cookieTooLarge(): Response {
  return problemResponse(431, {
    title: "Request Header Fields Too Large",
    detail: `The Cookie header is longer than ${MAX_COOKIE_HEADER_LENGTH} bytes; clear this site's cookies.`,
  });
}

/**
 * The origin for which browsers drop a `Secure` cookie set in answer to
 * `request`: plain HTTP to a host that is not loopback, with no proxy saying
 * the browser used HTTPS (`X-Forwarded-Proto: https`, `Forwarded: proto=https`).
 */
function droppingOrigin(request: object): URL | undefined {
  const url = (request as Request).url;
  if (typeof url !== "string" || !url.startsWith("http:")) return undefined;
  const headers = (request as Request).headers;
  const forwarded = `${headers?.get("x-forwarded-proto") ?? ""},${headers?.get("forwarded") ?? ""}`;
  if (/(^|[\s,;=])https\b/i.test(forwarded)) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  return isLoopback(parsed.hostname) ? undefined : parsed;
}

/** Browsers drop a `Secure` cookie set over plain HTTP, except on loopback: the sign-in then seems to do nothing. */
function warnIfDropped(request: object): void {
  const dropped = droppingOrigin(request);
  if (dropped === undefined) return;
  warnOnce(
    "PORTCULLIS_SECURE_COOKIE_OVER_HTTP",
    `a Secure session cookie was set on a plain-HTTP request for ${dropped.hostname}: browsers drop it, so sign-in seems to do nothing. Serve HTTPS (behind a TLS proxy, let it send X-Forwarded-Proto), or use sessions({ secure: false }) for local development only.`,
  );
}

/**
 * Outside production, why `request` came without the session it needed: its
 * session cookie is `Secure` and this is plain HTTP to a host that is not
 * loopback, where browsers drop such cookies. `undefined` when that is not the
 * case, and always in production. For the pages that refuse such a request.
 */
export function droppedCookieNote(request: Request): string | undefined {
  const session = sessionFrom(request);
  if (session === undefined || session.fromCookie || !secureCookie(session)) return undefined;
  const dropped = droppingOrigin(request);
  if (dropped === undefined || inProduction()) return undefined;
  return `Your browser sent no session cookie: the session cookie is Secure, and browsers drop Secure cookies on plain HTTP (${dropped.origin}). Serve HTTPS, or use sessions({ secure: false }) for local development only. (Shown because NODE_ENV is not "production".)`;
}

function isLoopback(host: string): boolean {
  return (
    host === "localhost" ||
    host.endsWith(".localhost") ||
    host === "[::1]" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
  );
}

function positive(name: string, value: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0)
    throw new InvalidOptionsError(`sessions: ${name} must be a positive number`);
  return value;
}
