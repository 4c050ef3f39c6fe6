import type { Handler } from "../core/handler.ts";
import { refuseOtherMethods } from "../core/http-method.ts";
import type { KeySet } from "../jwt/index.ts";

/** RFC 8414 authorization server metadata. */
export interface AuthorizationServerMetadata {
  readonly issuer: string;
  readonly authorization_endpoint?: string;
  readonly token_endpoint: string;
  readonly device_authorization_endpoint: string;
  readonly jwks_uri?: string;
  readonly grant_types_supported: readonly string[];
  readonly token_endpoint_auth_methods_supported: readonly string[];
  readonly response_types_supported: readonly string[];
  readonly scopes_supported?: readonly string[];
  /** RFC 9449 §5.1: the algorithms DPoP proofs may be signed with, when the token endpoint checks them. */
  readonly dpop_signing_alg_values_supported?: readonly string[];
  /** RFC 9728 §4: the protected resources this server issues tokens for. */
  readonly protected_resources?: readonly string[];
  /** RFC 7636: `["S256"]` where the authorization-code grant is served. */
  readonly code_challenge_methods_supported?: readonly string[];
  /** RFC 9207: every authorization response names the issuer. */
  readonly authorization_response_iss_parameter_supported?: boolean;
  /** Client ids may be Client ID Metadata Document URLs. */
  readonly client_id_metadata_document_supported?: boolean;
  /** RFC 7591: where clients register themselves, when dynamic registration is on. */
  readonly registration_endpoint?: string;
  /** RFC 8414 §2: the answer comes in the query only (its default lists `fragment` too). */
  readonly response_modes_supported?: readonly string[];
  /**
   * OpenID Connect Discovery §3's names, in the OAuth metadata registry:
   * request objects (RFC 9101) are refused, by value and by reference (the
   * latter's default is `true`, so it is said).
   */
  readonly request_parameter_supported?: boolean;
  readonly request_uri_parameter_supported?: boolean;
  /** The `prompt` values the authorization endpoint serves (IANA OAuth metadata registry). */
  readonly prompt_values_supported?: readonly string[];
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
  /** Published as `protected_resources` (absolute URLs). */
  readonly protectedResources?: readonly string[];
  /** The authorization endpoint's path, when the authorization-code grant is served. */
  readonly authorization?: {
    readonly path: string;
    readonly clientMetadataDocuments: boolean;
    /** The registration endpoint's path, when dynamic registration is on. */
    readonly registrationPath?: string;
  };
}

/** The RFC 8414 document, frozen. */
export function authorizationServerMetadata(source: MetadataSource): AuthorizationServerMetadata {
  const origin = new URL(source.issuer).origin;
  const url = (path: string) => new URL(path, origin).href;
  const { paths } = source;
  const { authorization } = source;
  return Object.freeze({
    issuer: source.issuer,
    ...(authorization === undefined ? {} : { authorization_endpoint: url(authorization.path) }),
    token_endpoint: url(paths.token),
    device_authorization_endpoint: url(paths.deviceAuthorization),
    ...(paths.jwks === undefined ? {} : { jwks_uri: url(paths.jwks) }),
    grant_types_supported: [...source.grantTypes],
    token_endpoint_auth_methods_supported: [
      "client_secret_basic",
      "client_secret_post",
      ...(source.publicClients ? ["none"] : []),
    ],
    response_types_supported: authorization === undefined ? [] : ["code"],
    ...(source.scopes === undefined ? {} : { scopes_supported: [...source.scopes] }),
    ...(source.dpopAlgorithms === undefined
      ? {}
      : { dpop_signing_alg_values_supported: [...source.dpopAlgorithms] }),
    ...(source.protectedResources === undefined
      ? {}
      : { protected_resources: [...source.protectedResources] }),
    ...(authorization === undefined
      ? {}
      : {
          code_challenge_methods_supported: ["S256"],
          authorization_response_iss_parameter_supported: true,
          response_modes_supported: ["query"],
          request_parameter_supported: false,
          request_uri_parameter_supported: false,
          prompt_values_supported: ["none", "login", "consent"],
          ...(authorization.clientMetadataDocuments
            ? { client_id_metadata_document_supported: true }
            : {}),
          ...(authorization.registrationPath === undefined
            ? {}
            : { registration_endpoint: url(authorization.registrationPath) }),
        }),
  });
}

/** RFC 8414 §3: the well-known segment goes between the host and the issuer's path. */
export function wellKnownPath(issuer: URL): string {
  const tail = issuer.pathname === "/" ? "" : issuer.pathname.replace(/\/$/, "");
  return `/.well-known/oauth-authorization-server${tail}`;
}

/** RFC 9728 protected resource metadata. */
export interface ProtectedResourceMetadata {
  readonly resource: string;
  readonly authorization_servers: readonly string[];
  readonly scopes_supported?: readonly string[];
  readonly bearer_methods_supported: readonly string[];
  readonly resource_name?: string;
  /** RFC 9449 §5.2: the algorithms DPoP proofs may be signed with at this resource. */
  readonly dpop_signing_alg_values_supported?: readonly string[];
  /** RFC 9449 §5.2: whether this resource accepts only DPoP-bound tokens. */
  readonly dpop_bound_access_tokens_required?: boolean;
}

/** What a protected resource's metadata is made from: configuration only, never a request. */
export interface ProtectedResourceSource {
  /** The resource identifier: its absolute URL. */
  readonly resource: string;
  /** The issuer identifiers of the authorization servers whose tokens it accepts. */
  readonly authorizationServers: readonly string[];
  readonly scopes?: readonly string[];
  readonly name?: string;
  /** Present when the resource accepts DPoP-bound tokens. */
  readonly dpop?: { readonly algorithms: readonly string[]; readonly required: boolean };
}

/** The RFC 9728 document, frozen; tokens come only in `Authorization` (never a form or the query). */
export function protectedResourceMetadata(
  source: ProtectedResourceSource,
): ProtectedResourceMetadata {
  return Object.freeze({
    resource: source.resource,
    authorization_servers: [...source.authorizationServers],
    ...(source.scopes === undefined ? {} : { scopes_supported: [...source.scopes] }),
    bearer_methods_supported: ["header"],
    ...(source.name === undefined ? {} : { resource_name: source.name }),
    ...(source.dpop === undefined
      ? {}
      : {
          dpop_signing_alg_values_supported: [...source.dpop.algorithms],
          dpop_bound_access_tokens_required: source.dpop.required,
        }),
  });
}

/**
 * RFC 9728 §3.1: the well-known segment goes between the host and the
 * resource's path (a terminating slash dropped); the query, if any, stays.
 */
export function protectedResourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  const tail = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  return new URL(`/.well-known/oauth-protected-resource${tail}${url.search}`, url.origin).href;
}

const READ_METHODS = ["GET", "HEAD"];

/**
 * `GET` the metadata document; it changes only with the configuration, so
 * caches may keep it an hour, and any page may read it (a browser-based
 * client discovers from its own origin).
 */
export function metadataEndpoint(metadata: AuthorizationServerMetadata): Handler {
  return publishedDocument(JSON.stringify(metadata), "application/json", 3600, true);
}

/** `GET` an RFC 9728 document; like RFC 8414 metadata, public and readable from any origin. */
export function protectedResourceMetadataEndpoint(metadata: ProtectedResourceMetadata): Handler {
  return publishedDocument(JSON.stringify(metadata), "application/json", 3600, true);
}

/** `GET` the JWKS of `keys`, read each time so a rotation shows within the cache lifetime. */
export function jwksEndpoint(keys: KeySet): Handler {
  return publishedDocument(() => JSON.stringify(keys.jwks()), "application/jwk-set+json", 300);
}

function publishedDocument(
  body: string | (() => string),
  contentType: string,
  maxAgeSeconds: number,
  anyOrigin = false,
): Handler {
  return async (request) => {
    const refused = refuseOtherMethods(request, READ_METHODS);
    if (refused !== undefined) return refused;
    const text = request.method === "HEAD" ? null : typeof body === "string" ? body : body();
    return new Response(text, {
      headers: {
        "content-type": contentType,
        "cache-control": `public, max-age=${maxAgeSeconds}`,
        // Configuration only, no credentials: nothing a page could not learn otherwise.
        ...(anyOrigin ? { "access-control-allow-origin": "*" } : {}),
      },
    });
  };
}
