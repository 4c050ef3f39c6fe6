import { timingSafeEqual } from "../core/timing-safe.ts";
import { type ClientStore, hashClientSecret, type OAuthClient } from "./clients.ts";
import type { OAuthParameters } from "./parameters.ts";
import type { OAuthFailure } from "./wire.ts";

export type ClientAuthenticationMethod = "client_secret_basic" | "client_secret_post" | "none";

export type ClientAuthentication =
  | { readonly ok: true; readonly client: OAuthClient; readonly method: ClientAuthenticationMethod }
  | { readonly ok: false; readonly failure: OAuthFailure };

// Compared against when the client is unknown, so both cases cost one hash and one comparison.
const UNKNOWN_CLIENT_HASH = "sha256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

/** Whether `secret` is `client`'s, in constant time; an unknown client costs the same. */
export async function verifyClientSecret(
  client: OAuthClient | undefined,
  secret: string,
): Promise<boolean> {
  const expected = client?.secretHash ?? UNKNOWN_CLIENT_HASH;
  const matches = await timingSafeEqual(await hashClientSecret(secret), expected);
  return matches && client !== undefined && !client.public;
}

/**
 * RFC 6749 §2.3.1: `client_secret_basic` (the `Authorization` header, both
 * halves form-urlencoded) or `client_secret_post` (`client_id` and
 * `client_secret` in the body), never both; a bare `client_id` only for a
 * public client, and only when `publicClients` is on.
 */
export async function authenticateClient(
  request: Request,
  parameters: OAuthParameters,
  lookup: ClientStore["get"],
  publicClients: boolean,
): Promise<ClientAuthentication> {
  const header = request.headers.get("authorization");
  const bodyId = parameters.get("client_id");
  const bodySecret = parameters.get("client_secret");
  let clientId: string;
  let secret: string | undefined;
  let method: ClientAuthenticationMethod;
  if (header !== null) {
    const basic = parseBasicClient(header);
    if (basic === undefined) return invalidClient("the Authorization header is not HTTP Basic");
    if (bodySecret !== undefined)
      return {
        ok: false,
        failure: { error: "invalid_request", description: "use one client authentication method" },
      };
    if (bodyId !== undefined && bodyId !== basic.id)
      return invalidClient("client_id differs from the Authorization header");
    [clientId, secret, method] = [basic.id, basic.secret, "client_secret_basic"];
  } else if (bodyId !== undefined) {
    [clientId, secret] = [bodyId, bodySecret];
    method = secret === undefined ? "none" : "client_secret_post";
  } else {
    return invalidClient("client authentication is required");
  }

  const client = await lookup(clientId);
  if (method === "none") {
    if (client?.public === true && publicClients) return { ok: true, client, method };
    return invalidClient("client authentication failed");
  }
  if (!(await verifyClientSecret(client, secret ?? "")) || client === undefined)
    return invalidClient("client authentication failed");
  return { ok: true, client, method };
}

function invalidClient(description: string): ClientAuthentication {
  return { ok: false, failure: { error: "invalid_client", description } };
}

/** `Basic base64(urlencoded id ":" urlencoded secret)` (RFC 6749 §2.3.1); `undefined` if malformed. */
export function parseBasicClient(header: string): { id: string; secret: string } | undefined {
  const match = /^basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (match === null) return undefined;
  let decoded: string;
  try {
    decoded = atob(match[1] as string);
  } catch {
    return undefined;
  }
  const colon = decoded.indexOf(":");
  if (colon < 1) return undefined;
  const id = formDecode(decoded.slice(0, colon));
  const secret = formDecode(decoded.slice(colon + 1));
  if (id === undefined || secret === undefined || id === "") return undefined;
  return { id, secret };
}

function formDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text.replace(/\+/g, " "));
  } catch {
    return undefined;
  }
}
