import { bindAuthentication } from "../core/authentication.ts";
import { bindValue } from "../core/context.ts";
import {
  type CookieAttributes,
  readCookie,
  serializeCookie,
  validateCookie,
} from "../core/cookie.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Middleware } from "../core/handler.ts";
import { existingOutbox, outboxOf } from "../core/outbox.ts";
import { problemResponse } from "../core/problem.ts";
import { SESSION, SESSION_ID, Session, type SessionRuntime } from "./session.ts";
import { MemorySessionStore, type SessionStore } from "./store.ts";

export interface SessionOptions {
  /** Where sessions live. Default: a `MemorySessionStore` (one process only). */
  readonly store?: SessionStore;
  /**
   * Cookie name. Default `"__Host-portcullis-session"` when `secure`, else
   * `"portcullis-session"` (browsers refuse `__Host-` cookies without `Secure`).
   */
  readonly cookieName?: string;
  /** `Secure` attribute. Default `true`; turn off only for plain-HTTP development on localhost. */
  readonly secure?: boolean;
  /** `SameSite` attribute. Default `"Lax"`. */
  readonly sameSite?: "Lax" | "Strict";
  /** A session unused this long is over, enforced server-side. Default 30 minutes. */
  readonly idleTimeoutMs?: number;
  /** A session older than this is over however busy it is. Default 8 hours. */
  readonly absoluteTimeoutMs?: number;
  /** How often a request refreshes the last-access time in the store. Default min(60 s, idle / 4). */
  readonly touchIntervalMs?: number;
  /** Clock, for tests. Default `Date.now`. */
  readonly now?: () => number;
}

/**
 * Session lookup (chain leg 4): reads the session cookie, loads the session,
 * enforces both timeouts, and binds the `Session` and its principal to the
 * request. A missing, malformed, unknown or expired cookie means a fresh,
 * unsaved session; nothing is written until `await session.save()`.
 */
export function sessions(options: SessionOptions = {}): Middleware {
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
  const absoluteTimeoutMs = positive(
    "absoluteTimeoutMs",
    options.absoluteTimeoutMs ?? 8 * 60 * 60_000,
  );
  const touchIntervalMs = positive(
    "touchIntervalMs",
    options.touchIntervalMs ?? Math.min(60_000, idleTimeoutMs / 4),
  );
  const store = options.store ?? new MemorySessionStore();
  if (
    typeof store.get !== "function" ||
    typeof store.set !== "function" ||
    typeof store.delete !== "function"
  ) {
    throw new InvalidOptionsError("sessions: store must implement get, set and delete");
  }
  const now = options.now ?? Date.now;
  const clearCookie = serializeCookie(cookieName, "", { ...attributes, maxAge: 0 });

  const runtime: SessionRuntime = {
    store,
    now,
    idleTimeoutMs,
    absoluteTimeoutMs,
    // The outbox is made only when a cookie is actually set: most requests set none.
    setCookie: (request, id) =>
      outboxOf(request).setCookie(
        id === undefined ? clearCookie : serializeCookie(cookieName, id, attributes),
      ),
  };

  return (next) =>
    async (request, ...rest) => {
      const id = readCookie(request.headers.get("cookie"), cookieName);
      let session: Session;
      try {
        session = await load(runtime, request, id, touchIntervalMs);
      } catch {
        return problemResponse(503, { detail: "Sessions are unavailable." });
      }
      bindValue(request, SESSION, session);
      const auth = session.authentication;
      if (auth !== undefined) bindAuthentication(request, auth);
      const response = await next(request, ...rest);
      return existingOutbox(request)?.drainIntoResponse(response) ?? response;
    };
}

async function load(
  runtime: SessionRuntime,
  request: Request,
  id: string | undefined,
  touchIntervalMs: number,
): Promise<Session> {
  // Only well-formed ids reach the store: garbage never costs a lookup.
  if (id === undefined || !SESSION_ID.test(id)) {
    if (id !== undefined) runtime.setCookie(request, undefined);
    return new Session(runtime, request);
  }
  const record = await runtime.store.get(id);
  const at = runtime.now();
  if (record === undefined) {
    runtime.setCookie(request, undefined);
    return new Session(runtime, request);
  }
  if (
    at - record.lastAccessAt >= runtime.idleTimeoutMs ||
    at - record.createdAt >= runtime.absoluteTimeoutMs
  ) {
    await runtime.store.delete(id);
    runtime.setCookie(request, undefined);
    return new Session(runtime, request);
  }
  if (at - record.lastAccessAt >= touchIntervalMs) {
    const ttl = Math.min(runtime.idleTimeoutMs, record.createdAt + runtime.absoluteTimeoutMs - at);
    await runtime.store.set(id, { ...record, lastAccessAt: at }, ttl);
  }
  return new Session(runtime, request, id, record);
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0)
    throw new InvalidOptionsError(`sessions: ${name} must be a positive number`);
  return value;
}
