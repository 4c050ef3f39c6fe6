import { StoreUnavailableError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { refuseOtherMethods } from "../core/http-method.ts";
import { reportError } from "../core/problem.ts";
import { authenticateClient } from "./client-authentication.ts";
import {
  type ClientSource,
  lookUpClient,
  namesMetadataDocument,
  unreadDocumentClient,
} from "./client-lookup.ts";
import type { OAuthClient } from "./clients.ts";
import { isFailure, type OAuthParameters, readOAuthParameters } from "./parameters.ts";
import type { ServerSettings } from "./server-options.ts";
import { oauthError } from "./wire.ts";

/** A request to a client-authenticated endpoint, its form read and its client known. */
export interface ClientCall {
  readonly request: Request;
  readonly params: OAuthParameters;
  /**
   * The client. One named by its metadata document is not looked up here
   * (`unread`): `client` is then only what its id says, a public client with
   * the authorization-code grants at most, until the token endpoint reads the
   * document for a request that can succeed.
   */
  readonly client: OAuthClient;
  /** Whether `client` is a metadata document client whose document was not read. */
  readonly unread: boolean;
}

const POST_ONLY = ["POST"];

/**
 * An endpoint of RFC 6749 §2.3 shape, as named steps: `POST` only, the form
 * read, the client authenticated, then `serve`; whatever throws is answered by
 * `failureResponse`.
 */
export function clientEndpoint(
  settings: ServerSettings,
  serve: (call: ClientCall) => Promise<Response>,
): Handler {
  const authenticate = clientAuthentication(settings);
  return async (request) => {
    const refused = refuseOtherMethods(request, POST_ONLY);
    if (refused !== undefined) return refused;
    try {
      const call = await authenticate(request);
      return call instanceof Response ? call : await serve(call);
    } catch (error) {
      return failureResponse(error, request, settings.onError);
    }
  };
}

/** Where the server's endpoints look clients up. */
export function clientSource(settings: ServerSettings): ClientSource {
  const documents = settings.authorizationCode?.clientMetadataDocuments;
  return {
    clients: settings.clients,
    storeTimeoutMs: settings.storeTimeoutMs,
    ...(documents === undefined ? {} : { clientMetadataDocuments: documents }),
  };
}

/**
 * Reads the form and authenticates the client; an OAuth error response when
 * either fails. A metadata document client is not fetched: anyone may post
 * any https URL here, and most such requests can never succeed.
 */
function clientAuthentication(
  settings: ServerSettings,
): (request: Request) => Promise<ClientCall | Response> {
  const { maxBodyBytes, publicClients } = settings;
  const source = clientSource(settings);
  const lookup = async (clientId: string) =>
    namesMetadataDocument(source, clientId)
      ? unreadDocumentClient(clientId)
      : lookUpClient(source, clientId, "anonymous");
  return async (request) => {
    const params = await readOAuthParameters(request, maxBodyBytes);
    if (isFailure(params))
      return oauthError(params.error, params.description, { status: params.status });
    const result = await authenticateClient(request, params, lookup, publicClients);
    if (!result.ok) return oauthError(result.failure.error, result.failure.description);
    const unread = namesMetadataDocument(source, result.client.clientId);
    return { request, params, client: result.client, unread };
  };
}

/**
 * The answer to an endpoint that threw: a failing store is 503
 * `temporarily_unavailable`, anything else 500 `server_error`, reported, its
 * text never sent.
 */
export function failureResponse(
  error: unknown,
  request: Request,
  onError: ((error: unknown, request: Request) => void) | undefined,
): Response {
  if (error instanceof StoreUnavailableError)
    return oauthError("temporarily_unavailable", "try again shortly");
  reportError(onError, error, request);
  return oauthError("server_error", "the server could not complete the request");
}
