import { InvalidOptionsError } from "../core/errors.ts";
import {
  bodyLimitOption,
  functionOptions,
  integerOption,
  mountPathOption,
  rejectUnknownKeys,
  timeoutOption,
} from "../core/options.ts";
import { httpsUrlOption, issuerUrlOption } from "../core/url.ts";
import type { DpopNonces, DpopProofVerifier, KeySet, VerifiedDpopProof } from "../jwt/index.ts";
import type { AuthorizationCodeStore } from "./authorization-code-store.ts";
import type { ClientMetadataDocuments } from "./client-metadata-document.ts";
import type { ClientStore, OAuthClient } from "./clients.ts";
import type { DeviceAuthorizationService } from "./device-authorization.ts";
import { wellKnownPath } from "./metadata.ts";
import type { RefreshTokenStore } from "./refresh-token-store.ts";
import { checkScopePolicy, type ScopePolicy } from "./scope.ts";
import type { OAuthFailure } from "./wire.ts";

/** A token minted by the application for a grant. */
export interface IssuedToken {
  readonly accessToken: string;
  /** Seconds. */
  readonly expiresIn: number;
  /** The scope granted, when it differs from what was asked for or to state it. */
  readonly scope?: readonly string[];
  /**
   * `"DPoP"` for a token bound to the proof's key (RFC 9449 §5).
   *
   * @default "Bearer"
   */
  readonly tokenType?: "Bearer" | "DPoP";
}

/** An approved device authorization, handed to the issuer once. */
export interface DeviceGrant {
  readonly client: OAuthClient;
  /** The principal bound when the human approved. */
  readonly subject: string;
  readonly scope: readonly string[];
  /** The human who approved. */
  readonly approvedBy: string;
  /** The hash of the user code that was approved (see `userCodeHash`). */
  readonly userCodeHash: string;
  /** The RFC 7638 thumbprint of the key the poll's DPoP proof was made with, if it carried one. */
  readonly jkt?: string;
  /** RFC 8707 `resource` of the poll: one of the server's `protectedResources`, if named. */
  readonly resource?: string;
}

/** Mints the token for an approved device authorization, or refuses with an OAuth error. */
export type AccessTokenIssuer = (grant: DeviceGrant) => Promise<IssuedToken | OAuthFailure>;

/** A `client_credentials` request from an authenticated client. */
export interface ClientCredentialsRequest {
  readonly client: OAuthClient;
  /** The scope asked for; `undefined` when the request named none. */
  readonly scope?: readonly string[];
  /** RFC 8707 `resource`: the one absolute URL the token is for, if named. */
  readonly resource?: string;
  /** The RFC 7638 thumbprint of the key the request's DPoP proof was made with, if it carried one. */
  readonly jkt?: string;
}

export type ClientCredentialsHandler = (
  request: ClientCredentialsRequest,
) => Promise<IssuedToken | OAuthFailure>;

/** Told after a device authorization began, before the client hears of it. */
export type DeviceAuthorizationListener = (event: {
  readonly client: OAuthClient;
  readonly scope: readonly string[];
  /** As shown, `XXXX-XXXX`. */
  readonly userCode: string;
  /** Milliseconds since the epoch. */
  readonly expiresAt: number;
  readonly request: Request;
}) => Promise<void>;

/**
 * DPoP (RFC 9449) at the token endpoint: how proofs are checked and their
 * ids kept, given by the application (`agentAuth` gives its own).
 */
export interface TokenEndpointDpop {
  /** Checks a proof; rejects with `DpopProofInvalidError`, or `DpopNonceRequiredError` (see `dpopProofVerifier`). */
  readonly verifyProof: DpopProofVerifier;
  /**
   * Records a verified proof's id; `false` when it was recorded before (a
   * replay). A failing store throws `StoreUnavailableError` (answered 503).
   */
  readonly consumeProof: (proof: VerifiedDpopProof) => Promise<boolean>;
  /**
   * Server nonces: every answer to a request with a proof carries the current one.
   *
   * @default none
   */
  readonly nonces?: DpopNonces;
  /**
   * Every token request must carry a proof.
   *
   * @default false
   */
  readonly required?: boolean;
  /** The proof algorithms accepted, published as `dpop_signing_alg_values_supported`. */
  readonly algorithms: readonly string[];
}

export interface AuthorizationServerPaths {
  /** @default "/oauth/device_authorization" */
  readonly deviceAuthorization?: string;
  /** @default "/oauth/token" */
  readonly token?: string;
  /** @default "/.well-known/jwks.json"; served only when `keys` is given */
  readonly jwks?: string;
}

/**
 * Options of `authorizationServer`.
 *
 * @example
 * ```ts
 * import { generateKeySet, jwtSigner } from "portcullis/jwt";
 * import {
 *   authorizationServer,
 *   DeviceAuthorizationService,
 *   MemoryClientStore,
 * } from "portcullis/oauth2";
 *
 * const issuer = "https://api.example.com";
 * const keys = await generateKeySet();
 * const sign = jwtSigner({ keys, typ: "example-access+jwt", issuer, ttlSeconds: 600 });
 * const oauth = authorizationServer({
 *   issuer,
 *   service: new DeviceAuthorizationService({ verificationUri: `${issuer}/device` }),
 *   clients: new MemoryClientStore(),
 *   keys, // publishes the JWKS at /.well-known/jwks.json
 *   scopes: ["profile", "playback"],
 *   issueAccessToken: async ({ subject, scope }) => {
 *     const { token } = await sign({ subject, audience: `${issuer}/api`, claims: { scope: scope.join(" ") } });
 *     return { accessToken: token, expiresIn: 600 };
 *   },
 * });
 * ```
 */
export interface AuthorizationServerOptions {
  /** The issuer identifier: an https URL (http only on loopback); every published URL is built from it. */
  readonly issuer: string;
  readonly service: DeviceAuthorizationService;
  readonly clients: ClientStore;
  /** The scope names a client may ask for. */
  readonly scopes: ScopePolicy;
  /**
   * Mints the token when an approved device code is polled. Its
   * `invalid_target` and `invalid_dpop_proof` answers give the approval back
   * (the client's next poll may retry it); any other error spends it.
   */
  readonly issueAccessToken: AccessTokenIssuer;
  /**
   * Serves `grant_type=client_credentials`.
   *
   * @default none — that grant is unsupported (`unsupported_grant_type`)
   */
  readonly clientCredentials?: ClientCredentialsHandler;
  /**
   * Runs after `begin`, e.g. to record what the client asked for.
   *
   * @default none — nothing runs
   */
  readonly onDeviceAuthorization?: DeviceAuthorizationListener;
  /**
   * DPoP proofs at the token endpoint; a token request with a valid proof is
   * handed the proof's key thumbprint (`jkt`) to bind its token to.
   *
   * @default none — a `DPoP` header is ignored, and clients registered with `dpopBoundAccessTokens` get no token
   */
  readonly dpop?: TokenEndpointDpop;
  /**
   * The authorization-code grant with PKCE, and rotating refresh tokens.
   *
   * @default none — those grants are unsupported, and the metadata names no authorization endpoint
   */
  readonly authorizationCode?: AuthorizationCodeOptions;
  /**
   * The protected resources (absolute URLs) whose tokens this server issues,
   * published as the metadata's `protected_resources` (RFC 9728 §4); a
   * device-code poll may name one of them as `resource` (RFC 8707), any other
   * is `invalid_target`.
   *
   * @default none — the metadata names no resource, and a poll may name none
   */
  readonly protectedResources?: readonly string[];
  /**
   * Public keys published at the JWKS path.
   *
   * @default none — no JWKS endpoint and no `jwks_uri` in the metadata
   */
  readonly keys?: KeySet;
  /**
   * Accept clients with no secret (a bare `client_id`).
   *
   * @default false
   */
  readonly publicClients?: boolean;
  /**
   * Where each endpoint is served, on the issuer's origin; only the ones given change.
   *
   * @default { deviceAuthorization: "/oauth/device_authorization", token: "/oauth/token", jwks: "/.well-known/jwks.json" }
   */
  readonly paths?: AuthorizationServerPaths;
  /**
   * Largest form body read, in bytes (512 or more; 413 beyond).
   *
   * @default 8192
   */
  readonly maxBodyBytes?: number;
  /**
   * A client store call not answered within this many ms fails (503).
   *
   * @default 1000
   */
  readonly storeTimeoutMs?: number;
  /**
   * Told about unexpected failures (answered 500).
   *
   * @default console.error
   */
  readonly onError?: (error: unknown, request: Request) => void;
}

/** The options of `authorizationServer`, checked: what its endpoints are built from. */
export interface ServerSettings {
  readonly issuer: string;
  readonly service: DeviceAuthorizationService;
  readonly clients: ClientStore;
  /** Whether a client may ask for a scope name. */
  readonly allowed: (name: string) => boolean;
  /** The scope names, when the policy is a list (published as `scopes_supported`). */
  readonly scopeNames?: readonly string[];
  readonly issueAccessToken: AccessTokenIssuer;
  readonly clientCredentials?: ClientCredentialsHandler;
  readonly onDeviceAuthorization?: DeviceAuthorizationListener;
  readonly keys?: KeySet;
  readonly dpop?: DpopTokenSettings;
  readonly protectedResources?: readonly string[];
  readonly authorizationCode?: CodeGrantSettings;
  readonly publicClients: boolean;
  readonly maxBodyBytes: number;
  readonly storeTimeoutMs: number;
  readonly onError?: (error: unknown, request: Request) => void;
  readonly paths: ServerPaths;
}

/** `TokenEndpointDpop` checked, with the token endpoint's URL every proof's `htu` must name. */
export interface DpopTokenSettings {
  readonly verifyProof: DpopProofVerifier;
  readonly consumeProof: (proof: VerifiedDpopProof) => Promise<boolean>;
  readonly nonces?: DpopNonces;
  readonly required: boolean;
  readonly algorithms: readonly string[];
  readonly tokenUrl: string;
}

/** Where each endpoint is mounted (paths on the issuer's origin). */
export interface ServerPaths {
  readonly metadata: string;
  readonly deviceAuthorization: string;
  readonly token: string;
  readonly jwks?: string;
}

/** What the issuer of the authorization-code grants is asked to mint a token from. */
export interface CodeGrantIssue {
  readonly client: OAuthClient;
  /** The grant the human's consent made. */
  readonly grantId: string;
  /** What the token may carry: the code's or refresh token's scope, or narrower. */
  readonly scope: readonly string[];
  /** RFC 8707 `resource` the token is for. */
  readonly resource: string;
  /** The RFC 7638 thumbprint of the request's DPoP key, if it carried a proof. */
  readonly jkt?: string;
  /** The grant the request used: the first token of a code, or a refresh. */
  readonly grantType: "authorization_code" | "refresh_token";
}

/**
 * The authorization-code grant (RFC 6749 §4.1 with PKCE) and rotating refresh
 * tokens at the token endpoint; the authorization endpoint that makes the
 * codes is the application's (`agentAuth` has one).
 *
 * @example
 * ```ts
 * import {
 *   type AuthorizationCodeOptions,
 *   MemoryAuthorizationCodeStore,
 *   MemoryRefreshTokenStore,
 * } from "portcullis/oauth2";
 *
 * const authorizationCode: AuthorizationCodeOptions = {
 *   codes: new MemoryAuthorizationCodeStore(),
 *   refreshTokens: new MemoryRefreshTokenStore(),
 *   issue: async ({ grantId, scope }) => ({ accessToken: await mint(grantId, scope), expiresIn: 120 }),
 *   revokeGrant: async (grantId) => grants.revoke(grantId),
 * };
 * ```
 */
export interface AuthorizationCodeOptions {
  readonly codes: AuthorizationCodeStore;
  readonly refreshTokens: RefreshTokenStore;
  /** Mints the access token; answers `invalid_grant` once the grant is revoked or expired. */
  readonly issue: (input: CodeGrantIssue) => Promise<IssuedToken | OAuthFailure>;
  /** Ends the grant behind a code redeemed twice or a refresh token used twice (RFC 9700 §2.2.2, §4.14). */
  readonly revokeGrant: (grantId: string) => Promise<void>;
  /**
   * Refresh token lifetime, in seconds: how long a rotation family lives, whatever its rotations.
   *
   * @default 2_592_000 (30 days)
   */
  readonly refreshTokenTtlSeconds?: number;
  /**
   * Where the authorization endpoint is served (published as `authorization_endpoint`).
   *
   * @default "/oauth/authorize"
   */
  readonly authorizationPath?: string;
  /**
   * Client ids that are https URLs are Client ID Metadata Documents, read
   * with this (from `clientMetadataDocuments()`); the metadata says so. Such
   * a client is public with the authorization-code grants at most, so the
   * token and device authorization endpoints refuse anything else without a
   * fetch, and the token endpoint reads the document only once the code or
   * refresh token it was given is found issued to that client.
   *
   * @default none — https client ids are looked up in `clients` like any other
   */
  readonly clientMetadataDocuments?: ClientMetadataDocuments;
  /**
   * Where RFC 7591 dynamic registration is served, published as
   * `registration_endpoint` (the endpoint is the application's: `agentAuth` has one).
   *
   * @default none — no dynamic registration
   */
  readonly registrationPath?: string;
  /**
   * Clock, in milliseconds since the epoch.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/** `AuthorizationCodeOptions` checked. */
export interface CodeGrantSettings {
  readonly codes: AuthorizationCodeStore;
  readonly refreshTokens: RefreshTokenStore;
  readonly issue: AuthorizationCodeOptions["issue"];
  readonly revokeGrant: AuthorizationCodeOptions["revokeGrant"];
  readonly refreshTokenTtlSeconds: number;
  readonly authorizationPath: string;
  readonly clientMetadataDocuments?: ClientMetadataDocuments;
  readonly registrationPath?: string;
  readonly now: () => number;
}

const OPTION_NAMES = [
  "issuer",
  "service",
  "clients",
  "scopes",
  "issueAccessToken",
  "clientCredentials",
  "onDeviceAuthorization",
  "keys",
  "dpop",
  "protectedResources",
  "authorizationCode",
  "publicClients",
  "paths",
  "maxBodyBytes",
  "storeTimeoutMs",
  "onError",
];

const WHERE = "authorizationServer";

/** Checks every option of `authorizationServer` once, naming the key the caller wrote. */
export function checkServerOptions(options: AuthorizationServerOptions): ServerSettings {
  rejectUnknownKeys(WHERE, options, OPTION_NAMES);
  const issuer = issuerUrlOption(WHERE, options.issuer);
  const service = options.service;
  if (typeof service?.begin !== "function" || typeof service.poll !== "function")
    throw new InvalidOptionsError(`${WHERE}: service must be a DeviceAuthorizationService`);
  clientStoreOption(WHERE, options.clients);
  const allowed = checkScopePolicy(WHERE, options.scopes);
  const callbacks = ["issueAccessToken", "clientCredentials", "onDeviceAuthorization", "onError"];
  functionOptions(WHERE, options, callbacks, ["issueAccessToken"]);
  keySetOption(WHERE, options.keys);
  const publicClients = options.publicClients ?? false;
  if (typeof publicClients !== "boolean")
    throw new InvalidOptionsError(`${WHERE}: publicClients must be a boolean`);
  rejectUnknownKeys(`${WHERE}: paths`, options.paths, ["deviceAuthorization", "token", "jwks"]);
  const paths = serverPaths(WHERE, issuer, options.paths, options.keys !== undefined);
  const dpop =
    options.dpop === undefined
      ? undefined
      : dpopOption(options.dpop, new URL(paths.token, new URL(issuer).origin).href);
  return {
    issuer,
    service,
    clients: options.clients,
    allowed,
    ...(Array.isArray(options.scopes) ? { scopeNames: [...options.scopes] } : {}),
    issueAccessToken: options.issueAccessToken,
    ...optional("clientCredentials", options.clientCredentials),
    ...optional("onDeviceAuthorization", options.onDeviceAuthorization),
    ...optional("keys", options.keys),
    ...optional("dpop", dpop),
    ...optional("protectedResources", protectedResourcesOption(options.protectedResources)),
    ...optional("authorizationCode", codeGrantOption(options.authorizationCode)),
    ...optional("onError", options.onError),
    publicClients,
    maxBodyBytes: bodyLimitOption(WHERE, options.maxBodyBytes, 8192, 512),
    storeTimeoutMs: timeoutOption(WHERE, "storeTimeoutMs", options.storeTimeoutMs, 1000),
    paths,
  };
}

/** A refresh token lifetime in seconds: a minute to a year, 30 days by default. */
export function refreshTokenTtlOption(where: string, value: unknown): number {
  return integerOption(where, "refreshTokenTtlSeconds", value, 2_592_000, 60, 31_536_000);
}

function codeGrantOption(
  options: AuthorizationCodeOptions | undefined,
): CodeGrantSettings | undefined {
  if (options === undefined) return undefined;
  const where = `${WHERE}: authorizationCode`;
  if (typeof options !== "object" || options === null)
    throw new InvalidOptionsError(`${where} must be an object`);
  rejectUnknownKeys(where, options, [
    "codes",
    "refreshTokens",
    "issue",
    "revokeGrant",
    "refreshTokenTtlSeconds",
    "authorizationPath",
    "clientMetadataDocuments",
    "registrationPath",
    "now",
  ]);
  functionOptions(where, options, ["issue", "revokeGrant", "now"], ["issue", "revokeGrant"]);
  if (typeof options.codes?.redeem !== "function" || typeof options.codes.create !== "function")
    throw new InvalidOptionsError(`${where}: codes must be an AuthorizationCodeStore`);
  for (const method of ["create", "find", "rotate", "revokeFamily"] as const)
    if (typeof options.refreshTokens?.[method] !== "function")
      throw new InvalidOptionsError(`${where}: refreshTokens must be a RefreshTokenStore`);
  const documents = options.clientMetadataDocuments;
  clientMetadataDocumentsOption(where, documents);
  return {
    codes: options.codes,
    refreshTokens: options.refreshTokens,
    issue: options.issue,
    revokeGrant: options.revokeGrant,
    refreshTokenTtlSeconds: refreshTokenTtlOption(where, options.refreshTokenTtlSeconds),
    authorizationPath: mountPathOption(
      where,
      "authorizationPath",
      options.authorizationPath ?? "/oauth/authorize",
    ),
    ...(documents === undefined ? {} : { clientMetadataDocuments: documents }),
    ...(options.registrationPath === undefined
      ? {}
      : { registrationPath: mountPathOption(where, "registrationPath", options.registrationPath) }),
    now: options.now ?? Date.now,
  };
}

function protectedResourcesOption(value: unknown): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value))
    throw new InvalidOptionsError(`${WHERE}: protectedResources must be an array of URLs`);
  return Object.freeze(
    value.map((url, index) => httpsUrlOption(`${WHERE}: protectedResources[${index}]`, url)),
  );
}

// Never `none` nor a symmetric algorithm: a proof is worth only what its public key proves.
const ASYMMETRIC = /^(?:ES(?:256|384|512)|EdDSA|Ed25519|RS(?:256|384|512)|PS(?:256|384|512))$/;

function dpopOption(dpop: TokenEndpointDpop, tokenUrl: string): DpopTokenSettings {
  const where = `${WHERE}: dpop`;
  if (typeof dpop !== "object" || dpop === null)
    throw new InvalidOptionsError(`${where} must be an object`);
  rejectUnknownKeys(where, dpop, [
    "verifyProof",
    "consumeProof",
    "nonces",
    "required",
    "algorithms",
  ]);
  functionOptions(where, dpop, ["verifyProof", "consumeProof"], ["verifyProof", "consumeProof"]);
  if (dpop.nonces !== undefined && typeof dpop.nonces?.current !== "function")
    throw new InvalidOptionsError(`${where}: nonces must come from dpopNonces`);
  const required = dpop.required ?? false;
  if (typeof required !== "boolean")
    throw new InvalidOptionsError(`${where}: required must be a boolean`);
  const { algorithms } = dpop;
  if (
    !Array.isArray(algorithms) ||
    algorithms.length === 0 ||
    !algorithms.every((alg) => typeof alg === "string" && ASYMMETRIC.test(alg))
  )
    throw new InvalidOptionsError(`${where}: algorithms must list asymmetric JWS algorithms`);
  return Object.freeze({
    verifyProof: dpop.verifyProof,
    consumeProof: dpop.consumeProof,
    ...(dpop.nonces === undefined ? {} : { nonces: dpop.nonces }),
    required,
    algorithms: Object.freeze([...algorithms]),
    tokenUrl,
  });
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

export function clientStoreOption(where: string, clients: unknown): void {
  if (typeof (clients as ClientStore | undefined)?.get !== "function")
    throw new InvalidOptionsError(`${where}: clients must implement ClientStore`);
}

/** Throws unless `documents` is absent or came from `clientMetadataDocuments()`. */
export function clientMetadataDocumentsOption(where: string, documents: unknown): void {
  if (documents === undefined) return;
  const given = documents as Partial<ClientMetadataDocuments> | null;
  if (typeof given?.resolve !== "function" || !Number.isSafeInteger(given.timeoutMs))
    throw new InvalidOptionsError(
      `${where}: clientMetadataDocuments must come from clientMetadataDocuments()`,
    );
}

export function keySetOption(where: string, keys: unknown): void {
  if (keys !== undefined && typeof (keys as KeySet | null)?.jwks !== "function")
    throw new InvalidOptionsError(`${where}: keys must be a KeySet`);
}

/** The endpoint paths, defaults filled in; the JWKS path only when keys are published. */
export function serverPaths(
  where: string,
  issuer: string,
  paths: AuthorizationServerPaths | undefined,
  withJwks: boolean,
): ServerPaths {
  const checked = {
    metadata: wellKnownPath(new URL(issuer)),
    deviceAuthorization: mountPathOption(
      where,
      "paths.deviceAuthorization",
      paths?.deviceAuthorization ?? "/oauth/device_authorization",
    ),
    token: mountPathOption(where, "paths.token", paths?.token ?? "/oauth/token"),
    ...(withJwks
      ? { jwks: mountPathOption(where, "paths.jwks", paths?.jwks ?? "/.well-known/jwks.json") }
      : {}),
  };
  if (new Set(Object.values(checked)).size !== Object.keys(checked).length)
    throw new InvalidOptionsError(`${where}: two endpoints share a path`);
  return Object.freeze(checked);
}
