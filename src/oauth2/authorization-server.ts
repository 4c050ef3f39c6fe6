import { withDeadline } from "../core/deadline.ts";
import { InvalidOptionsError, StoreUnavailableError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { rejectUnknownKeys, timeoutOption } from "../core/options.ts";
import { pathOfUrl } from "../core/path.ts";
import { reportError } from "../core/problem.ts";
import type { KeySet } from "../jwt/keys.ts";
import { authenticateClient } from "./client-authentication.ts";
import { type ClientStore, DEVICE_CODE_GRANT, type OAuthClient } from "./clients.ts";
import { absoluteUrl, type DeviceAuthorizationService } from "./device-authorization.ts";
import { failureResponse, methodNotAllowed } from "./endpoint-support.ts";
import { isFailure, type OAuthParameters, readOAuthParameters } from "./parameters.ts";
import { checkScopePolicy, parseScope, type ScopePolicy } from "./scope.ts";
import { noStoreJson, type OAuthFailure, oauthError, type TokenResponseBody } from "./wire.ts";

/** A token minted by the application for a grant. */
export interface IssuedToken {
  readonly accessToken: string;
  /** Seconds. */
  readonly expiresIn: number;
  /** The scope granted, when it differs from what was asked for or to state it. */
  readonly scope?: readonly string[];
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
  /** Mints the token when an approved device code is polled. */
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

/** RFC 8414 authorization server metadata. */
export interface AuthorizationServerMetadata {
  readonly issuer: string;
  readonly token_endpoint: string;
  readonly device_authorization_endpoint: string;
  readonly jwks_uri?: string;
  readonly grant_types_supported: readonly string[];
  readonly token_endpoint_auth_methods_supported: readonly string[];
  readonly response_types_supported: readonly string[];
  readonly scopes_supported?: readonly string[];
}

export interface AuthorizationServer {
  readonly metadata: AuthorizationServerMetadata;
  /** Where each endpoint is mounted (paths on the issuer's origin). */
  readonly paths: {
    readonly metadata: string;
    readonly deviceAuthorization: string;
    readonly token: string;
    readonly jwks?: string;
  };
  readonly metadataEndpoint: Handler;
  readonly deviceAuthorizationEndpoint: Handler;
  readonly tokenEndpoint: Handler;
  readonly jwksEndpoint?: Handler;
  /** Serves every endpoint on its path; `undefined` for any other path. */
  readonly route: (request: Request) => Promise<Response | undefined>;
}

const PATH = /^\/(?:[A-Za-z0-9._~!$&'()*+,;=:@-]+\/?)*$/;

/**
 * The OAuth endpoints of the device flow: RFC 8628 device authorization, the
 * RFC 6749 token endpoint (device code, and `client_credentials` when a
 * handler is given), RFC 8414 metadata and the JWKS. Each is a plain
 * `Handler` to mount behind the chain.
 */
export function authorizationServer(options: AuthorizationServerOptions): AuthorizationServer {
  rejectUnknownKeys("authorizationServer", options, [
    "issuer",
    "service",
    "clients",
    "scopes",
    "issueAccessToken",
    "clientCredentials",
    "onDeviceAuthorization",
    "keys",
    "publicClients",
    "paths",
    "maxBodyBytes",
    "storeTimeoutMs",
    "onError",
  ]);
  const issuer = options.issuer;
  absoluteUrl("authorizationServer: issuer", issuer);
  const issuerUrl = new URL(issuer);
  if (issuerUrl.search !== "")
    throw new InvalidOptionsError("authorizationServer: issuer must have no query");
  const service = options.service;
  if (typeof service?.begin !== "function" || typeof service.poll !== "function")
    throw new InvalidOptionsError(
      "authorizationServer: service must be a DeviceAuthorizationService",
    );
  if (typeof options.clients?.get !== "function")
    throw new InvalidOptionsError("authorizationServer: clients must implement ClientStore");
  const allowed = checkScopePolicy("authorizationServer", options.scopes);
  for (const name of [
    "issueAccessToken",
    "clientCredentials",
    "onDeviceAuthorization",
    "onError",
  ] as const) {
    const value = options[name];
    if ((value !== undefined || name === "issueAccessToken") && typeof value !== "function")
      throw new InvalidOptionsError(`authorizationServer: ${name} must be a function`);
  }
  if (options.keys !== undefined && typeof options.keys.jwks !== "function")
    throw new InvalidOptionsError("authorizationServer: keys must be a KeySet");
  const publicClients = options.publicClients ?? false;
  if (typeof publicClients !== "boolean")
    throw new InvalidOptionsError("authorizationServer: publicClients must be a boolean");
  const maxBodyBytes = options.maxBodyBytes ?? 8192;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 512)
    throw new InvalidOptionsError(
      "authorizationServer: maxBodyBytes must be a whole number, 512 or more",
    );
  const timeoutMs = timeoutOption(
    "authorizationServer",
    "storeTimeoutMs",
    options.storeTimeoutMs,
    1000,
  );
  rejectUnknownKeys("authorizationServer: paths", options.paths, [
    "deviceAuthorization",
    "token",
    "jwks",
  ]);
  const paths = {
    metadata: wellKnownPath(issuerUrl),
    deviceAuthorization: path(
      "deviceAuthorization",
      options.paths?.deviceAuthorization ?? "/oauth/device_authorization",
    ),
    token: path("token", options.paths?.token ?? "/oauth/token"),
    ...(options.keys === undefined
      ? {}
      : { jwks: path("jwks", options.paths?.jwks ?? "/.well-known/jwks.json") }),
  };
  const onError = options.onError;
  const issueAccessToken = options.issueAccessToken;
  const clientCredentials = options.clientCredentials;
  const onDeviceAuthorization = options.onDeviceAuthorization;
  const clients = options.clients;

  const url = (p: string) => new URL(p, issuerUrl.origin).href;
  const grantTypes = [
    DEVICE_CODE_GRANT,
    ...(clientCredentials === undefined ? [] : ["client_credentials"]),
  ];
  const metadata: AuthorizationServerMetadata = Object.freeze({
    issuer,
    token_endpoint: url(paths.token),
    device_authorization_endpoint: url(paths.deviceAuthorization),
    ...(paths.jwks === undefined ? {} : { jwks_uri: url(paths.jwks) }),
    grant_types_supported: grantTypes,
    token_endpoint_auth_methods_supported: [
      "client_secret_basic",
      "client_secret_post",
      ...(publicClients ? ["none"] : []),
    ],
    response_types_supported: [],
    ...(Array.isArray(options.scopes) ? { scopes_supported: [...options.scopes] } : {}),
  });

  const lookup = (clientId: string) =>
    withDeadline(clients.get(clientId), timeoutMs, "the client store").catch((error) => {
      throw new StoreUnavailableError("the client store failed or did not answer in time", {
        cause: error,
      });
    });

  async function authenticated(
    request: Request,
  ): Promise<{ params: OAuthParameters; client: OAuthClient } | Response> {
    const params = await readOAuthParameters(request, maxBodyBytes);
    if (isFailure(params))
      return oauthError(params.error, params.description, { status: params.status });
    const result = await authenticateClient(request, params, lookup, publicClients);
    if (!result.ok) return oauthError(result.failure.error, result.failure.description);
    return { params, client: result.client };
  }

  const deviceAuthorizationEndpoint: Handler = async (request) => {
    if (request.method !== "POST") return methodNotAllowed("POST");
    try {
      const auth = await authenticated(request);
      if (auth instanceof Response) return auth;
      const { params, client } = auth;
      if (!client.grantTypes.includes(DEVICE_CODE_GRANT))
        return oauthError("unauthorized_client", "this client may not use the device flow");
      const scope = parseScope(params.get("scope"), allowed);
      if (scope === undefined)
        return oauthError("invalid_scope", "the scope names something unknown");
      const body = await service.begin(client.clientId, scope);
      if (onDeviceAuthorization !== undefined) {
        await onDeviceAuthorization({
          client,
          scope,
          userCode: body.user_code,
          // On the service's clock, which may not be the wall clock.
          expiresAt: service.now() + body.expires_in * 1000,
          request,
        });
      }
      return noStoreJson(body);
    } catch (error) {
      return failureResponse(error, request, onError);
    }
  };

  const tokenEndpoint: Handler = async (request) => {
    if (request.method !== "POST") return methodNotAllowed("POST");
    try {
      const auth = await authenticated(request);
      if (auth instanceof Response) return auth;
      const { params, client } = auth;
      const grantType = params.get("grant_type");
      if (grantType === undefined) return oauthError("invalid_request", "grant_type is missing");
      if (!grantTypes.includes(grantType))
        return oauthError("unsupported_grant_type", "this grant type is not supported");
      if (!client.grantTypes.includes(grantType as never))
        return oauthError("unauthorized_client", "this client may not use this grant type");
      if (grantType === DEVICE_CODE_GRANT) return await deviceCodeGrant(params, client, request);
      // Also for a client from a store of its own that lists the grant for a public client.
      if (client.public)
        return oauthError("invalid_client", "client_credentials needs client authentication");
      return await clientCredentialsGrant(params, client);
    } catch (error) {
      return failureResponse(error, request, onError);
    }
  };

  async function deviceCodeGrant(
    params: OAuthParameters,
    client: OAuthClient,
    request: Request,
  ): Promise<Response> {
    const deviceCode = params.get("device_code");
    if (deviceCode === undefined) return oauthError("invalid_request", "device_code is missing");
    const result = await service.poll(deviceCode, client.clientId);
    switch (result.outcome) {
      case "pending":
        return oauthError("authorization_pending", "the request has not been approved yet");
      case "slow_down":
        return oauthError(
          "slow_down",
          `polling too fast; wait ${result.intervalSeconds} seconds between polls`,
        );
      case "denied":
        return oauthError("access_denied", "the request was denied");
      case "expired":
        return oauthError("expired_token", "the device code has expired");
      case "invalid":
        return oauthError("invalid_grant", "the device code is invalid or was already used");
    }
    let issued: Awaited<ReturnType<typeof issueAccessToken>>;
    try {
      issued = await issueAccessToken({
        client,
        subject: result.subject,
        scope: result.scope,
        approvedBy: result.approvedBy,
        userCodeHash: result.userCodeHash,
      });
    } catch (error) {
      // The poll spent the approval; put it back so the retry the 503 invites can succeed.
      if (await service.release(deviceCode, client.clientId, result.consumedAt)) throw error;
      // Spent for good: a retry could only fail, so say so, and tell the operator why.
      if (!(error instanceof StoreUnavailableError)) reportError(onError, error, request);
      return oauthError(
        "expired_token",
        "the approval was lost to a server failure; start a new device authorization",
      );
    }
    return tokenResponse(issued, result.scope);
  }

  async function clientCredentialsGrant(
    params: OAuthParameters,
    client: OAuthClient,
  ): Promise<Response> {
    const scopeParam = params.get("scope");
    const scope = parseScope(scopeParam, allowed);
    if (scope === undefined)
      return oauthError("invalid_scope", "the scope names something unknown");
    const resource = params.get("resource");
    if (resource !== undefined && !isResource(resource))
      return oauthError("invalid_target", "resource must be one absolute URL without a fragment");
    const issued = await (clientCredentials as ClientCredentialsHandler)({
      client,
      ...(scopeParam === undefined ? {} : { scope }),
      ...(resource === undefined ? {} : { resource }),
    });
    return tokenResponse(issued, scope);
  }

  const metadataBody = JSON.stringify(metadata);
  const metadataEndpoint: Handler = async (request) => {
    if (request.method !== "GET" && request.method !== "HEAD") return methodNotAllowed("GET, HEAD");
    return new Response(request.method === "HEAD" ? null : metadataBody, {
      headers: { "content-type": "application/json", "cache-control": "public, max-age=3600" },
    });
  };

  const keys = options.keys;
  const jwksEndpoint: Handler | undefined =
    keys === undefined
      ? undefined
      : async (request) => {
          if (request.method !== "GET" && request.method !== "HEAD")
            return methodNotAllowed("GET, HEAD");
          return new Response(request.method === "HEAD" ? null : JSON.stringify(keys.jwks()), {
            headers: {
              "content-type": "application/jwk-set+json",
              "cache-control": "public, max-age=300",
            },
          });
        };

  const byPath = new Map<string, Handler>([
    [paths.metadata, metadataEndpoint],
    [paths.deviceAuthorization, deviceAuthorizationEndpoint],
    [paths.token, tokenEndpoint],
    ...(paths.jwks === undefined || jwksEndpoint === undefined
      ? []
      : ([[paths.jwks, jwksEndpoint]] as const)),
  ]);
  if (byPath.size !== Object.keys(paths).length)
    throw new InvalidOptionsError("authorizationServer: two endpoints share a path");

  return Object.freeze({
    metadata,
    paths: Object.freeze(paths),
    metadataEndpoint,
    deviceAuthorizationEndpoint,
    tokenEndpoint,
    ...(jwksEndpoint === undefined ? {} : { jwksEndpoint }),
    route: async (request: Request) => {
      const handler = byPath.get(pathOfUrl(request.url));
      return handler === undefined ? undefined : handler(request);
    },
  });
}

function tokenResponse(issued: IssuedToken | OAuthFailure, asked: readonly string[]): Response {
  if ("error" in issued) return oauthError(issued.error, issued.description);
  if (
    typeof issued?.accessToken !== "string" ||
    issued.accessToken === "" ||
    !Number.isSafeInteger(issued.expiresIn) ||
    issued.expiresIn < 1
  )
    throw new TypeError("the token issuer answered neither a token nor an OAuth error");
  const scope = issued.scope ?? asked;
  const body: TokenResponseBody = {
    access_token: issued.accessToken,
    token_type: "Bearer",
    expires_in: issued.expiresIn,
    ...(scope.length === 0 ? {} : { scope: scope.join(" ") }),
  };
  return noStoreJson(body);
}

function isResource(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return url.hash === "" && (url.protocol === "https:" || url.protocol === "http:");
}

/** RFC 8414 §3: the well-known segment goes between the host and the issuer's path. */
function wellKnownPath(issuer: URL): string {
  const tail = issuer.pathname === "/" ? "" : issuer.pathname.replace(/\/$/, "");
  return `/.well-known/oauth-authorization-server${tail}`;
}

function path(name: string, value: unknown): string {
  if (typeof value !== "string" || !PATH.test(value) || /\/\.{1,2}(\/|$)/.test(value))
    throw new InvalidOptionsError(`authorizationServer: paths.${name} must be an absolute path`);
  return value;
}
