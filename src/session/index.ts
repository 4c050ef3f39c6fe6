export { SESSION, Session, sessionFrom } from "./session.ts";
export {
  MemorySessionStore,
  type MemorySessionStoreOptions,
  type SessionRecord,
  type SessionStore,
} from "./session-store.ts";
export { type SessionOptions, sessions } from "./sessions.ts";
