import { withEndpoints } from "../core/authentication.ts";
import { randomToken } from "../core/encoding.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Handler, Middleware } from "../core/handler.ts";
import { throttledConsole } from "../core/log.ts";
import { type LoginAttemptStore, MemoryLoginAttemptStore } from "../core/login-attempt-store.ts";
import { rejectUnknownKeys, timeoutOption } from "../core/options.ts";
import { pathOfUrl } from "../core/path.ts";
import { storeCaller } from "../core/store-call.ts";
import { httpsUrlOption } from "../core/url.ts";
import { generateKeySet, type KeySet } from "../jwt/index.ts";
import type { ClientStore } from "../oauth2/index.ts";
import {
  type AuthorizationServer,
  authorizationServer,
  DeviceAuthorizationService,
  type DeviceCodeStore,
  MemoryDeviceCodeStore,
  userCodeHash,
} from "../oauth2/index.ts";
import { agentCredentials, bindAgent, checkAgentCredentials } from "./agent-credentials.ts";
import {
  type AgentApprovalLookup,
  type AgentApproveOptions,
  agentApproveHandler,
  describeAgentRequest,
} from "./approve.ts";
import { type CapabilityDefinition, CapabilityRegistry } from "./capabilities.ts";
import { capabilitiesHandler } from "./capability-list.ts";
import { discoveryHandler } from "./discovery.ts";
import type { AgentEventListener } from "./events.ts";
import { executeHandler } from "./execute.ts";
import { type Grant, type GrantStore, MemoryGrantStore } from "./grants.ts";
import { capabilityRefreshGrant, newAccessTokenIssuer } from "./issuer.ts";
import { MemoryPendingRequestStore, type PendingRequestStore } from "./pending.ts";
import { type RefreshRequest, type RefreshResult, refreshCapabilityToken } from "./refresh.ts";
import { MemoryReplayStore, type ReplayStore } from "./replay.ts";
import { resolveSession } from "./resolve-session.ts";
import { approvalReviews } from "./review.ts";
import { type AgentRuntime, emitter } from "./runtime.ts";
import { type CapabilityTokens, capabilityTokens, type MintInput } from "./token.ts";
import { agentError } from "./wire.ts";

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
   * Told what happened: grants, tokens, executions, denials (ids only, never
   * a token). A listener that throws changes nothing.
   *
   * @default none — events are not reported
   */
  readonly onEvent?: AgentEventListener;
  /**
   * Told about store failures.
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

export interface AgentAuth {
  /** Serves discovery, the capability list, execute and the OAuth endpoints; `undefined` for other paths. */
  readonly route: (request: Request) => Promise<Response | undefined>;
  readonly discovery: Handler;
  readonly capabilities: Handler;
  readonly execute: Handler;
  /** The approval form's handler (`POST user_code` + `action`), for your page behind the session. */
  readonly approve: Handler;
  /**
   * For the chain's `authentication` slot: agents authenticate with their
   * client credentials. It also tells the chain which requests `route` serves:
   * there no authenticator touches `Authorization`, and each endpoint answers
   * every failure in its own protocol (OAuth `invalid_client`, agent `{error, message}`).
   */
  readonly authenticator: Middleware;
  /** Middleware protecting a capability's `location`. */
  resolveSession(location: string): Middleware;
  /** What a user code asks for, to show on the approval page. */
  describe(request: Request, userCode: unknown): Promise<AgentApprovalLookup>;
  /** A fresh token from an active grant (for a channel that authenticated `principalId`). */
  refresh(principalId: string, request?: RefreshRequest): Promise<RefreshResult>;
  /** Revokes a whole grant or some of its capabilities; idempotent and permanent. */
  revoke(grantId: string, capabilities?: readonly string[]): Promise<Grant | undefined>;
  /** The grants one human approved, newest first. */
  grantsApprovedBy(name: string): Promise<readonly Grant[]>;
  readonly paths: Required<AgentAuthPaths>;
  readonly runtime: AgentRuntime;
  readonly oauth: AuthorizationServer;
  readonly service: DeviceAuthorizationService;
  readonly keys: KeySet;
}

const DEFAULT_PATHS: Required<AgentAuthPaths> = {
  discovery: "/.well-known/agent-configuration",
  capabilities: "/capability/list",
  execute: "/capability/execute",
  deviceAuthorization: "/oauth/device_authorization",
  token: "/oauth/token",
  jwks: "/.well-known/jwks.json",
  verification: "/agent/approve",
};

/**
 * Capability authorization for agents, assembled: discovery, the capability
 * list, execute, the device flow whose approval creates a grant, refresh by
 * `client_credentials`, revocation, events. Mount `route` in front of your
 * router, behind the chain, and write the rules the README lists.
 */
export async function agentAuth(options: AgentAuthOptions): Promise<AgentAuth> {
  rejectUnknownKeys("agentAuth", options, [
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
    "deviceCodeLifetimeSeconds",
    "pollIntervalSeconds",
    "approvalResponse",
    "maxBodyBytes",
    "storeTimeoutMs",
    "onEvent",
    "onStoreError",
    "onError",
    "now",
  ]);
  const issuer = options.issuer;
  httpsUrlOption("agentAuth: issuer", issuer);
  rejectUnknownKeys("agentAuth: paths", options.paths, Object.keys(DEFAULT_PATHS));
  rejectUnknownKeys("agentAuth: stores", options.stores, [
    "grants",
    "replay",
    "pending",
    "deviceCodes",
    "userCodeAttempts",
  ]);
  const paths = { ...DEFAULT_PATHS, ...options.paths };
  const origin = new URL(issuer).origin;
  const url = (path: string) => new URL(path, origin).href;
  const registry =
    options.capabilities instanceof CapabilityRegistry
      ? options.capabilities
      : new CapabilityRegistry(options.capabilities);
  const grantTtlSeconds = options.grantTtlSeconds ?? 86_400;
  if (!Number.isSafeInteger(grantTtlSeconds) || grantTtlSeconds < 60)
    throw new InvalidOptionsError("agentAuth: grantTtlSeconds must be a whole number, 60 or more");
  for (const name of ["onEvent", "onStoreError", "onError", "now"] as const) {
    if (options[name] !== undefined && typeof options[name] !== "function")
      throw new InvalidOptionsError(`agentAuth: ${name} must be a function`);
  }
  const now = options.now ?? Date.now;
  const storeTimeoutMs = timeoutOption("agentAuth", "storeTimeoutMs", options.storeTimeoutMs, 1000);
  const keys = options.keys ?? (await generateKeySet());
  const stores = options.stores ?? {};
  const grants = stores.grants ?? new MemoryGrantStore();
  const replay = stores.replay ?? new MemoryReplayStore();
  const pending = stores.pending ?? new MemoryPendingRequestStore();
  checkStore("grants", grants, ["create", "get", "listByPrincipal", "listByApprover", "revoke"]);
  checkStore("replay", replay, ["setIfAbsent"]);
  checkStore("pending", pending, ["create", "getByUserCode", "getByPrincipal", "delete"]);
  const report = options.onStoreError ?? throttledConsole("an agent store failed");
  const memoryOnly =
    grants instanceof MemoryGrantStore &&
    replay instanceof MemoryReplayStore &&
    pending instanceof MemoryPendingRequestStore;

  const urls = {
    issuer,
    discovery: url(paths.discovery),
    capabilities: url(paths.capabilities),
    execute: url(paths.execute),
  };
  const minted = capabilityTokens({
    keys,
    issuer,
    executeUrl: urls.execute,
    now,
    ...(options.tokenTtlSeconds === undefined ? {} : { ttlSeconds: options.tokenTtlSeconds }),
  });
  const restart = replay instanceof MemoryReplayStore ? restartGuard(minted, now()) : undefined;
  const tokens = restart?.tokens ?? minted;
  const verificationUri = url(paths.verification);
  const runtime: AgentRuntime = Object.freeze({
    urls,
    registry,
    tokens,
    grants,
    replay,
    pending,
    reviews: approvalReviews({ keys, issuer, audience: verificationUri, now }),
    store: storeCaller({
      what: "an agent store",
      timeoutMs: storeTimeoutMs,
      report,
      timed: !memoryOnly,
    }),
    emit: emitter(options.onEvent),
    now,
    ...(restart === undefined ? {} : { predatesReplayStore: restart.predates }),
    ...(options.onError === undefined ? {} : { onError: options.onError }),
  });

  const service = new DeviceAuthorizationService({
    verificationUri,
    store: stores.deviceCodes ?? new MemoryDeviceCodeStore(),
    storeTimeoutMs,
    now,
    onStoreError: report,
    ...(options.deviceCodeLifetimeSeconds === undefined
      ? {}
      : { lifetimeSeconds: options.deviceCodeLifetimeSeconds }),
    ...(options.pollIntervalSeconds === undefined
      ? {}
      : { intervalSeconds: options.pollIntervalSeconds }),
    userCodeAttempts: { store: stores.userCodeAttempts ?? new MemoryLoginAttemptStore() },
  });
  const oauth = authorizationServer({
    issuer,
    service,
    clients: options.clients,
    keys,
    // A list, so the metadata publishes it as `scopes_supported`.
    scopes: registry.all().map((capability) => capability.name),
    issueAccessToken: newAccessTokenIssuer(runtime, grantTtlSeconds),
    clientCredentials: capabilityRefreshGrant(runtime),
    paths: { deviceAuthorization: paths.deviceAuthorization, token: paths.token, jwks: paths.jwks },
    storeTimeoutMs,
    // `begin` and `PendingRequestStore.create` together: what the agent asked for, by user code and by agent.
    onDeviceAuthorization: async ({ client, scope, userCode, expiresAt }) => {
      const hash = (await userCodeHash(userCode)) as string;
      await runtime.store(() =>
        pending.create({
          principalId: client.clientId,
          userCodeHash: hash,
          capabilities: scope,
          ...(client.name === undefined ? {} : { agentName: client.name }),
          createdAt: now(),
          expiresAt,
          grantId: randomToken(16),
        }),
      );
    },
    ...(options.onError === undefined ? {} : { onError: options.onError }),
  });
  const discovery = discoveryHandler({
    urls,
    oauth: oauth.metadata,
    verificationUri,
    ...(options.providerName === undefined ? {} : { providerName: options.providerName }),
    ...(options.description === undefined ? {} : { description: options.description }),
  });
  const listing = capabilitiesHandler({ registry, discoveryUrl: urls.discovery });
  // The list authenticates agents itself, so a refused credential is answered in the agent shape.
  const capabilities: Handler = async (request, ...rest) => {
    const check = await checkAgentCredentials(request, options.clients, storeTimeoutMs);
    if (check.outcome === "unavailable")
      return agentError("temporarily_unavailable", "the client store is unavailable", {
        retryAfter: 1,
      });
    if (check.outcome === "refused")
      return agentError("authentication_required", "these client credentials are not accepted", {
        challenges: [`AgentAuth discovery="${urls.discovery}"`],
      });
    if (check.outcome === "verified") bindAgent(request, check.client);
    return listing(request, ...rest);
  };
  const execute = executeHandler(runtime, {
    ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
  });
  const byPath = new Map<string, Handler>([
    [paths.discovery, discovery],
    [paths.capabilities, capabilities],
    [paths.execute, execute],
  ]);

  const oauthPaths = new Set(Object.values(oauth.paths));
  // The same test as `route`: exactly the requests it serves authenticate themselves.
  const serves = (request: Request) => {
    const path = pathOfUrl(request.url);
    return byPath.has(path) || oauthPaths.has(path);
  };

  return Object.freeze({
    route: async (request: Request) => {
      const handler = byPath.get(pathOfUrl(request.url));
      return handler === undefined ? oauth.route(request) : handler(request);
    },
    discovery,
    capabilities,
    execute,
    approve: agentApproveHandler(runtime, service, {
      ...(options.approvalResponse === undefined ? {} : { respond: options.approvalResponse }),
    }),
    authenticator: withEndpoints(
      agentCredentials({ clients: options.clients, storeTimeoutMs }),
      serves,
    ),
    resolveSession: (location: string) => resolveSession(runtime, location),
    describe: (request: Request, userCode: unknown) =>
      describeAgentRequest(runtime, service, request, userCode),
    refresh: (principalId: string, request?: RefreshRequest) =>
      runtime.store(() => refreshCapabilityToken(undefined, principalId, grants, runtime, request)),
    revoke: async (grantId: string, revoked?: readonly string[]) => {
      const before = await runtime.store(() => grants.get(grantId));
      const after = await runtime.store(() => grants.revoke(grantId, revoked, now()));
      if (before !== undefined && after !== undefined) {
        const removed = before.capabilities.filter((name) => !after.capabilities.includes(name));
        if (removed.length > 0 || (before.status !== "revoked" && after.status === "revoked"))
          runtime.emit({
            type: "grant.revoked",
            grantId,
            principalId: after.principalId,
            capabilities: removed,
            whole: after.status === "revoked",
          });
      }
      return after;
    },
    grantsApprovedBy: (name: string) => runtime.store(() => grants.listByApprover(name)),
    paths: Object.freeze(paths),
    runtime,
    oauth,
    service,
    keys,
  });
}

// Tokens made in the first partial second whose ids are remembered; more are refused when used.
const MAX_EARLY_TOKENS = 10_000;

/**
 * A memory replay store starts empty, while imported keys and durable grants
 * outlive the process: a token issued before the store existed may have been
 * used, so it is refused. `iat` is in whole seconds, so the tokens this process
 * mints within its first partial second are told apart by their ids.
 */
function restartGuard(tokens: CapabilityTokens, startedAt: number) {
  const early = new Set<string>();
  return {
    tokens: Object.freeze({
      ...tokens,
      mint: async (input: MintInput) => {
        const token = await tokens.mint(input);
        const issuedAt = (token.expiresAt - token.expiresIn) * 1000;
        if (issuedAt < startedAt && early.size < MAX_EARLY_TOKENS) early.add(token.jti);
        return token;
      },
    }),
    predates: (issuedAtSeconds: number, jti: string) =>
      !(issuedAtSeconds * 1000 >= startedAt) && !early.has(jti),
  };
}

function checkStore(name: string, store: unknown, methods: readonly string[]): void {
  for (const method of methods) {
    if (typeof (store as Record<string, unknown>)?.[method] !== "function")
      throw new InvalidOptionsError(`agentAuth: stores.${name} lacks ${method}`);
  }
}
