import { withDeadline } from "../core/deadline.ts";
import { ClientMetadataError, StoreUnavailableError } from "../core/errors.ts";
import {
  type ClientMetadataDocuments,
  type ClientMetadataPriority,
  isMetadataDocumentClientId,
} from "./client-metadata-document.ts";
import type { ClientStore, GrantType, OAuthClient } from "./clients.ts";

/**
 * How the endpoints look a client up: in the client store, bounded by the
 * store timeout, or, for a client id that is an https URL while Client ID
 * Metadata Documents are on, by its document, bounded by the documents' own
 * time (a document may take seconds; a store call should not).
 */
export interface ClientSource {
  readonly clients: ClientStore;
  readonly storeTimeoutMs: number;
  /** Client ID Metadata Documents, when on. */
  readonly clientMetadataDocuments?: ClientMetadataDocuments;
}

/** The grants a metadata document client may be given: it has no secret, so no other. */
const DOCUMENT_GRANT_TYPES: readonly GrantType[] = Object.freeze([
  "authorization_code",
  "refresh_token",
]);

/** Whether `source` looks `clientId` up by fetching its metadata document. */
export function namesMetadataDocument(source: ClientSource, clientId: string): boolean {
  return source.clientMetadataDocuments !== undefined && isMetadataDocumentClientId(clientId);
}

/**
 * What a metadata document client is known to be before its document is
 * read: public, with the authorization-code grants at most. An endpoint holds
 * this in place of a lookup until the request shows it can succeed.
 */
export function unreadDocumentClient(clientId: string): OAuthClient {
  return Object.freeze({
    clientId,
    kind: "oauth2_client",
    public: true,
    grantTypes: DOCUMENT_GRANT_TYPES,
  });
}

/**
 * The client named `clientId`, or `undefined` when there is none (or its
 * document cannot be used). A store that fails or stalls, and a document
 * fetch refused for load or that timed out, throw `StoreUnavailableError`.
 */
export async function lookUpClient(
  source: ClientSource,
  clientId: string,
  priority: ClientMetadataPriority,
): Promise<OAuthClient | undefined> {
  const documents = source.clientMetadataDocuments;
  if (documents !== undefined && isMetadataDocumentClientId(clientId))
    // The resolver keeps to its own timeoutMs; the margin only guards one of the application's.
    return bounded(
      () => documentClient(documents, clientId, priority),
      documents.timeoutMs + source.storeTimeoutMs,
      "the client metadata documents",
    );
  return bounded(() => source.clients.get(clientId), source.storeTimeoutMs, "the client store");
}

async function bounded<T>(work: () => Promise<T>, ms: number, what: string): Promise<T> {
  try {
    return await withDeadline(work, ms, what);
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw error;
    throw new StoreUnavailableError(`${what} failed or did not answer in time`, { cause: error });
  }
}

/**
 * The client a metadata document describes: a public client with the
 * document's redirect URIs and its authorization-code grants; `undefined`
 * when the document cannot be used, or names no public client that may use
 * the authorization code grant. A fetch refused for load (`busy`) or that
 * timed out throws `StoreUnavailableError`: the client may well be good.
 */
async function documentClient(
  documents: ClientMetadataDocuments,
  clientId: string,
  priority: ClientMetadataPriority,
): Promise<OAuthClient | undefined> {
  try {
    const document = await documents.resolve(clientId, { priority });
    if (document.tokenEndpointAuthMethod !== "none") return undefined;
    const grantTypes = DOCUMENT_GRANT_TYPES.filter((grant) => document.grantTypes.includes(grant));
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
    if (
      error instanceof ClientMetadataError &&
      (error.reason === "busy" || error.reason === "timeout")
    )
      throw new StoreUnavailableError("the client metadata document could not be read in time", {
        cause: error,
      });
    if (error instanceof ClientMetadataError) return undefined;
    throw error;
  }
}

/**
 * A client store that also knows clients by their Client ID Metadata
 * Document: an https client id is looked up there (a public client with the
 * document's redirect URIs), any other in `clients`. A document that cannot
 * be used makes an unknown client; a fetch refused for load or that timed
 * out is a store failure (`StoreUnavailableError`). For an application's own
 * pages; the endpoints look clients up themselves.
 *
 * @param priority whose requests the store serves: `"signed_in"` for a page
 *   only a signed-in person sees
 */
export function clientsWithMetadataDocuments(
  clients: ClientStore,
  documents: ClientMetadataDocuments,
  priority: ClientMetadataPriority = "anonymous",
): ClientStore {
  return {
    get: (clientId) =>
      isMetadataDocumentClientId(clientId)
        ? documentClient(documents, clientId, priority)
        : clients.get(clientId),
  };
}
