import { readJsonBody } from "../core/body.ts";
import { addressNetwork, clientAddress } from "../core/client-address.ts";
import { withDeadline } from "../core/deadline.ts";
import { randomToken } from "../core/encoding.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { methodNotAllowed } from "../core/http-method.ts";
import { type LoginAttemptStore, MemoryLoginAttemptStore } from "../core/login-attempt-store.ts";
import { integerOption, mountPathOption, rejectUnknownKeys } from "../core/options.ts";
import type { GrantType, OAuthClient } from "./clients.ts";
import {
  DEFAULT_REDIRECT_URI_POLICY,
  type RedirectUriPolicy,
  redirectUriProblem,
} from "./redirect-uri.ts";
import {
  MemoryRegisteredClientStore,
  REGISTERED_CLIENT_PREFIX,
  type RegisteredClientStore,
} from "./registered-clients.ts";
import { parseScope } from "./scope.ts";
import { isShowableName, MAX_CLIENT_NAME_LENGTH } from "./showable.ts";
import { noStoreJson, type OAuthErrorCode, oauthError } from "./wire.ts";

/**
 * RFC 7591 dynamic client registration, for MCP clients that find no
 * Client ID Metadata Document support: public clients of the
 * authorization-code grant only, each registration counted against its
 * client address's budget and an overall one, the clients held in a bounded
 * store until they expire.
 */

/** How many registrations a budget allows per window. */
export interface RegistrationBudget {
  /** Registrations per window (1 to 1 000 000). */
  readonly limit: number;
  /** The window, in seconds (1 to 86 400). */
  readonly windowSeconds: number;
}

/**
 * RFC 7591 dynamic client registration (off unless given): anyone may
 * register a public authorization-code client, so every part is bounded.
 *
 * @example
 * ```ts
 * import type { DynamicRegistrationOptions } from "portcullis/oauth2";
 *
 * const dynamicRegistration: DynamicRegistrationOptions = {
 *   maxClients: 5000,
 *   perAddress: { limit: 5, windowSeconds: 3600 },
 * };
 * ```
 */
export interface DynamicRegistrationOptions {
  /**
   * Most registered clients held; once full, registrations are refused (503)
   * until some expire, and no registered client is pushed out.
   *
   * @default 10_000
   */
  readonly maxClients?: number;
  /**
   * How long a registered client lives, in seconds, used or not; its refresh
   * tokens end with it (the MCP client registers again).
   *
   * @default 2_592_000 (30 days)
   */
  readonly clientTtlSeconds?: number;
  /**
   * Registrations from one client address (as the chain resolved it; an
   * IPv6 /56) per window; past it, 429 with `Retry-After`.
   *
   * @default { limit: 10, windowSeconds: 3600 }
   */
  readonly perAddress?: RegistrationBudget;
  /**
   * Registrations from everyone together per window; past it, 429 with `Retry-After`.
   *
   * @default { limit: 1000, windowSeconds: 3600 }
   */
  readonly overall?: RegistrationBudget;
  /**
   * Where the registration endpoint is served (published as `registration_endpoint`).
   *
   * @default "/oauth/register"
   */
  readonly path?: string;
}

/** `DynamicRegistrationOptions` checked. */
export interface DynamicRegistrationSettings {
  readonly path: string;
  readonly clientTtlMs: number;
  readonly perAddress: { readonly limit: number; readonly windowMs: number };
  readonly overall: { readonly limit: number; readonly windowMs: number };
  readonly clients: RegisteredClientStore;
  readonly attempts: LoginAttemptStore;
}

/** Checks the options, naming the key written under `where`. */
export function checkDynamicRegistrationOptions(
  where: string,
  options: DynamicRegistrationOptions,
): DynamicRegistrationSettings {
  if (typeof options !== "object" || options === null)
    throw new InvalidOptionsError(`${where} must be an object`);
  rejectUnknownKeys(where, options, [
    "maxClients",
    "clientTtlSeconds",
    "perAddress",
    "overall",
    "path",
  ]);
  const maxClients = integerOption(where, "maxClients", options.maxClients, 10_000, 1, 10_000_000);
  return {
    path: mountPathOption(where, "path", options.path ?? "/oauth/register"),
    clientTtlMs:
      integerOption(
        where,
        "clientTtlSeconds",
        options.clientTtlSeconds,
        2_592_000,
        60,
        31_536_000,
      ) * 1000,
    perAddress: budget(where, "perAddress", options.perAddress, 10),
    overall: budget(where, "overall", options.overall, 1000),
    clients: new MemoryRegisteredClientStore({ maxClients }),
    // Two counters per address at most; the store forgets the lightest past its bound.
    attempts: new MemoryLoginAttemptStore({ maxEntries: 10_000 }),
  };
}

function budget(where: string, name: string, value: RegistrationBudget | undefined, limit: number) {
  if (value === undefined) return { limit, windowMs: 3_600_000 };
  if (typeof value !== "object" || value === null)
    throw new InvalidOptionsError(`${where}: ${name} must be an object`);
  rejectUnknownKeys(`${where}: ${name}`, value, ["limit", "windowSeconds"]);
  return {
    limit: integerOption(where, `${name}.limit`, value.limit, limit, 1, 1_000_000),
    windowMs:
      integerOption(where, `${name}.windowSeconds`, value.windowSeconds, 3600, 1, 86_400) * 1000,
  };
}

/**
 * What the registration endpoint is built from (`agentAuth` builds it from
 * `authorizationCode.dynamicRegistration`). Look clients up through
 * `clientsWithRegistrations(clients, settings.clients, now)` so the
 * authorization and token endpoints find the registered ones.
 *
 * @example
 * ```ts
 * import { checkDynamicRegistrationOptions, registrationEndpoint } from "portcullis/oauth2";
 *
 * const settings = checkDynamicRegistrationOptions("registration", { maxClients: 1000 });
 * const register = registrationEndpoint({
 *   settings,
 *   storeTimeoutMs: 1000,
 *   now: Date.now,
 *   maxBodyBytes: 65_536,
 * });
 * ```
 */
export interface RegistrationEndpointOptions {
  readonly settings: DynamicRegistrationSettings;
  readonly storeTimeoutMs: number;
  readonly now: () => number;
  readonly maxBodyBytes: number;
  /**
   * The server's redirect-URI policy: a redirect URI the authorization
   * endpoint would refuse is refused at registration.
   *
   * @default RFC 8252's rules (`DEFAULT_REDIRECT_URI_POLICY`)
   */
  readonly redirectUris?: RedirectUriPolicy;
}

/** The metadata a registration asked for, checked: what is registered and answered. */
export interface RegisteredMetadata {
  readonly redirect_uris: readonly string[];
  readonly client_name?: string;
  readonly grant_types: readonly GrantType[];
  readonly response_types: readonly ["code"];
  readonly token_endpoint_auth_method: "none";
}

type MetadataCheck =
  | { readonly ok: true; readonly metadata: RegisteredMetadata }
  | { readonly ok: false; readonly error: OAuthErrorCode; readonly description: string };

const MAX_REDIRECT_URIS = 20;
const CODE_GRANTS: readonly string[] = ["authorization_code", "refresh_token"];

/**
 * RFC 7591 §2 metadata, checked: the fields this server registers; any other
 * field is ignored, as §2 allows. `token_endpoint_auth_method` omitted is
 * registered as `none` (§3.2.1 lets the server replace a value): only public
 * clients are registered, since a secret handed to anyone who asks proves nothing.
 */
export function checkRegistrationMetadata(
  body: unknown,
  policy: RedirectUriPolicy = DEFAULT_REDIRECT_URI_POLICY,
): MetadataCheck {
  const refuse = (error: OAuthErrorCode, description: string): MetadataCheck => ({
    ok: false,
    error,
    description,
  });
  if (typeof body !== "object" || body === null || Array.isArray(body))
    return refuse("invalid_client_metadata", "the body must be a JSON object");
  const doc = body as Record<string, unknown>;
  const uris = doc.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_REDIRECT_URIS)
    return refuse(
      "invalid_redirect_uri",
      `redirect_uris must list 1 to ${MAX_REDIRECT_URIS} redirect URIs`,
    );
  for (const uri of uris) {
    const problem = redirectUriProblem(uri, policy);
    if (problem !== undefined)
      return refuse("invalid_redirect_uri", `a redirect URI has ${problem}`);
  }
  const name = doc.client_name;
  if (name !== undefined && !isShowableName(name))
    return refuse(
      "invalid_client_metadata",
      `client_name must be a showable name of at most ${MAX_CLIENT_NAME_LENGTH} characters`,
    );
  const method = doc.token_endpoint_auth_method ?? "none";
  if (method !== "none")
    return refuse(
      "invalid_client_metadata",
      "token_endpoint_auth_method must be none: only public clients are registered",
    );
  const grants = doc.grant_types ?? ["authorization_code"];
  if (
    !Array.isArray(grants) ||
    grants.length > CODE_GRANTS.length ||
    grants.some((grant) => !CODE_GRANTS.includes(grant)) ||
    !grants.includes("authorization_code")
  )
    return refuse(
      "invalid_client_metadata",
      "grant_types must be authorization_code, with refresh_token or without",
    );
  const responses = doc.response_types ?? ["code"];
  if (!Array.isArray(responses) || responses.length !== 1 || responses[0] !== "code")
    return refuse("invalid_client_metadata", 'response_types must be ["code"]');
  // Checked for form only: each authorization request asks for its own scope.
  const scope = doc.scope;
  if (
    scope !== undefined &&
    (typeof scope !== "string" ||
      scope.length > 1000 ||
      parseScope(scope, () => true) === undefined)
  )
    return refuse("invalid_client_metadata", "scope must be space-separated scope names");
  return {
    ok: true,
    metadata: {
      redirect_uris: Object.freeze([...(uris as string[])]),
      ...(name === undefined ? {} : { client_name: name }),
      grant_types: Object.freeze([...new Set(grants as GrantType[])]),
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    },
  };
}

/**
 * The registration endpoint (RFC 7591 §3): `POST` a JSON object of client
 * metadata, answered 201 with a new `client_id` and what was registered.
 * The budgets are spent before the body is read, so a flood of garbage
 * counts as much as one of registrations.
 */
export function registrationEndpoint(options: RegistrationEndpointOptions): Handler {
  const { settings, storeTimeoutMs, now } = options;
  const call = <T>(work: () => Promise<T>) =>
    withDeadline(work, storeTimeoutMs, "a registration store");
  return async (request) => {
    if (request.method !== "POST") return methodNotAllowed("POST");
    const at = now();
    let refusedUntil: number | undefined;
    try {
      refusedUntil = await spendBudgets(settings, clientAddress(request), at, call);
    } catch {
      return oauthError("temporarily_unavailable", "registration is unavailable; try again");
    }
    if (refusedUntil !== undefined) {
      const response = oauthError("temporarily_unavailable", "too many registrations; try later", {
        status: 429,
      });
      response.headers.set(
        "retry-after",
        String(Math.max(1, Math.ceil((refusedUntil - at) / 1000))),
      );
      return response;
    }
    const body = await readJsonBody(request, options.maxBodyBytes);
    if (!body.ok)
      return oauthError(
        "invalid_request",
        body.failure === "too_large"
          ? `the body is larger than ${options.maxBodyBytes} bytes`
          : body.failure === "media_type"
            ? "the body must be application/json"
            : "the body is not JSON",
        body.failure === "too_large" ? { status: 413 } : {},
      );
    const checked = checkRegistrationMetadata(body.value, options.redirectUris);
    if (!checked.ok) return oauthError(checked.error, checked.description);
    const { metadata } = checked;
    const client: OAuthClient = Object.freeze({
      clientId: `${REGISTERED_CLIENT_PREFIX}${randomToken(16)}`,
      kind: "oauth2_client",
      public: true,
      grantTypes: metadata.grant_types,
      redirectUris: metadata.redirect_uris,
      ...(metadata.client_name === undefined ? {} : { name: metadata.client_name }),
    });
    let added: boolean;
    try {
      added = await call(() => settings.clients.add(client, at + settings.clientTtlMs, at));
    } catch {
      return oauthError("temporarily_unavailable", "registration is unavailable; try again");
    }
    if (!added) {
      const response = oauthError(
        "temporarily_unavailable",
        "no more clients can be registered now; try later",
      );
      response.headers.set("retry-after", "3600");
      return response;
    }
    return noStoreJson(
      { client_id: client.clientId, client_id_issued_at: Math.floor(at / 1000), ...metadata },
      201,
    );
  };
}

/**
 * Counts one registration against the address's budget, then the overall one;
 * when either is spent, the time it renews (epoch ms), with the address's
 * count given back when only the overall one refused.
 */
async function spendBudgets(
  settings: DynamicRegistrationSettings,
  address: string | undefined,
  now: number,
  call: <T>(work: () => Promise<T>) => Promise<T>,
): Promise<number | undefined> {
  const { attempts, perAddress, overall } = settings;
  // By network (an IPv6 /56): one subscriber's many addresses share a budget.
  const key = address === undefined ? undefined : `address:${addressNetwork(address) ?? address}`;
  if (key !== undefined) {
    const own = await call(() => attempts.consume(key, perAddress.limit, perAddress.windowMs, now));
    if (!own.allowed) return own.resetAt;
  }
  const all = await call(() => attempts.consume("overall", overall.limit, overall.windowMs, now));
  if (all.allowed) return undefined;
  if (key !== undefined) await call(() => attempts.release(key, now));
  return all.resetAt;
}
