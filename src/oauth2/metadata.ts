import type { Handler } from "../core/handler.ts";
import { refuseOtherMethods } from "../core/http-method.ts";
import type { KeySet } from "../jwt/index.ts";

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
  /** RFC 9449 §5.1: the algorithms DPoP proofs may be signed with, when the token endpoint checks them. */
  readonly dpop_signing_alg_values_supported?: readonly string[];
}

/** What the metadata document is made from: every URL is built from the issuer, never from a request. */
export interface MetadataSource {
  readonly issuer: string;
  readonly paths: {
    readonly token: string;
    readonly deviceAuthorization: string;
    readonly jwks?: string;
  };
  readonly grantTypes: readonly string[];
  readonly publicClients: boolean;
  /** Published as `scopes_supported` when the scope policy is a list. */
  readonly scopes?: readonly string[];
  /** Published as `dpop_signing_alg_values_supported` when DPoP is on. */
  readonly dpopAlgorithms?: readonly string[];
}

/** The RFC 8414 document, frozen. */
export function authorizationServerMetadata(source: MetadataSource): AuthorizationServerMetadata {
  const origin = new URL(source.issuer).origin;
  const url = (path: string) => new URL(path, origin).href;
  const { paths } = source;
  return Object.freeze({
    issuer: source.issuer,
    token_endpoint: url(paths.token),
    device_authorization_endpoint: url(paths.deviceAuthorization),
    ...(paths.jwks === undefined ? {} : { jwks_uri: url(paths.jwks) }),
    grant_types_supported: [...source.grantTypes],
    token_endpoint_auth_methods_supported: [
      "client_secret_basic",
      "client_secret_post",
      ...(source.publicClients ? ["none"] : []),
    ],
    response_types_supported: [],
    ...(source.scopes === undefined ? {} : { scopes_supported: [...source.scopes] }),
    ...(source.dpopAlgorithms === undefined
      ? {}
      : { dpop_signing_alg_values_supported: [...source.dpopAlgorithms] }),
  });
}

/** RFC 8414 §3: the well-known segment goes between the host and the issuer's path. */
export function wellKnownPath(issuer: URL): string {
  const tail = issuer.pathname === "/" ? "" : issuer.pathname.replace(/\/$/, "");
  return `/.well-known/oauth-authorization-server${tail}`;
}

const READ_METHODS = ["GET", "HEAD"];

/** `GET` the metadata document; it changes only with the configuration, so caches may keep it an hour. */
export function metadataEndpoint(metadata: AuthorizationServerMetadata): Handler {
  return publishedDocument(JSON.stringify(metadata), "application/json", 3600);
}

/** `GET` the JWKS of `keys`, read each time so a rotation shows within the cache lifetime. */
export function jwksEndpoint(keys: KeySet): Handler {
  return publishedDocument(() => JSON.stringify(keys.jwks()), "application/jwk-set+json", 300);
}

function publishedDocument(
  body: string | (() => string),
  contentType: string,
  maxAgeSeconds: number,
): Handler {
  return async (request) => {
    const refused = refuseOtherMethods(request, READ_METHODS);
    if (refused !== undefined) return refused;
    const text = request.method === "HEAD" ? null : typeof body === "string" ? body : body();
    return new Response(text, {
      headers: { "content-type": contentType, "cache-control": `public, max-age=${maxAgeSeconds}` },
    });
  };
}
