export { type SessionOptions, sessions } from "./middleware.ts";
export { SESSION, Session, sessionFrom } from "./session.ts";
export {
  MemorySessionStore,
  type MemorySessionStoreOptions,
  type SessionRecord,
  type SessionStore,
} from "./store.ts";
