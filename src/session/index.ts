/**
 * Server-side sessions: the `sessions` leg, the `Session` a request carries, and the
 * `SessionStore` interface with its bounded memory store.
 *
 * @module portcullis/session
 */
export { SESSION, Session, sessionFrom } from "./session.ts";
export {
  MemorySessionStore,
  type MemorySessionStoreOptions,
  type SessionRecord,
  type SessionStore,
} from "./session-store.ts";
export { type SessionOptions, sessions } from "./sessions.ts";
