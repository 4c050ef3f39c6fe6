/**
 * The application API: `newHandler` and `newChain` (the security chain), its legs and guards,
 * sessions, login, CSRF, authorization rules, the errors and the client-address presets. Start
 * here; the other modules are for stores, adapters, agents and writing legs of your own.
 *
 * @module portcullis
 */
export * as authz from "./authz/index.ts";
export {
  type BrowserDenialOptions,
  browserDenials,
  isNavigation,
  newChain,
  newHandler,
  type SecurityOptions,
} from "./chain/index.ts";
// The application-facing core; the building blocks for writing legs and adapters
// (context keys, outbox, cookie and path helpers) are on `portcullis/core`.
export {
  AccessDeniedError,
  type Authentication,
  AuthenticationRequiredError,
  authenticationFrom,
  BodyReadError,
  bindAuthentication,
  bindValue,
  bunClientAddress,
  type ClientAddressFunction,
  type ClientAddressOptions,
  Context,
  type ContextKey,
  type ContextSource,
  contextFrom,
  createAuthentication,
  createContextKey,
  denoClientAddress,
  type ErrorCode,
  type FetchHandler,
  type Handler,
  InvalidOptionsError,
  isAuthenticated,
  isBodyReadError,
  isPortcullisError,
  type Middleware,
  mustAuthentication,
  NoAuthenticationError,
  nodeServerClientAddress,
  onWarning,
  PortcullisError,
  type PortcullisErrors,
  type PortcullisWarning,
  problemResponse,
  resetWarnings,
  StoreUnavailableError,
  sameOriginPath,
  type WarningCode,
  workersClientAddress,
} from "./core/index.ts";
export * from "./cors/index.ts";
export * from "./csrf/index.ts";
export * from "./headers/index.ts";
export * from "./login/index.ts";
export {
  type BasicAuthOptions,
  basicAuth,
  Chain,
  requireAuthenticated,
  requireAuthority,
  requireRole,
} from "./middleware/index.ts";
export {
  MemoryRateLimitStore,
  type MemoryRateLimitStoreOptions,
  type RateLimitAlgorithm,
  type RateLimitKey,
  type RateLimitLeg,
  type RateLimitOptions,
  type RateLimitPlacement,
  type RateLimitRule,
  type RateLimitStore,
  rateLimit,
} from "./ratelimit/index.ts";
export {
  MemorySessionStore,
  type MemorySessionStoreOptions,
  Session,
  type SessionOptions,
  type SessionRecord,
  type SessionStore,
  sessionFrom,
  sessions,
} from "./session/index.ts";
