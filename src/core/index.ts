/**
 * The building blocks for writing legs and adapters: the principal and context keys, the
 * response outbox, cookie, path, pattern and problem-details helpers, and the typed errors.
 *
 * @module portcullis/core
 */
export {
  ANONYMOUS,
  AUTHENTICATION,
  AUTHORIZATION_VERIFIED,
  type Authentication,
  authenticationFrom,
  bindAuthentication,
  createAuthentication,
  ENDPOINT_AUTHENTICATES,
  isAuthenticated,
  mustAuthentication,
} from "./authentication.ts";
export { readAtMost } from "./body.ts";
export {
  addChallenge,
  CHALLENGES,
  DEFAULT_CHALLENGE,
  forbiddenResponse,
  quotedString,
  unauthorizedResponse,
} from "./challenge.ts";
export {
  addressNetwork,
  bunClientAddress,
  CLIENT_ADDRESS,
  type ClientAddressFunction,
  type ClientAddressOptions,
  checkClientAddressOptions,
  clientAddress,
  clientAddressOf,
  denoClientAddress,
  formatAddress,
  nodeServerClientAddress,
  normalizeAddress,
  type ParsedAddress,
  PEER_ADDRESS,
  parseAddress,
  peerAddress,
  resolveClientAddress,
  workersClientAddress,
} from "./client-address.ts";
export {
  bindContext,
  bindValue,
  boundContext,
  Context,
  type ContextKey,
  type ContextSource,
  contextFrom,
  createContextKey,
} from "./context.ts";
export {
  type CookieAttributes,
  MAX_COOKIE_HEADER_LENGTH,
  readCookie,
  serializeCookie,
  validateCookie,
} from "./cookie.ts";
export { base64url, fromBase64url, randomToken } from "./encoding.ts";
export {
  AccessDeniedError,
  AuthenticationRequiredError,
  BodyReadError,
  ClientMetadataError,
  type ClientMetadataFailureReason,
  type DpopFailureReason,
  DpopNonceRequiredError,
  DpopProofInvalidError,
  type ErrorCode,
  InvalidOptionsError,
  isBodyReadError,
  isPortcullisError,
  type JwtFailureReason,
  JwtInvalidError,
  MissingPeerError,
  NoAuthenticationError,
  PortcullisError,
  type PortcullisErrors,
  StoreFullError,
  type StoreFullness,
  type StoreQuotaKind,
  StoreUnavailableError,
} from "./errors.ts";
export { type FetchHandler, type Handler, type Middleware, toHandler } from "./handler.ts";
export { rejectUnknownKeys } from "./options.ts";
export { existingOutbox, outboxOf, ResponseOutbox } from "./outbox.ts";
export {
  MATCH_PATH,
  MAX_PATH_LENGTH,
  matchPath,
  normalizePath,
  pathOfUrl,
  RAW_PATH,
  refusedPathResponse,
} from "./path.ts";
export {
  internalErrorResponse,
  type ProblemInit,
  problemResponse,
  reportError,
} from "./problem.ts";
export { sameOriginPath } from "./redirect.ts";
export { setIfAbsent, withHeaders } from "./response.ts";
export { timingSafeEqual } from "./timing-safe.ts";
export {
  onWarning,
  type PortcullisWarning,
  resetWarnings,
  type WarningCode,
  type WarningListener,
} from "./warning.ts";
