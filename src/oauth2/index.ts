/**
 * The OAuth 2.0 device authorization grant (RFC 8628) with RFC 6749 client
 * authentication and token responses, RFC 8414 metadata and RFC 9728
 * protected resource metadata, and Client ID Metadata Documents fetched under
 * an SSRF guard. It knows clients, device codes and an access-token issuer
 * callback; it never knows agents.
 *
 * @module portcullis/oauth2
 */

export {
  ClientMetadataError,
  type ClientMetadataFailureReason,
  StoreFullError,
} from "../core/errors.ts";
export {
  type CodeQuotaOptions,
  type RefreshQuotaOptions,
  SPENT_TOKENS_KEPT,
} from "../core/store-quotas.ts";
export { isPublicAddress } from "./address-guard.ts";
export {
  type ApprovalFormOptions,
  type ApprovalMessages,
  approvalFormHandler,
  approvalPage,
  approverOf,
  type DeviceApproveAction,
  type DeviceApproveResult,
} from "./approval-form.ts";
export {
  type AuthorizationCodeRecord,
  type AuthorizationCodeStore,
  type CodeRedemption,
  MemoryAuthorizationCodeStore,
  type MemoryAuthorizationCodeStoreOptions,
} from "./authorization-code-store.ts";
export {
  type AuthorizationRefusal,
  type AuthorizationRequest,
  type AuthorizationRequestPolicy,
  asksNoPage,
  authorizationRedirect,
  checkAuthorizationRequest,
  type Prompt,
  requestAfterSignIn,
} from "./authorization-request.ts";
export {
  type AccessTokenIssuer,
  type AuthorizationCodeOptions,
  type AuthorizationServer,
  type AuthorizationServerMetadata,
  type AuthorizationServerOptions,
  type AuthorizationServerPaths,
  authorizationServer,
  type ClientCredentialsHandler,
  type ClientCredentialsRequest,
  type CodeGrantIssue,
  clientMetadataDocumentsOption,
  type DeviceAuthorizationListener,
  type DeviceGrant,
  type IssuedToken,
  refreshTokenTtlOption,
  type TokenEndpointDpop,
} from "./authorization-server.ts";
export {
  authenticateClient,
  type ClientAuthentication,
  type ClientAuthenticationMethod,
  parseBasicClient,
  verifyClientSecret,
} from "./client-authentication.ts";
export { clientsWithMetadataDocuments } from "./client-lookup.ts";
export {
  type ClientMetadata,
  type ClientMetadataDocuments,
  type ClientMetadataDocumentsOptions,
  type ClientMetadataFetch,
  type ClientMetadataLookup,
  type ClientMetadataPriority,
  type ClientMetadataRequest,
  type ClientMetadataResolve,
  checkClientMetadata,
  clientMetadataDocuments,
  MAX_CLIENT_ID_URL_LENGTH,
  parseClientIdUrl,
} from "./client-metadata-document.ts";
export {
  checkDynamicRegistrationOptions,
  checkRegistrationMetadata,
  type DynamicRegistrationOptions,
  type DynamicRegistrationSettings,
  type RegisteredMetadata,
  type RegistrationBudget,
  type RegistrationEndpointOptions,
  registrationEndpoint,
} from "./client-registration.ts";
export {
  ALL_GRANT_TYPES,
  type ClientKind,
  type ClientRegistration,
  type ClientStore,
  DEVICE_CODE_GRANT,
  type GrantType,
  generateClientSecret,
  hashClientSecret,
  MemoryClientStore,
  type MemoryClientStoreOptions,
  type OAuthClient,
} from "./clients.ts";
export { issueAuthorizationCode } from "./code-grants.ts";
export { type DeviceApproveOptions, deviceApproveHandler } from "./device-approve.ts";
export {
  DeviceAuthorizationService,
  type DeviceAuthorizationServiceOptions,
  type PollResult,
  SLOW_DOWN_MS,
  type UserCodeAttemptOptions,
  type UserCodeOutcome,
  userCodeHash,
} from "./device-authorization.ts";
export {
  type CreateOutcome,
  type DecideOutcome,
  type Decision,
  type DeviceCodeRecord,
  type DeviceCodeStatus,
  type DeviceCodeStore,
  MemoryDeviceCodeStore,
  type MemoryDeviceCodeStoreOptions,
  type PollOutcome,
} from "./device-code-store.ts";
export {
  type ProtectedResourceMetadata,
  type ProtectedResourceSource,
  protectedResourceMetadata,
  protectedResourceMetadataEndpoint,
  protectedResourceMetadataUrl,
} from "./metadata.ts";
export { type OAuthParameters, readOAuthParameters } from "./parameters.ts";
export { isCodeChallenge, isCodeVerifier } from "./pkce.ts";
export {
  isRedirectUri,
  matchRedirectUri,
  type RedirectUriOptions,
  type RedirectUriPolicy,
  redirectUriPolicy,
} from "./redirect-uri.ts";
export {
  MemoryRefreshTokenStore,
  type MemoryRefreshTokenStoreOptions,
  type RefreshRotation,
  type RefreshTokenRecord,
  type RefreshTokenStore,
} from "./refresh-token-store.ts";
export {
  clientsWithRegistrations,
  MemoryRegisteredClientStore,
  type MemoryRegisteredClientStoreOptions,
  REGISTERED_CLIENT_PREFIX,
  type RegisteredClientStore,
} from "./registered-clients.ts";
export type { ScopePolicy } from "./scope.ts";
export { formatUserCode, normalizeUserCode, USER_CODE_ALPHABET } from "./user-code.ts";
export {
  type DeviceAuthorizationResponseBody,
  noStoreJson,
  type OAuthErrorCode,
  type OAuthFailure,
  oauthError,
  type TokenResponseBody,
} from "./wire.ts";
