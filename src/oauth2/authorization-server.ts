import type { Handler } from "../core/handler.ts";
import { pathOfUrl } from "../core/path.ts";
import { deviceAuthorizationEndpoint } from "./device-authorization-endpoint.ts";
import {
  type AuthorizationServerMetadata,
  authorizationServerMetadata,
  jwksEndpoint,
  metadataEndpoint,
} from "./metadata.ts";
import {
  type AuthorizationServerOptions,
  checkServerOptions,
  type ServerSettings,
} from "./server-options.ts";
import { tokenEndpoint, tokenGrants } from "./token-endpoint.ts";

export type { AuthorizationServerMetadata } from "./metadata.ts";
export type {
  AccessTokenIssuer,
  AuthorizationCodeOptions,
  AuthorizationServerOptions,
  AuthorizationServerPaths,
  ClientCredentialsHandler,
  ClientCredentialsRequest,
  CodeGrantIssue,
  DeviceAuthorizationListener,
  DeviceGrant,
  IssuedToken,
  TokenEndpointDpop,
} from "./server-options.ts";
export { clientMetadataDocumentsOption, refreshTokenTtlOption } from "./server-options.ts";

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

/**
 * The OAuth endpoints of the device flow: RFC 8628 device authorization, the
 * RFC 6749 token endpoint (device code, and `client_credentials` when a
 * handler is given), RFC 8414 metadata and the JWKS. Each is a plain
 * `Handler` to mount behind the chain.
 */
export function authorizationServer(options: AuthorizationServerOptions): AuthorizationServer {
  return assembleAuthorizationServer(checkServerOptions(options));
}

/** The endpoints, from options already checked (by `authorizationServer` or an assembler above it). */
export function assembleAuthorizationServer(settings: ServerSettings): AuthorizationServer {
  const { paths, keys } = settings;
  const grants = tokenGrants(settings);
  const metadata = authorizationServerMetadata({
    issuer: settings.issuer,
    paths,
    grantTypes: [...grants.keys()],
    publicClients: settings.publicClients,
    ...(settings.scopeNames === undefined ? {} : { scopes: settings.scopeNames }),
    ...(settings.dpop === undefined ? {} : { dpopAlgorithms: settings.dpop.algorithms }),
    ...(settings.protectedResources === undefined
      ? {}
      : { protectedResources: settings.protectedResources }),
    ...(settings.authorizationCode === undefined
      ? {}
      : {
          authorization: {
            path: settings.authorizationCode.authorizationPath,
            clientMetadataDocuments:
              settings.authorizationCode.clientMetadataDocuments !== undefined,
            ...(settings.authorizationCode.registrationPath === undefined
              ? {}
              : { registrationPath: settings.authorizationCode.registrationPath }),
          },
        }),
  });
  const endpoints = {
    metadataEndpoint: metadataEndpoint(metadata),
    deviceAuthorizationEndpoint: deviceAuthorizationEndpoint(settings),
    tokenEndpoint: tokenEndpoint(settings, grants),
    ...(keys === undefined ? {} : { jwksEndpoint: jwksEndpoint(keys) }),
  };
  const byPath = new Map<string, Handler>([
    [paths.metadata, endpoints.metadataEndpoint],
    [paths.deviceAuthorization, endpoints.deviceAuthorizationEndpoint],
    [paths.token, endpoints.tokenEndpoint],
  ]);
  if (paths.jwks !== undefined && endpoints.jwksEndpoint !== undefined)
    byPath.set(paths.jwks, endpoints.jwksEndpoint);
  return Object.freeze({
    metadata,
    paths,
    ...endpoints,
    route: async (request: Request) => byPath.get(pathOfUrl(request.url))?.(request),
  });
}
