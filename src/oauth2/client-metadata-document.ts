import { readAtMost } from "../core/body.ts";
import {
  ClientMetadataError,
  type ClientMetadataFailureReason,
  InvalidOptionsError,
} from "../core/errors.ts";
import {
  functionOptions,
  integerOption,
  positiveInteger,
  rejectUnknownKeys,
  timeoutOption,
} from "../core/options.ts";
import { addressBytes, addressGuard } from "./address-guard.ts";
import { redirectUriProblem } from "./redirect-uri.ts";
import { hasUnshowable, isShowableName, MAX_CLIENT_NAME_LENGTH } from "./showable.ts";

/**
 * What a Client ID Metadata Document says about its client, checked. The
 * client is public (`none`) or authenticates with `private_key_jwt`; a
 * document can never carry a shared secret.
 */
export interface ClientMetadata {
  /** The client id: the document's URL, exactly as the client sent it. */
  readonly clientId: string;
  /** `client_name`, shown to the human who approves; absent when the document has none. */
  readonly name?: string;
  /** `redirect_uris`, to be matched exactly by the authorization endpoint. */
  readonly redirectUris: readonly string[];
  /** `token_endpoint_auth_method`; a document without one is a public client (`none`). */
  readonly tokenEndpointAuthMethod: "none" | "private_key_jwt";
  /** `grant_types`; RFC 7591's default `["authorization_code"]` when absent. */
  readonly grantTypes: readonly string[];
  /** `response_types`; RFC 7591's default `["code"]` when absent. */
  readonly responseTypes: readonly string[];
  /** `scope`, the scopes the client says it may ask for. */
  readonly scope?: string;
  /** `jwks_uri` of a `private_key_jwt` client. */
  readonly jwksUri?: string;
  /** `jwks` of a `private_key_jwt` client: public keys only. */
  readonly jwks?: { readonly keys: readonly Readonly<Record<string, unknown>>[] };
}

/** What the injected `fetch` is asked for: one GET of the document. */
export interface ClientMetadataRequest {
  /** The document's URL (the client id): its host names the server for TLS and `Host`. */
  readonly url: string;
  /**
   * The IP address the guard checked. Connect to it and to nothing else: a
   * fetch that resolves the name again can be sent elsewhere by a DNS answer
   * that changed in between (DNS rebinding).
   */
  readonly address: string;
  /** `accept: application/json`. */
  readonly headers: Readonly<Record<string, string>>;
  /** Aborted when the time bound passes: close the connection. */
  readonly signal: AbortSignal;
}

/**
 * Fetches one document. It must not follow redirects (a 3xx is returned as
 * is, and refused), and should stop when `signal` aborts.
 */
export type ClientMetadataFetch = (request: ClientMetadataRequest) => Promise<Response>;

/** The IP addresses a host name resolves to (`hostname` is never an IP literal). */
export type ClientMetadataResolve = (hostname: string) => Promise<readonly string[]>;

/**
 * Whose request a lookup serves, which decides the fetch slots it may take.
 * `"signed_in"`: a signed-in person's request (the authorization endpoint),
 * or a token request that brought a code or refresh token a person's consent
 * issued to this client; it may take any free slot, and `reservedFetches` of
 * them only it may. `"anonymous"`: anyone else's.
 */
export type ClientMetadataPriority = "signed_in" | "anonymous";

/** How one `resolve` is asked. */
export interface ClientMetadataLookup {
  /**
   * Whose request this is.
   *
   * @default "anonymous"
   */
  readonly priority?: ClientMetadataPriority;
}

/**
 * Options of `clientMetadataDocuments`.
 *
 * @example
 * ```ts
 * import { nodeClientMetadataTransport } from "portcullis/adapters/node";
 * import { clientMetadataDocuments } from "portcullis/oauth2";
 *
 * const documents = clientMetadataDocuments({ ...nodeClientMetadataTransport() });
 * const client = await documents.resolve("https://app.example.com/oauth/client.json");
 * ```
 */
export interface ClientMetadataDocumentsOptions {
  /**
   * Resolves a host name to its addresses. On Node, `nodeClientMetadataTransport()`
   * from `portcullis/adapters/node` gives one; elsewhere, supply your runtime's.
   */
  readonly resolve: ClientMetadataResolve;
  /**
   * Fetches a document from the checked address. On Node,
   * `nodeClientMetadataTransport()` gives one that connects to that address
   * only; elsewhere, supply one (see the guide for the trade-off).
   */
  readonly fetch: ClientMetadataFetch;
  /**
   * Addresses or CIDR ranges fetched although they are not public
   * (`["10.1.2.0/24"]`, `["127.0.0.1"]` in a test): an explicit exception to the guard.
   *
   * @default []
   */
  readonly allowAddresses?: readonly string[];
  /**
   * Largest document read; reading stops one byte past it.
   *
   * @default 5120
   */
  readonly maxDocumentBytes?: number;
  /**
   * Time for name resolution, connection and the whole document.
   *
   * @default 5000
   */
  readonly timeoutMs?: number;
  /**
   * Documents held in the cache (least recently used goes first); failures
   * are held apart, as many again, so they never push a good document out.
   *
   * @default 1000
   */
  readonly maxEntries?: number;
  /**
   * How long a document is kept when its response has no `Cache-Control: max-age`.
   *
   * @default 300
   */
  readonly defaultTtlSeconds?: number;
  /**
   * Shortest time a document is kept, even with `no-store`, `no-cache` or a shorter `max-age`.
   *
   * @default 60
   */
  readonly minTtlSeconds?: number;
  /**
   * Longest time a document is kept, whatever its `max-age`.
   *
   * @default 86_400
   */
  readonly maxTtlSeconds?: number;
  /**
   * How long a failed fetch is remembered, so a bad client id costs one fetch per period.
   *
   * @default 30
   */
  readonly failureTtlSeconds?: number;
  /**
   * Fetches in progress at once; one more fails at once with reason `busy`.
   *
   * @default 16
   */
  readonly maxConcurrentFetches?: number;
  /**
   * Of `maxConcurrentFetches`, how many only `"signed_in"` lookups may take:
   * anonymous ones, however many, never hold more than the rest, so they
   * cannot keep a person's consent from fetching its client's document.
   *
   * @default half of `maxConcurrentFetches`, rounded down (8)
   */
  readonly reservedFetches?: number;
  /**
   * Fetches in progress at once to one host name, counted apart for
   * `"signed_in"` and anonymous lookups; one more fails at once with reason
   * `busy`. One slow host cannot hold every slot.
   *
   * @default 4 (at most `maxConcurrentFetches`)
   */
  readonly maxConcurrentFetchesPerHost?: number;
  /**
   * Clock in milliseconds.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/** Client ID Metadata Documents, fetched under the guard and cached. */
export interface ClientMetadataDocuments {
  /**
   * The checked metadata of the client whose id is `clientId`; rejects with a
   * `ClientMetadataError` whose `reason` says why it cannot be used, within
   * `timeoutMs` whatever the document's server does.
   */
  resolve(clientId: string, lookup?: ClientMetadataLookup): Promise<ClientMetadata>;
  /** The longest one `resolve` takes: the `timeoutMs` option. */
  readonly timeoutMs: number;
}

/**
 * Whether `clientId` names its client by a metadata document (an https URL):
 * never a configured client's id, which has no colon.
 */
export function isMetadataDocumentClientId(clientId: string): boolean {
  return clientId.startsWith("https://");
}

/** Longest client id accepted. */
export const MAX_CLIENT_ID_URL_LENGTH = 1024;
const MAX_REDIRECT_URIS = 20;
const MAX_SCOPE_LENGTH = 1000;
const MAX_LIST_ITEMS = 20;
const MAX_LIST_ITEM_LENGTH = 200;

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

function fail(reason: ClientMetadataFailureReason, message: string, cause?: unknown): never {
  throw new ClientMetadataError(reason, message, cause === undefined ? undefined : { cause });
}

/**
 * The parsed client id when it is a valid Client ID Metadata Document URL:
 * https, a host, a path other than `/`, no user name or password, no
 * fragment, no dot segments, visible ASCII, in canonical form (the way a URL
 * parser writes it back, so one client has one id), at most
 * `MAX_CLIENT_ID_URL_LENGTH` characters. Throws `ClientMetadataError`
 * (`invalid_client_id`) otherwise.
 */
export function parseClientIdUrl(clientId: string): URL {
  const refuse = (why: string): never =>
    fail("invalid_client_id", `the client id is not a metadata document URL: ${why}`);
  if (typeof clientId !== "string") return refuse("not a string");
  if (clientId.length > MAX_CLIENT_ID_URL_LENGTH)
    return refuse(`longer than ${MAX_CLIENT_ID_URL_LENGTH} characters`);
  if (!VISIBLE_ASCII.test(clientId)) return refuse("characters other than visible ASCII");
  if (!clientId.startsWith("https://")) return refuse("not an https URL");
  if (clientId.includes("#")) return refuse("a fragment");
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return refuse("not a URL");
  }
  if (url.username !== "" || url.password !== "") return refuse("a user name or password");
  const segments = url.pathname.split("/");
  if (segments.some((s) => s === "." || s === ".." || /^(?:\.|%2e){1,2}$/i.test(s)))
    return refuse("a dot segment");
  if (url.pathname === "/" || url.pathname === "") return refuse("no path");
  if (url.href !== clientId) return refuse("not in canonical form");
  const host = url.hostname.toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost")) return refuse("a local host name");
  if (host.endsWith(".")) return refuse("a host name ending in a dot");
  return url;
}

function stringList(
  document: Record<string, unknown>,
  key: string,
  fallback: readonly string[],
): readonly string[] {
  const value = document[key];
  if (value === undefined) return fallback;
  if (
    !Array.isArray(value) ||
    value.length > MAX_LIST_ITEMS ||
    !value.every(
      (item) => typeof item === "string" && item.length > 0 && item.length <= MAX_LIST_ITEM_LENGTH,
    )
  )
    fail("invalid_document", `the document's ${key} is not a short list of strings`);
  return Object.freeze([...(value as string[])]);
}

/** Checks a parsed document fetched from `clientId` and keeps what the server uses. */
export function checkClientMetadata(clientId: string, document: unknown): ClientMetadata {
  if (typeof document !== "object" || document === null || Array.isArray(document))
    fail("invalid_document", "the document is not a JSON object");
  const doc = document as Record<string, unknown>;
  if (doc.client_id !== clientId)
    fail("client_id_mismatch", "the document's client_id is not the URL it was fetched from");
  if ("client_secret" in doc || "client_secret_expires_at" in doc)
    fail("auth_method_refused", "the document carries a client secret");
  const method = doc.token_endpoint_auth_method ?? "none";
  if (typeof method !== "string")
    fail("invalid_document", "the document's token_endpoint_auth_method is not a string");
  if (method !== "none" && method !== "private_key_jwt")
    fail(
      "auth_method_refused",
      "the document's token_endpoint_auth_method needs a shared secret or is unknown",
    );
  const uris = doc.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_REDIRECT_URIS)
    fail(
      "invalid_document",
      `the document's redirect_uris is not a list of 1 to ${MAX_REDIRECT_URIS} URIs`,
    );
  for (const uri of uris) {
    // A single-label private-use scheme passes here: the server's policy decides where it is used.
    const problem = redirectUriProblem(uri, "registrable");
    if (problem !== undefined)
      fail("invalid_document", `a redirect URI of the document has ${problem}`);
  }
  const name = doc.client_name;
  if (name !== undefined && !isShowableName(name))
    fail(
      "invalid_document",
      `the document's client_name is not a showable name of at most ${MAX_CLIENT_NAME_LENGTH} characters`,
    );
  const scope = doc.scope;
  if (
    scope !== undefined &&
    (typeof scope !== "string" || scope.length > MAX_SCOPE_LENGTH || hasUnshowable(scope))
  )
    fail("invalid_document", "the document's scope is not a short string");
  const keys = privateKeyJwtKeys(doc, method);
  return Object.freeze({
    clientId,
    ...(name === undefined ? {} : { name: name as string }),
    redirectUris: Object.freeze([...(uris as string[])]),
    tokenEndpointAuthMethod: method,
    grantTypes: stringList(doc, "grant_types", ["authorization_code"]),
    responseTypes: stringList(doc, "response_types", ["code"]),
    ...(scope === undefined ? {} : { scope: scope as string }),
    ...keys,
  });
}

function privateKeyJwtKeys(
  doc: Record<string, unknown>,
  method: "none" | "private_key_jwt",
): Pick<ClientMetadata, "jwks" | "jwksUri"> {
  if (method === "none") return {};
  const { jwks, jwks_uri: jwksUri } = doc;
  if ((jwks === undefined) === (jwksUri === undefined))
    fail("invalid_document", "a private_key_jwt document needs exactly one of jwks and jwks_uri");
  if (jwksUri !== undefined) {
    if (typeof jwksUri !== "string" || !jwksUri.startsWith("https://") || !URL.canParse(jwksUri))
      fail("invalid_document", "the document's jwks_uri is not an https URL");
    return { jwksUri };
  }
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  if (
    typeof jwks !== "object" ||
    !Array.isArray(keys) ||
    keys.length === 0 ||
    !keys.every(
      (key) => typeof key === "object" && key !== null && !Array.isArray(key) && !("d" in key),
    )
  )
    fail("invalid_document", "the document's jwks is not a set of public keys");
  return {
    jwks: Object.freeze({ keys: Object.freeze(keys.map((key) => Object.freeze({ ...key }))) }),
  };
}

/** `application/json` or `application/<something>+json`, parameters aside. */
function isJsonType(contentType: string | null): boolean {
  if (contentType === null) return false;
  const type = (contentType.split(";")[0] as string).trim().toLowerCase();
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}

/** Seconds of `max-age`, `0` for `no-store`/`no-cache`, `undefined` when the header says neither. */
function maxAgeOf(cacheControl: string | null): number | undefined {
  if (cacheControl === null) return undefined;
  let maxAge: number | undefined;
  for (const directive of cacheControl.toLowerCase().split(",")) {
    const [name, value] = directive.trim().split("=", 2);
    if (name === "no-store" || name === "no-cache") return 0;
    if (name === "max-age" && value !== undefined && /^[0-9]{1,10}$/.test(value))
      maxAge = Number(value);
  }
  return maxAge;
}

interface Entry<V> {
  readonly value: V;
  readonly expiresAt: number;
}

/** A bounded map that forgets the least recently used entry and the expired ones. */
class Lru<V> {
  readonly #entries = new Map<string, Entry<V>>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get(key: string, now: number): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    if (entry.expiresAt <= now) return undefined;
    this.#entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V, expiresAt: number): void {
    this.#entries.delete(key);
    while (this.#entries.size >= this.#max) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
    this.#entries.set(key, { value, expiresAt });
  }

  get size(): number {
    return this.#entries.size;
  }
}

// Failures not worth remembering: a malformed id costs nothing to refuse again, and `busy` is
// about this server, not the client.
const UNCACHED_FAILURES = new Set(["invalid_client_id", "busy"]);

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document):
 * a client whose id is an https URL is described by the JSON document at that
 * URL. `resolve` checks the URL, resolves its host and refuses it unless every
 * address is public (or allowed), fetches from the checked address without
 * following redirects, within `timeoutMs` and `maxDocumentBytes`, checks the
 * document, and caches it (honouring `Cache-Control: max-age` within bounds);
 * failures are cached briefly and concurrent resolves of one id share one fetch.
 * Fetches are budgeted overall, per host, and with a share held for lookups
 * of signed-in people (`priority: "signed_in"`), which anonymous ones never take.
 */
export function clientMetadataDocuments(
  options: ClientMetadataDocumentsOptions,
): ClientMetadataDocuments {
  const where = "clientMetadataDocuments";
  rejectUnknownKeys(where, options, [
    "resolve",
    "fetch",
    "allowAddresses",
    "maxDocumentBytes",
    "timeoutMs",
    "maxEntries",
    "defaultTtlSeconds",
    "minTtlSeconds",
    "maxTtlSeconds",
    "failureTtlSeconds",
    "maxConcurrentFetches",
    "reservedFetches",
    "maxConcurrentFetchesPerHost",
    "now",
  ]);
  if (options === undefined || options === null || typeof options !== "object")
    throw new InvalidOptionsError(`${where}: options are required (resolve and fetch)`);
  if (options.resolve === undefined || options.fetch === undefined)
    throw new InvalidOptionsError(
      `${where}: give resolve and fetch; on Node, nodeClientMetadataTransport() from portcullis/adapters/node gives both`,
    );
  functionOptions(where, options, ["resolve", "fetch", "now"], ["resolve", "fetch"]);
  const allowed = addressGuard(where, options.allowAddresses ?? []);
  const maxBytes = integerOption(
    where,
    "maxDocumentBytes",
    options.maxDocumentBytes,
    5120,
    256,
    1_048_576,
  );
  const timeoutMs = timeoutOption(where, "timeoutMs", options.timeoutMs, 5000);
  const maxEntries = positiveInteger(where, "maxEntries", options.maxEntries, 1000);
  const day = 86_400;
  const minTtl = integerOption(where, "minTtlSeconds", options.minTtlSeconds, 60, 0, 365 * day);
  const maxTtl = integerOption(
    where,
    "maxTtlSeconds",
    options.maxTtlSeconds,
    day,
    minTtl,
    365 * day,
  );
  const defaultTtl = integerOption(
    where,
    "defaultTtlSeconds",
    options.defaultTtlSeconds,
    300,
    minTtl,
    maxTtl,
  );
  const failureTtl = integerOption(
    where,
    "failureTtlSeconds",
    options.failureTtlSeconds,
    30,
    0,
    day,
  );
  const maxConcurrent = positiveInteger(
    where,
    "maxConcurrentFetches",
    options.maxConcurrentFetches,
    16,
  );
  const reserved = integerOption(
    where,
    "reservedFetches",
    options.reservedFetches,
    Math.floor(maxConcurrent / 2),
    0,
    maxConcurrent - 1,
  );
  const perHost = integerOption(
    where,
    "maxConcurrentFetchesPerHost",
    options.maxConcurrentFetchesPerHost,
    Math.min(4, maxConcurrent),
    1,
    maxConcurrent,
  );
  const now = options.now ?? Date.now;
  const { resolve: resolveName, fetch } = options;

  const documents = new Lru<ClientMetadata>(maxEntries);
  const failures = new Lru<ClientMetadataError>(maxEntries);
  const inFlight = new Map<string, Promise<ClientMetadata>>();
  const slots = fetchSlots(maxConcurrent, maxConcurrent - reserved, perHost);

  async function addressOf(url: URL, signal: AbortSignal): Promise<string> {
    const host = url.hostname;
    if (addressBytes(host) !== undefined) {
      if (!allowed(host))
        fail("address_refused", "the client id's host is an address the server may not reach");
      return host.startsWith("[") ? host.slice(1, -1) : host;
    }
    let addresses: readonly string[];
    try {
      addresses = await resolveName(host);
    } catch (error) {
      if (signal.aborted) throw error;
      return fail("unresolvable", "the client id's host name did not resolve", error);
    }
    if (!Array.isArray(addresses) || addresses.length === 0)
      fail("unresolvable", "the client id's host name resolved to no address");
    // Every address must pass, not just the one used: a name that also points inside is refused.
    if (!addresses.every((address) => typeof address === "string" && allowed(address)))
      fail(
        "address_refused",
        "the client id's host name resolves to an address the server may not reach",
      );
    return addresses[0] as string;
  }

  async function load(
    clientId: string,
    url: URL,
    signal: AbortSignal,
  ): Promise<{ metadata: ClientMetadata; ttl: number }> {
    const address = await addressOf(url, signal);
    signal.throwIfAborted();
    let response: Response;
    try {
      response = await fetch({
        url: clientId,
        address,
        headers: { accept: "application/json" },
        signal,
      });
    } catch (error) {
      if (signal.aborted) throw error;
      return fail("fetch_failed", "the client metadata document could not be fetched", error);
    }
    const discard = () => {
      response.body?.cancel().catch(() => {});
    };
    if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400)) {
      discard();
      fail("redirect_refused", "the client metadata document URL answered with a redirect");
    }
    if (response.status !== 200) {
      discard();
      fail("fetch_failed", `the client metadata document URL answered ${response.status}`);
    }
    if (!isJsonType(response.headers.get("content-type"))) {
      discard();
      fail(
        "invalid_content_type",
        "the client metadata document is not served as application/json",
      );
    }
    if (Number(response.headers.get("content-length") ?? 0) > maxBytes) {
      discard();
      fail("too_large", `the client metadata document is larger than ${maxBytes} bytes`);
    }
    let bytes: Uint8Array | undefined;
    try {
      bytes = await readAtMost(response.body, maxBytes);
    } catch (error) {
      if (signal.aborted) throw error;
      return fail("fetch_failed", "the client metadata document broke off", error);
    }
    if (bytes === undefined)
      fail("too_large", `the client metadata document is larger than ${maxBytes} bytes`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    } catch (error) {
      return fail("invalid_document", "the client metadata document is not JSON", error);
    }
    const metadata = checkClientMetadata(clientId, parsed);
    const maxAge = maxAgeOf(response.headers.get("cache-control"));
    const ttl = Math.min(maxTtl, Math.max(minTtl, maxAge ?? defaultTtl));
    return { metadata, ttl };
  }

  async function bounded(clientId: string, url: URL): Promise<ClientMetadata> {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Settles first when the time is up, whatever the resolver or fetch does with the signal.
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new ClientMetadataError(
          "timeout",
          `the client metadata document did not arrive within ${timeoutMs} ms`,
        );
        reject(error);
        controller.abort(error);
      }, timeoutMs);
    });
    try {
      const { metadata, ttl } = await Promise.race([
        load(clientId, url, controller.signal),
        deadline,
      ]);
      documents.set(clientId, metadata, now() + ttl * 1000);
      return metadata;
    } catch (caught) {
      const error =
        caught instanceof ClientMetadataError
          ? caught
          : new ClientMetadataError(
              "fetch_failed",
              "the client metadata document could not be fetched",
              {
                cause: caught,
              },
            );
      if (!UNCACHED_FAILURES.has(error.reason) && failureTtl > 0)
        failures.set(clientId, error, now() + failureTtl * 1000);
      throw error;
    } finally {
      clearTimeout(timer);
      // Ends a connection still open (a body left unread after a refusal).
      controller.abort();
    }
  }

  return {
    timeoutMs,
    async resolve(clientId, lookup = {}) {
      const url = parseClientIdUrl(clientId);
      const at = now();
      const cached = documents.get(clientId, at);
      if (cached !== undefined) return cached;
      const failed = failures.get(clientId, at);
      if (failed !== undefined) throw failed;
      // One fetch per id, whoever asks: a person's lookup joins an anonymous one under way.
      const pending = inFlight.get(clientId);
      if (pending !== undefined) return pending;
      const release = slots.take(url.hostname, lookup.priority === "signed_in");
      const loading = bounded(clientId, url).finally(() => {
        inFlight.delete(clientId);
        release();
      });
      inFlight.set(clientId, loading);
      return loading;
    },
  };
}

/**
 * The fetch budgets: `total` fetches at once, anonymous ones at most
 * `anonymous` of them, and `perHost` at once to one host name for each kind
 * of lookup. `take` claims a slot (its answer gives it back) or throws `busy`.
 * Bounded by the fetches in flight: a host leaves the count at its last one.
 */
function fetchSlots(total: number, anonymous: number, perHost: number) {
  let all = 0;
  let anonymousHeld = 0;
  const byHost = new Map<string, number>();
  return {
    take(host: string, signedIn: boolean): () => void {
      if (all >= total) fail("busy", `already fetching ${total} client metadata documents`);
      if (!signedIn && anonymousHeld >= anonymous)
        fail(
          "busy",
          `already fetching ${anonymous} client metadata documents for anonymous requests`,
        );
      const key = `${signedIn ? "signed_in" : "anonymous"} ${host}`;
      const held = byHost.get(key) ?? 0;
      if (held >= perHost)
        fail("busy", `already fetching ${perHost} client metadata documents from this host`);
      all++;
      if (!signedIn) anonymousHeld++;
      byHost.set(key, held + 1);
      return () => {
        all--;
        if (!signedIn) anonymousHeld--;
        const left = (byHost.get(key) ?? 1) - 1;
        if (left === 0) byHost.delete(key);
        else byHost.set(key, left);
      };
    },
  };
}
