import { InvalidOptionsError } from "../core/errors.ts";
import type { LoginAttemptStore } from "../core/login-attempt-store.ts";
import {
  bodyLimitOption,
  functionOptions,
  integerOption,
  mountPathOption,
  rejectUnknownKeys,
} from "../core/options.ts";
import { pathOfUrl } from "../core/path.ts";
import { issuerUrlOption } from "../core/url.ts";
import type { KeySet } from "../jwt/index.ts";
import {
  type AuthorizationCodeStore,
  type ClientStore,
  type DeviceCodeStore,
  protectedResourceMetadataUrl,
  type RefreshTokenStore,
} from "../oauth2/index.ts";
import type { AgentApproveOptions } from "./approve.ts";
import {
  type AgentAuthorizationCodeOptions,
  type AuthorizationCodeSetup,
  checkAuthorizationCodeOptions,
} from "./authorize.ts";
import type { CapabilityDefinition, CapabilityRegistry } from "./capabilities.ts";
import { type AgentDpopOptions, type DpopSettings, dpopSettings } from "./dpop.ts";
import type { AgentEventListener } from "./events.ts";
import { DEFAULT_GRANT_LIMITS } from "./grant-approval.ts";
import type { GrantLimits, GrantStore } from "./grants.ts";
import type { PendingRequestStore } from "./pending.ts";
import type { ReplayStore } from "./replay.ts";
import { CAPABILITY_CLOCK_TOLERANCE_SECONDS } from "./token.ts";

export interface AgentAuthPaths {
  /** @default "/.well-known/agent-configuration" */
  readonly discovery?: string;
  /** @default "/capability/list" */
  readonly capabilities?: string;
  /** @default "/capability/execute" */
  readonly execute?: string;
  /** @default "/oauth/device_authorization" */
  readonly deviceAuthorization?: string;
  /** @default "/oauth/token" */
  readonly token?: string;
  /** @default "/.well-known/jwks.json" */
  readonly jwks?: string;
  /**
   * Your approval page, told to agents as `verification_uri`.
   *
   * @default "/agent/approve"
   */
  readonly verification?: string;
}

export interface AgentAuthStores {
  /** @default MemoryGrantStore (single instance only) */
  readonly grants?: GrantStore;
  /** @default MemoryReplayStore (single instance only) */
  readonly replay?: ReplayStore;
  /** @default MemoryPendingRequestStore (single instance only) */
  readonly pending?: PendingRequestStore;
  /** @default MemoryDeviceCodeStore (single instance only) */
  readonly deviceCodes?: DeviceCodeStore;
  /** @default MemoryAuthorizationCodeStore (single instance only), with `authorizationCode` */
  readonly authorizationCodes?: AuthorizationCodeStore;
  /** @default MemoryRefreshTokenStore (single instance only), with `authorizationCode` */
  readonly refreshTokens?: RefreshTokenStore;
  /**
   * Wrong user-code entries.
   *
   * @default MemoryLoginAttemptStore
   */
  readonly userCodeAttempts?: LoginAttemptStore;
}

/**
 * Options of `agentAuth`.
 *
 * @example
 * ```ts
 * import { agentAuth } from "portcullis/agentauth";
 * import { MemoryClientStore } from "portcullis/oauth2";
 *
 * const clients = new MemoryClientStore();
 * await clients.register({ clientId: "key_research", kind: "api_key", secret: researchKey });
 *
 * const agents = await agentAuth({
 *   issuer: "https://notes.example.com",
 *   clients,
 *   capabilities: [
 *     { name: "list_notes", description: "Lists the notes.", handler: () => ({ notes }) },
 *   ],
 *   tokenTtlSeconds: 60, // shorter-lived capability tokens than the default 120 s
 *   onEvent: (event) => console.log("agent event", event),
 * });
 * ```
 */
export interface AgentAuthOptions {
  /** The service's public base URL: https (http only on loopback). Every published URL is built from it. */
  readonly issuer: string;
  /** The capabilities offered. */
  readonly capabilities: CapabilityRegistry | readonly CapabilityDefinition[];
  /** The agents' identities: OAuth clients and API keys. */
  readonly clients: ClientStore;
  /**
   * Signing keys for capability tokens. Give every instance the same keys
   * (`importKeySet`) when running more than one.
   *
   * @default an EdDSA pair made at start-up (`generateKeySet()`); its tokens die with the process
   */
  readonly keys?: KeySet;
  /**
   * The `provider_name` agents see in discovery.
   *
   * @default the issuer's host
   */
  readonly providerName?: string;
  /**
   * A short text for discovery, telling agents what the service offers.
   *
   * @default "Capabilities of <provider name> for agents a human has approved."
   */
  readonly description?: string;
  /**
   * Where each endpoint is served, on the issuer's origin; only the ones
   * given change.
   *
   * @default { discovery: "/.well-known/agent-configuration", capabilities: "/capability/list", execute: "/capability/execute", deviceAuthorization: "/oauth/device_authorization", token: "/oauth/token", jwks: "/.well-known/jwks.json", verification: "/agent/approve" }
   */
  readonly paths?: AgentAuthPaths;
  /**
   * Where grants, used token ids, pending requests, device codes and wrong
   * user codes are kept. The memory stores hold for one process only: use
   * shared stores (Redis, PostgreSQL) for several instances.
   *
   * @default a memory store for each (`MemoryGrantStore`, `MemoryReplayStore`, `MemoryPendingRequestStore`, `MemoryDeviceCodeStore`, `MemoryLoginAttemptStore`)
   */
  readonly stores?: AgentAuthStores;
  /**
   * Capability token lifetime, in seconds (1 to 3600).
   *
   * @default 120
   */
  readonly tokenTtlSeconds?: number;
  /**
   * Grant lifetime, in seconds (60 or more).
   *
   * @default 86_400 (24 h)
   */
  readonly grantTtlSeconds?: number;
  /**
   * Most active grants one human holds: one per agent they approved (a new
   * approval of an agent they already approved widens that grant). Over it,
   * their next new agent is refused, with a page saying to revoke one first;
   * nobody else is affected.
   *
   * @default 100
   */
  readonly maxGrantsPerApprover?: number;
  /**
   * Most active grants one agent holds: one per human who approved it. Over
   * it, a further human's approval of that agent is refused; other agents are
   * not affected. A public client many people share (one client id for every
   * install of an application) counts each of them.
   *
   * @default 10_000
   */
  readonly maxGrantsPerAgent?: number;
  /**
   * Device code lifetime, in seconds: how long a human has to approve.
   *
   * @default 600
   */
  readonly deviceCodeLifetimeSeconds?: number;
  /**
   * Device polling interval handed to agents, in seconds.
   *
   * @default 5
   */
  readonly pollIntervalSeconds?: number;
  /**
   * Builds the page answering the approval form (`agents.approve`).
   *
   * @default a minimal HTML page with the right status
   */
  readonly approvalResponse?: AgentApproveOptions["respond"];
  /**
   * Largest execute body, in bytes (413 beyond).
   *
   * @default 65_536
   */
  readonly maxBodyBytes?: number;
  /**
   * Every store call is bounded by this, in ms; a failure or timeout answers 503.
   *
   * @default 1000
   */
  readonly storeTimeoutMs?: number;
  /**
   * DPoP (RFC 9449): capability tokens bound to a key the agent holds, so a
   * stolen token, or a leaked client secret once the grant is bound, is not
   * enough to act. A token request with a proof gets a bound token; clients
   * registered with `dpopBoundAccessTokens` (or every client, with
   * `required`) must send one.
   *
   * @default none — capability tokens are bearer tokens, and DPoP proofs are not accepted
   */
  readonly dpop?: AgentDpopOptions;
  /**
   * An MCP endpoint whose tools are the capabilities with a handler: the
   * authorization server then mints tokens for it (`resource=<issuer><path>`)
   * and its protected resource metadata is served. Serve the endpoint itself
   * with `mcpEndpoint` from `portcullis/mcp`.
   *
   * @default none — no MCP resource
   */
  readonly mcp?: AgentMcpOptions;
  /**
   * The authorization-code grant with PKCE for MCP clients (desktop and IDE
   * clients connect with it): the authorization endpoint, whose consent page
   * is yours, rotating refresh tokens, and Client ID Metadata Documents.
   *
   * @default none — agents are approved by device flow only
   */
  readonly authorizationCode?: AgentAuthorizationCodeOptions;
  /**
   * Told what happened: grants, tokens, executions, denials (ids only, never
   * a token). A listener that throws changes nothing.
   *
   * @default none — events are not reported
   */
  readonly onEvent?: AgentEventListener;
  /**
   * Told about store failures. A store that refuses for a quota (`StoreFullError`) has not
   * failed: it is one `console.warn` line with its figures instead, at most once every 10 s.
   *
   * @default console.error, at most once every 10 s
   */
  readonly onStoreError?: (error: unknown) => void;
  /**
   * Told about unexpected failures (answered 500).
   *
   * @default console.error
   */
  readonly onError?: (error: unknown, request: Request) => void;
  /**
   * Clock, in milliseconds since the epoch.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/**
 * The MCP resource `agentAuth` mints tokens for (served by `mcpEndpoint` from `portcullis/mcp`).
 *
 * @example
 * ```ts
 * import type { AgentMcpOptions } from "portcullis/agentauth";
 *
 * // Clients ask for list_notes first, and step up to the other tools when a call needs them.
 * const mcp: AgentMcpOptions = { path: "/mcp", scopes: ["list_notes"] };
 * ```
 */
export interface AgentMcpOptions {
  /**
   * Where the endpoint is served, on the issuer's origin; its resource identifier is `<origin><path>`.
   *
   * @default "/mcp"
   */
  readonly path?: string;
  /**
   * The scopes its metadata and 401 challenges name, which MCP clients ask for
   * first; a client steps up to the others when a call answers 403
   * `insufficient_scope`. Each must be a tool (a capability with a handler).
   *
   * @default every tool
   */
  readonly scopes?: readonly string[];
  /**
   * Spend each token on its first request, as at the execute URL; that
   * request carries one message (a JSON-RPC batch is refused). Off, a token
   * is reused until it expires (MCP clients send the same one on every
   * message) and the grant is read again on every request, so a revocation
   * holds from the next one.
   *
   * @default false
   */
  readonly singleUseBearer?: boolean;
}

export const DEFAULT_PATHS: Required<AgentAuthPaths> = {
  discovery: "/.well-known/agent-configuration",
  capabilities: "/capability/list",
  execute: "/capability/execute",
  deviceAuthorization: "/oauth/device_authorization",
  token: "/oauth/token",
  jwks: "/.well-known/jwks.json",
  verification: "/agent/approve",
};

const OPTION_NAMES = [
  "issuer",
  "capabilities",
  "clients",
  "keys",
  "providerName",
  "description",
  "paths",
  "stores",
  "tokenTtlSeconds",
  "grantTtlSeconds",
  "maxGrantsPerApprover",
  "maxGrantsPerAgent",
  "deviceCodeLifetimeSeconds",
  "pollIntervalSeconds",
  "approvalResponse",
  "maxBodyBytes",
  "storeTimeoutMs",
  "dpop",
  "mcp",
  "authorizationCode",
  "onEvent",
  "onStoreError",
  "onError",
  "now",
];

// The methods each store must have, by its key in `stores`.
const STORE_METHODS: Record<keyof AgentAuthStores, readonly string[]> = {
  grants: ["approve", "get", "listByPrincipal", "listByApprover", "revoke"],
  replay: ["setIfAbsent"],
  pending: ["create", "getByUserCode", "getByPrincipal", "delete"],
  deviceCodes: ["create", "findByUserCode", "decide", "poll"],
  userCodeAttempts: ["consume", "release"],
  authorizationCodes: ["create", "redeem"],
  refreshTokens: ["create", "find", "rotate", "revokeFamily"],
};

/** The numbers of `agentAuth`, checked: defaults filled in. */
export interface AgentAuthNumbers {
  readonly tokenTtlSeconds: number;
  readonly grantTtlSeconds: number;
  readonly grantLimits: GrantLimits;
  readonly deviceCodeLifetimeSeconds: number;
  readonly pollIntervalSeconds: number;
  readonly maxBodyBytes: number;
  readonly storeTimeoutMs: number;
  /** `dpop` checked, with the proof verifier and nonces it makes; absent when DPoP is off. */
  readonly dpop?: DpopSettings;
  /** `mcp` checked; absent when there is no MCP resource. */
  readonly mcp?: CheckedMcp;
  /** `authorizationCode` checked; absent when that grant is off. */
  readonly authorizationCode?: AuthorizationCodeSetup;
}

/** `mcp` with its defaults; `scopes` are checked against the capabilities once they are built. */
export interface CheckedMcp {
  readonly path: string;
  readonly scopes?: readonly string[];
  readonly singleUseBearer: boolean;
}

const WHERE = "agentAuth";

/**
 * Checks every option of `agentAuth` once, before anything is built, naming
 * the key the user wrote: the pieces it builds (`authorizationServer`,
 * `capabilityTokens`, `DeviceAuthorizationService`, the handlers) are then
 * handed only values they accept.
 */
export function checkAgentAuthOptions(options: AgentAuthOptions): AgentAuthNumbers {
  rejectUnknownKeys(WHERE, options, OPTION_NAMES);
  issuerUrlOption(WHERE, options.issuer);
  if (typeof options.clients?.get !== "function")
    throw new InvalidOptionsError(`${WHERE}: clients must implement ClientStore`);
  if (options.keys !== undefined && typeof options.keys?.jwks !== "function")
    throw new InvalidOptionsError(`${WHERE}: keys must be a KeySet`);
  for (const name of ["providerName", "description"] as const) {
    const value = options[name];
    if (value !== undefined && (typeof value !== "string" || value === ""))
      throw new InvalidOptionsError(`${WHERE}: ${name} must be a non-empty string`);
  }
  const callbacks = ["approvalResponse", "onEvent", "onStoreError", "onError", "now"];
  functionOptions(WHERE, options, callbacks);
  const paths = agentAuthPaths(options.paths);
  checkStores(options.stores);
  const mcp = options.mcp === undefined ? undefined : checkMcp(options.mcp, paths);
  const authorizationCode =
    options.authorizationCode === undefined
      ? undefined
      : checkAuthorizationCodeOptions(options.authorizationCode);
  if (
    authorizationCode !== undefined &&
    (Object.values(paths).includes(authorizationCode.path) || authorizationCode.path === mcp?.path)
  )
    throw new InvalidOptionsError(
      `${WHERE}: authorizationCode.path collides with another endpoint`,
    );
  const registration = authorizationCode?.dynamicRegistration?.path;
  if (
    registration !== undefined &&
    (Object.values(paths).includes(registration) ||
      registration === mcp?.path ||
      registration === authorizationCode?.path)
  )
    throw new InvalidOptionsError(
      `${WHERE}: authorizationCode.dynamicRegistration.path collides with another endpoint`,
    );
  const dpop =
    options.dpop === undefined
      ? undefined
      : dpopSettings(options.dpop, {
          clockToleranceSeconds: CAPABILITY_CLOCK_TOLERANCE_SECONDS,
          now: options.now ?? Date.now,
        });
  return {
    ...(dpop === undefined ? {} : { dpop }),
    ...(mcp === undefined ? {} : { mcp }),
    ...(authorizationCode === undefined ? {} : { authorizationCode }),
    tokenTtlSeconds: integerOption(WHERE, "tokenTtlSeconds", options.tokenTtlSeconds, 120, 1, 3600),
    grantTtlSeconds: grantTtl(options.grantTtlSeconds),
    grantLimits: {
      perApprover: integerOption(
        WHERE,
        "maxGrantsPerApprover",
        options.maxGrantsPerApprover,
        DEFAULT_GRANT_LIMITS.perApprover,
        1,
        1_000_000,
      ),
      perPrincipal: integerOption(
        WHERE,
        "maxGrantsPerAgent",
        options.maxGrantsPerAgent,
        DEFAULT_GRANT_LIMITS.perPrincipal,
        1,
        10_000_000,
      ),
    },
    deviceCodeLifetimeSeconds: integerOption(
      WHERE,
      "deviceCodeLifetimeSeconds",
      options.deviceCodeLifetimeSeconds,
      600,
      1,
      86_400,
    ),
    pollIntervalSeconds: integerOption(
      WHERE,
      "pollIntervalSeconds",
      options.pollIntervalSeconds,
      5,
      1,
      300,
    ),
    maxBodyBytes: bodyLimitOption(WHERE, options.maxBodyBytes, 65_536, 256),
    storeTimeoutMs: integerOption(WHERE, "storeTimeoutMs", options.storeTimeoutMs, 1000, 1, 60_000),
  };
}

function grantTtl(value: unknown): number {
  const seconds = value ?? 86_400;
  if (typeof seconds !== "number" || !Number.isSafeInteger(seconds) || seconds < 60)
    throw new InvalidOptionsError(`${WHERE}: grantTtlSeconds must be a whole number, 60 or more`);
  return seconds;
}

/** Every endpoint's path, defaults filled in; each an absolute path, no two alike. */
export function agentAuthPaths(paths: AgentAuthPaths | undefined): Required<AgentAuthPaths> {
  rejectUnknownKeys(`${WHERE}: paths`, paths, Object.keys(DEFAULT_PATHS));
  const out = { ...DEFAULT_PATHS, ...paths };
  for (const [name, value] of Object.entries(out)) mountPathOption(WHERE, `paths.${name}`, value);
  if (new Set(Object.values(out)).size !== Object.keys(out).length)
    throw new InvalidOptionsError(`${WHERE}: two endpoints share a path`);
  // The execute URL's metadata is served too (RFC 9728 §3.1): no endpoint may take its path.
  const metadata = protectedResourceMetadataUrl(
    new URL(out.execute, "https://issuer.invalid").href,
  );
  for (const [name, value] of Object.entries(out))
    if (value === pathOfUrl(metadata))
      throw new InvalidOptionsError(
        `${WHERE}: paths.${name} is where the execute URL's resource metadata is served`,
      );
  return out;
}

function checkMcp(mcp: AgentMcpOptions, paths: Required<AgentAuthPaths>): CheckedMcp {
  if (typeof mcp !== "object" || mcp === null || Array.isArray(mcp))
    throw new InvalidOptionsError(`${WHERE}: mcp must be an object`);
  rejectUnknownKeys(`${WHERE}: mcp`, mcp, ["path", "scopes", "singleUseBearer"]);
  const path = mcp.path ?? "/mcp";
  mountPathOption(WHERE, "mcp.path", path);
  const metadata = pathOfUrl(
    protectedResourceMetadataUrl(new URL(path, "https://issuer.invalid").href),
  );
  for (const [name, value] of Object.entries(paths))
    if (value === path || value === metadata)
      throw new InvalidOptionsError(`${WHERE}: mcp.path and paths.${name} collide`);
  const { scopes, singleUseBearer } = mcp;
  if (
    scopes !== undefined &&
    (!Array.isArray(scopes) || scopes.length === 0 || scopes.some((s) => typeof s !== "string"))
  )
    throw new InvalidOptionsError(`${WHERE}: mcp.scopes must be a non-empty list of tool names`);
  if (singleUseBearer !== undefined && typeof singleUseBearer !== "boolean")
    throw new InvalidOptionsError(`${WHERE}: mcp.singleUseBearer must be a boolean`);
  return {
    path,
    singleUseBearer: singleUseBearer ?? false,
    ...(scopes === undefined ? {} : { scopes: Object.freeze([...scopes]) }),
  };
}

function checkStores(stores: AgentAuthStores | undefined): void {
  rejectUnknownKeys(`${WHERE}: stores`, stores, Object.keys(STORE_METHODS));
  for (const [name, methods] of Object.entries(STORE_METHODS)) {
    const store = (stores as Record<string, unknown> | undefined)?.[name];
    if (store === undefined) continue;
    for (const method of methods) {
      if (typeof (store as Record<string, unknown> | null)?.[method] !== "function")
        throw new InvalidOptionsError(`${WHERE}: stores.${name} lacks ${method}`);
    }
  }
}
