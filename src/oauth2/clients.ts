import { sha256Base64url } from "../core/digest.ts";
import { randomToken } from "../core/encoding.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { positiveInteger, rejectUnknownKeys } from "../core/options.ts";
import { redirectUriProblem } from "./redirect-uri.ts";

/** What the credential is: an OAuth2 client or an API key presented as one. */
export type ClientKind = "oauth2_client" | "api_key";

/** The grants a client may use at the token endpoint. */
export type GrantType =
  | "urn:ietf:params:oauth:grant-type:device_code"
  | "client_credentials"
  | "authorization_code"
  | "refresh_token";

export const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
export const ALL_GRANT_TYPES: readonly GrantType[] = [
  DEVICE_CODE_GRANT,
  "client_credentials",
  "authorization_code",
  "refresh_token",
];
/** What a client registered without `grantTypes` may use. */
const DEFAULT_GRANT_TYPES: readonly GrantType[] = [DEVICE_CODE_GRANT, "client_credentials"];
/** The authorization-code grants: a client that has redirect URIs. */
const CODE_GRANT_TYPES: readonly GrantType[] = ["authorization_code", "refresh_token"];

/**
 * A registered client. Its secret is held only as a hash: a leaked store
 * gives no usable credential.
 */
export interface OAuthClient {
  /** The `client_id` (for an API key: its key id). Also the principal id. */
  readonly clientId: string;
  readonly kind: ClientKind;
  /** Shown to the human approving the client's request. */
  readonly name?: string;
  /** A public client has no secret; the endpoints accept one only when told to. */
  readonly public: boolean;
  /** `sha256:<base64url>` of the secret; absent for a public client. */
  readonly secretHash?: string;
  readonly grantTypes: readonly GrantType[];
  /** Every token this client gets must be DPoP-bound (RFC 9449 §5.2): a token request without a proof is refused. */
  readonly dpopBoundAccessTokens?: boolean;
  /** Where the authorization endpoint may send the human back (authorization-code clients). */
  readonly redirectUris?: readonly string[];
}

/** Where the endpoints look clients up. */
export interface ClientStore {
  get(clientId: string): Promise<OAuthClient | undefined>;
}

export interface ClientRegistration {
  readonly clientId: string;
  /** @default "oauth2_client" */
  readonly kind?: ClientKind;
  readonly name?: string;
  /** At least 16 characters; give this or `secretHash`, or `public: true`. */
  readonly secret?: string;
  /** A hash made earlier by `hashClientSecret`. */
  readonly secretHash?: string;
  /**
   * A client with no secret.
   *
   * @default false
   */
  readonly public?: boolean;
  /**
   * The grants this client may use. `client_credentials` needs a client that
   * authenticates (RFC 6749 §4.4), so a public client cannot be given it.
   *
   * @default with `redirectUris`, `authorization_code` and `refresh_token`; otherwise the device-code grant and `client_credentials`, or for a public client the device-code grant only
   */
  readonly grantTypes?: readonly GrantType[];
  /**
   * Where the authorization endpoint may send the human back: absolute
   * URLs compared exactly (a loopback one on any port, RFC 8252 §7.3);
   * https, http on loopback only, or a native app's private-use scheme, a
   * reversed domain name (`com.example.app:/callback`, RFC 8252 §7.1) or one
   * the server names (`agentAuth`'s `authorizationCode.redirectUris`).
   *
   * @default none — the client cannot use the authorization-code grant
   */
  readonly redirectUris?: readonly string[];
  /**
   * Tokens for this client only with a DPoP proof (RFC 9449 §5.2
   * `dpop_bound_access_tokens`); needs an authorization server that checks proofs.
   *
   * @default false
   */
  readonly dpopBoundAccessTokens?: boolean;
}

const CLIENT_ID = /^[\x21-\x7e]{1,128}$/;
const HASH = /^sha256:[A-Za-z0-9_-]{43}$/;

/** `sha256:<base64url>`: client secrets are random and long, so one fast hash suffices. */
export async function hashClientSecret(secret: string): Promise<string> {
  return `sha256:${await sha256Base64url(secret)}`;
}

/** A new random secret of 256 bits. */
export function generateClientSecret(): string {
  return randomToken(32);
}

/** Checks a registration and turns it into a stored client, hashing its secret. */
export async function toClient(registration: ClientRegistration): Promise<OAuthClient> {
  rejectUnknownKeys("client registration", registration, [
    "clientId",
    "kind",
    "name",
    "secret",
    "secretHash",
    "public",
    "grantTypes",
    "dpopBoundAccessTokens",
    "redirectUris",
  ]);
  const { clientId } = registration;
  if (typeof clientId !== "string" || !CLIENT_ID.test(clientId) || clientId.includes(":"))
    throw new InvalidOptionsError(
      "client registration: clientId must be 1-128 visible ASCII characters without a colon",
    );
  const kind = registration.kind ?? "oauth2_client";
  if (kind !== "oauth2_client" && kind !== "api_key")
    throw new InvalidOptionsError('client registration: kind must be "oauth2_client" or "api_key"');
  const isPublic = registration.public ?? false;
  if (typeof isPublic !== "boolean")
    throw new InvalidOptionsError("client registration: public must be a boolean");
  const given = [registration.secret, registration.secretHash].filter((v) => v !== undefined);
  if (isPublic ? given.length !== 0 : given.length !== 1)
    throw new InvalidOptionsError(
      `client registration ${clientId}: give exactly one of secret or secretHash, or public: true with neither`,
    );
  if (
    registration.secret !== undefined &&
    (typeof registration.secret !== "string" || registration.secret.length < 16)
  )
    throw new InvalidOptionsError(
      `client registration ${clientId}: a secret needs at least 16 characters (generateClientSecret() makes one)`,
    );
  if (registration.secretHash !== undefined && !HASH.test(registration.secretHash))
    throw new InvalidOptionsError(
      `client registration ${clientId}: secretHash must come from hashClientSecret`,
    );
  const redirectUris = registeredRedirectUris(clientId, registration.redirectUris);
  const grantTypes =
    registration.grantTypes ??
    (redirectUris !== undefined
      ? CODE_GRANT_TYPES
      : isPublic
        ? [DEVICE_CODE_GRANT]
        : DEFAULT_GRANT_TYPES);
  if (
    !Array.isArray(grantTypes) ||
    grantTypes.length === 0 ||
    grantTypes.some((grant) => !ALL_GRANT_TYPES.includes(grant))
  )
    throw new InvalidOptionsError(
      `client registration ${clientId}: grantTypes must list some of ${ALL_GRANT_TYPES.join(", ")}`,
    );
  if (isPublic && grantTypes.includes("client_credentials"))
    throw new InvalidOptionsError(
      `client registration ${clientId}: a public client cannot use client_credentials, which needs a client that authenticates (RFC 6749 §4.4)`,
    );
  if (grantTypes.includes("authorization_code") && redirectUris === undefined)
    throw new InvalidOptionsError(
      `client registration ${clientId}: the authorization_code grant needs redirectUris`,
    );
  if (registration.name !== undefined && typeof registration.name !== "string")
    throw new InvalidOptionsError(`client registration ${clientId}: name must be a string`);
  const bound = registration.dpopBoundAccessTokens ?? false;
  if (typeof bound !== "boolean")
    throw new InvalidOptionsError(
      `client registration ${clientId}: dpopBoundAccessTokens must be a boolean`,
    );
  const secretHash =
    registration.secretHash ??
    (registration.secret === undefined ? undefined : await hashClientSecret(registration.secret));
  return Object.freeze({
    clientId,
    kind,
    public: isPublic,
    grantTypes: Object.freeze([...grantTypes]),
    ...(registration.name === undefined ? {} : { name: registration.name }),
    ...(secretHash === undefined ? {} : { secretHash }),
    ...(bound ? { dpopBoundAccessTokens: true } : {}),
    ...(redirectUris === undefined ? {} : { redirectUris }),
  });
}

function registeredRedirectUris(
  clientId: string,
  uris: readonly string[] | undefined,
): readonly string[] | undefined {
  if (uris === undefined) return undefined;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 20)
    throw new InvalidOptionsError(
      `client registration ${clientId}: redirectUris must list 1 to 20 URLs`,
    );
  for (const uri of uris) {
    // A single-label private-use scheme passes here: the server's policy decides where it is used.
    const problem = redirectUriProblem(uri, "registrable");
    if (problem !== undefined)
      throw new InvalidOptionsError(
        `client registration ${clientId}: ${JSON.stringify(uri)} is no redirect URI: it has ${problem} (absolute, no fragment; https, http on loopback, or an app's private-use scheme)`,
      );
  }
  return Object.freeze([...uris]);
}

/**
 * Options of `MemoryClientStore`.
 *
 * @example
 * ```ts
 * import { MemoryClientStore } from "portcullis/oauth2";
 *
 * const clients = new MemoryClientStore({ maxEntries: 100 });
 * await clients.register({ clientId: "tv-app", secret: tvAppSecret, name: "Living-room TV" });
 * ```
 */
export interface MemoryClientStoreOptions {
  /**
   * Most clients held; registering one more throws rather than forget one.
   *
   * @default 10_000
   */
  readonly maxEntries?: number;
}

/** Process-local clients and API keys, registered by the application. */
export class MemoryClientStore implements ClientStore {
  readonly #clients = new Map<string, OAuthClient>();
  readonly #maxEntries: number;

  constructor(options: MemoryClientStoreOptions = {}) {
    rejectUnknownKeys("MemoryClientStore", options, ["maxEntries"]);
    this.#maxEntries = positiveInteger(
      "MemoryClientStore",
      "maxEntries",
      options.maxEntries,
      10_000,
    );
  }

  /** Adds or replaces a client. */
  async register(registration: ClientRegistration): Promise<OAuthClient> {
    const client = await toClient(registration);
    if (!this.#clients.has(client.clientId) && this.#clients.size >= this.#maxEntries)
      throw new InvalidOptionsError(`MemoryClientStore: already holds ${this.#maxEntries} clients`);
    this.#clients.set(client.clientId, client);
    return client;
  }

  /** Removes a client; its tokens already issued stay valid until they expire. */
  async remove(clientId: string): Promise<boolean> {
    return this.#clients.delete(clientId);
  }

  async get(clientId: string): Promise<OAuthClient | undefined> {
    return this.#clients.get(clientId);
  }
}
