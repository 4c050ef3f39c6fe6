import { withDeadline } from "../core/deadline.ts";
import { ClientMetadataError, StoreUnavailableError } from "../core/errors.ts";
import type { ClientMetadataDocuments } from "./client-metadata-document.ts";
import type { ClientStore, GrantType, OAuthClient } from "./clients.ts";
import { isCodeChallenge } from "./pkce.ts";
import { matchRedirectUri } from "./redirect-uri.ts";
import { parseScope } from "./scope.ts";
import type { OAuthErrorCode } from "./wire.ts";

/**
 * An authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3, RFC 8707), checked
 * in the order that decides where its errors may go: until the client and its
 * redirect URI are known good, only to a page of the server's own (never a
 * redirect: that would be an open redirector); after, to the client's
 * redirect URI with `state` and `iss` (RFC 9207).
 */

/** A request every check passed. */
export interface AuthorizationRequest {
  readonly client: OAuthClient;
  /** The redirect URI exactly as the client sent it (a loopback one with its port). */
  readonly redirectUri: string;
  readonly codeChallenge: string;
  readonly scope: readonly string[];
  readonly resource: string;
  readonly state?: string;
}

/** Why a request is refused, and whether the client may be told through its redirect URI. */
export type AuthorizationRefusal =
  | {
      readonly redirect: false;
      readonly error: "invalid_request" | "invalid_client";
      readonly description: string;
    }
  | {
      readonly redirect: true;
      readonly redirectUri: string;
      readonly state?: string;
      readonly error: OAuthErrorCode;
      readonly description: string;
    };

/** What the checks need of the server. */
export interface AuthorizationRequestPolicy {
  readonly clients: ClientStore;
  readonly storeTimeoutMs: number;
  /** Whether a scope name may be asked for. */
  readonly allowed: (name: string) => boolean;
  /** The resources tokens may be asked for; the first when the request names none. */
  readonly resources: readonly string[];
}

const MAX_STATE_LENGTH = 2048;
const SINGLE = [
  "client_id",
  "redirect_uri",
  "response_type",
  "code_challenge",
  "code_challenge_method",
  "scope",
  "state",
  "resource",
];

/** Checks the query of an authorization request. */
export async function checkAuthorizationRequest(
  query: URLSearchParams,
  policy: AuthorizationRequestPolicy,
): Promise<AuthorizationRequest | AuthorizationRefusal> {
  const page = (error: "invalid_request" | "invalid_client", description: string) =>
    ({ redirect: false, error, description }) as const;
  // 1. The client and where it may be sent: any doubt here is answered on a page.
  for (const name of ["client_id", "redirect_uri"])
    if (query.getAll(name).length > 1) return page("invalid_request", `${name} is repeated`);
  const clientId = query.get("client_id");
  if (clientId === null || clientId === "") return page("invalid_request", "client_id is missing");
  const client = await lookUp(policy, clientId);
  if (client === undefined) return page("invalid_client", "the client is unknown");
  const given = query.get("redirect_uri");
  if (given === null || given === "") return page("invalid_request", "redirect_uri is missing");
  if (matchRedirectUri(client.redirectUris ?? [], given) === undefined)
    return page("invalid_request", "redirect_uri is not registered for this client");
  // 2. The rest goes back to the client, with its state.
  const state = query.get("state") ?? undefined;
  const back = (error: OAuthErrorCode, description: string): AuthorizationRefusal => ({
    redirect: true,
    redirectUri: given,
    ...(state === undefined || state.length > MAX_STATE_LENGTH ? {} : { state }),
    error,
    description,
  });
  for (const name of SINGLE)
    if (query.getAll(name).length > 1) return back("invalid_request", `${name} is repeated`);
  if (state !== undefined && state.length > MAX_STATE_LENGTH)
    return back("invalid_request", "state is too long");
  if (query.get("response_type") !== "code")
    return back("unsupported_response_type", "response_type must be code");
  if (!client.grantTypes.includes("authorization_code" as GrantType))
    return back("unauthorized_client", "this client may not use the authorization code grant");
  const challenge = query.get("code_challenge");
  if (query.get("code_challenge_method") !== "S256" || !isCodeChallenge(challenge))
    return back(
      "invalid_request",
      "PKCE is required: code_challenge with code_challenge_method S256",
    );
  const scope = parseScope(query.get("scope") ?? undefined, policy.allowed);
  if (scope === undefined) return back("invalid_scope", "the scope names something unknown");
  const resource = query.get("resource") ?? policy.resources[0];
  if (resource === undefined || !policy.resources.includes(resource))
    return back("invalid_target", "resource is not a protected resource of this server");
  return {
    client,
    redirectUri: given,
    codeChallenge: challenge,
    scope,
    resource,
    ...(state === undefined ? {} : { state }),
  };
}

async function lookUp(
  policy: AuthorizationRequestPolicy,
  clientId: string,
): Promise<OAuthClient | undefined> {
  try {
    return await withDeadline(
      () => policy.clients.get(clientId),
      policy.storeTimeoutMs,
      "the client store",
    );
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw error;
    throw new StoreUnavailableError("the client store failed or did not answer in time", {
      cause: error,
    });
  }
}

/**
 * The redirect answering an authorization request: `params` added to the
 * client's redirect URI (its own query kept), with `state` and `iss`.
 */
export function authorizationRedirect(
  redirectUri: string,
  issuer: string,
  params: Readonly<Record<string, string>>,
  state: string | undefined,
): Response {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.append(name, value);
  if (state !== undefined) url.searchParams.append("state", state);
  url.searchParams.append("iss", issuer);
  return new Response(null, {
    status: 303,
    headers: { location: url.href, "cache-control": "no-store", "referrer-policy": "no-referrer" },
  });
}

/**
 * A client store that also knows clients by their Client ID Metadata
 * Document: an https client id is looked up there (a public client with the
 * document's redirect URIs), any other in `clients`. A document that cannot
 * be used makes an unknown client; a fetch refused for load is a store failure.
 */
export function clientsWithMetadataDocuments(
  clients: ClientStore,
  documents: ClientMetadataDocuments,
): ClientStore {
  return {
    async get(clientId) {
      if (!clientId.startsWith("https://")) return clients.get(clientId);
      try {
        const document = await documents.resolve(clientId);
        if (document.tokenEndpointAuthMethod !== "none") return undefined;
        const grantTypes = (["authorization_code", "refresh_token"] as const).filter((grant) =>
          document.grantTypes.includes(grant),
        );
        if (!grantTypes.includes("authorization_code")) return undefined;
        return Object.freeze({
          clientId: document.clientId,
          kind: "oauth2_client",
          public: true,
          grantTypes: Object.freeze(grantTypes),
          redirectUris: document.redirectUris,
          ...(document.name === undefined ? {} : { name: document.name }),
        });
      } catch (error) {
        if (error instanceof ClientMetadataError && error.reason === "busy")
          throw new StoreUnavailableError("too many client metadata documents are being fetched", {
            cause: error,
          });
        if (error instanceof ClientMetadataError) return undefined;
        throw error;
      }
    },
  };
}
