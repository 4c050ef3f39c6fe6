import { lookup } from "node:dns/promises";
import type { IncomingMessage } from "node:http";
import { request } from "node:https";
import { isIP } from "node:net";
import { Readable } from "node:stream";
import { InvalidOptionsError } from "../../core/errors.ts";
import { rejectUnknownKeys } from "../../core/options.ts";
import type { ClientMetadataFetch, ClientMetadataResolve } from "../../oauth2/index.ts";

/**
 * Options of `nodeClientMetadataTransport`.
 *
 * @example
 * ```ts
 * import { readFileSync } from "node:fs";
 * import { rootCertificates } from "node:tls";
 * import { nodeClientMetadataTransport } from "portcullis/adapters/node";
 *
 * // Node's own roots, and a private CA some clients' documents are served under.
 * const transport = nodeClientMetadataTransport({
 *   ca: [...rootCertificates, readFileSync("private-ca.pem", "utf8")],
 * });
 * ```
 */
export interface NodeClientMetadataTransportOptions {
  /**
   * Certificate authorities (PEM) trusted for the documents' servers, in place of Node's bundled roots.
   *
   * @default Node's bundled root certificates
   */
  readonly ca?: string | readonly string[];
}

/** The `resolve` and `fetch` options of `clientMetadataDocuments`, for Node. */
export interface NodeClientMetadataTransport {
  readonly resolve: ClientMetadataResolve;
  readonly fetch: ClientMetadataFetch;
}

// Statuses whose response has no body: the Response constructor refuses one for them.
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * Name resolution and fetching for `clientMetadataDocuments` on Node. `resolve`
 * asks the system resolver (`dns.lookup`, the hosts file included) for every
 * address of a name. `fetch` connects to the address the guard checked and to
 * nothing else (no second lookup, so a DNS answer that changes between the
 * check and the connection cannot move it), verifies the certificate against
 * the URL's host name, sends a plain GET, and never follows a redirect.
 */
export function nodeClientMetadataTransport(
  options: NodeClientMetadataTransportOptions = {},
): NodeClientMetadataTransport {
  rejectUnknownKeys("nodeClientMetadataTransport", options, ["ca"]);
  const { ca } = options;
  if (
    ca !== undefined &&
    typeof ca !== "string" &&
    !(Array.isArray(ca) && ca.every((pem) => typeof pem === "string"))
  )
    throw new InvalidOptionsError(
      "nodeClientMetadataTransport: ca must be a PEM string or a list of them",
    );
  const trusted = ca === undefined ? {} : { ca: typeof ca === "string" ? ca : [...ca] };

  const resolve: ClientMetadataResolve = async (hostname) => {
    const found = await lookup(hostname, { all: true, verbatim: true });
    return found.map((entry) => entry.address);
  };

  const fetch: ClientMetadataFetch = ({ url, address, headers, signal }) => {
    const target = new URL(url);
    if (target.protocol !== "https:" || isIP(address) === 0)
      return Promise.reject(
        new TypeError("nodeClientMetadataTransport: an https URL and an IP address are needed"),
      );
    const hostname = target.hostname.replace(/^\[|\]$/g, "");
    return new Promise<Response>((settle, reject) => {
      const outgoing = request(
        {
          host: address,
          // SNI and the certificate check use the URL's name; an IP literal URL is checked as such.
          ...(isIP(hostname) === 0 ? { servername: hostname } : {}),
          port: target.port === "" ? 443 : Number(target.port),
          path: `${target.pathname}${target.search}`,
          method: "GET",
          headers: { ...headers, host: target.host },
          agent: false,
          signal,
          ...trusted,
        },
        (incoming: IncomingMessage) => settle(toResponse(incoming)),
      );
      outgoing.on("error", reject);
      outgoing.end();
    });
  };

  return Object.freeze({ resolve, fetch });
}

function toResponse(incoming: IncomingMessage): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  const status = incoming.statusCode ?? 502;
  if (NULL_BODY.has(status) || status < 200 || status > 599) {
    incoming.destroy();
    return new Response(null, { status: status < 200 || status > 599 ? 502 : status, headers });
  }
  // Cancelling the web stream destroys the socket: a refused body is never read to its end.
  const body = Readable.toWeb(incoming) as unknown as ReadableStream<Uint8Array>;
  return new Response(body, { status, headers });
}
