import { withEndpoints } from "../core/authentication.ts";
import { randomToken } from "../core/encoding.ts";
import type { Handler, Middleware } from "../core/handler.ts";
import { throttledConsole } from "../core/log.ts";
import { MemoryLoginAttemptStore } from "../core/login-attempt-store.ts";
import { pathOfUrl } from "../core/path.ts";
import { storeCaller } from "../core/store-call.ts";
import { generateKeySet, type KeySet } from "../jwt/index.ts";
import {
  type AuthorizationCodeStore,
  type AuthorizationServer,
  authorizationServer,
  type ClientStore,
  clientsWithRegistrations,
  type DeviceAuthorizationListener,
  DeviceAuthorizationService,
  MemoryAuthorizationCodeStore,
  MemoryDeviceCodeStore,
  MemoryRefreshTokenStore,
  protectedResourceMetadata,
  protectedResourceMetadataEndpoint,
  protectedResourceMetadataUrl,
  type RefreshTokenStore,
  registrationEndpoint,
  type TokenEndpointDpop,
  userCodeHash,
} from "../oauth2/index.ts";
import {
  type AgentAuthNumbers,
  type AgentAuthOptions,
  type AgentAuthPaths,
  agentAuthPaths,
  checkAgentAuthOptions,
} from "./agent-auth-options.ts";
import { agentCredentials, bindAgent, checkAgentCredentials } from "./agent-credentials.ts";
import { type AgentApprovalLookup, agentApproveHandler } from "./approve.ts";
import {
  type AuthorizationCodeSetup,
  authorizeHandler,
  codeTokenIssuer,
  grantRevoker,
} from "./authorize.ts";
import { CapabilityRegistry, toolNames } from "./capabilities.ts";
import { capabilitiesHandler } from "./capability-list.ts";
import { discoveryHandler } from "./discovery.ts";
import { type DpopSettings, spendProof } from "./dpop.ts";
import { executeHandler } from "./execute.ts";
import { grantOperations } from "./grant-operations.ts";
import { type Grant, MemoryGrantStore } from "./grants.ts";
import { capabilityRefreshGrant, newAccessTokenIssuer } from "./issuer.ts";
import { mcpSettings } from "./mcp-resource.ts";
import { MemoryPendingRequestStore } from "./pending.ts";
import type { RefreshRequest, RefreshResult } from "./refresh.ts";
import { MemoryReplayStore } from "./replay.ts";
import { restartGuard } from "./restart-guard.ts";
import { approvalReviews } from "./review.ts";
import { type AgentRuntime, emitter } from "./runtime.ts";
import { capabilityTokens } from "./token.ts";
import { agentError } from "./wire.ts";

export type {
  AgentAuthOptions,
  AgentAuthPaths,
  AgentAuthStores,
  AgentMcpOptions,
} from "./agent-auth-options.ts";

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
  /**
   * `revoke`, for the human behind an "agents I have approved" page: only a
   * grant `name` approved is touched; any other grant id answers `undefined`
   * and changes nothing, so a form's `grant_id` cannot reach another person's.
   */
  revokeApprovedBy(
    name: string,
    grantId: string,
    capabilities?: readonly string[],
  ): Promise<Grant | undefined>;
  /**
   * The agents one human approved, for their "agents I have approved" page:
   * one grant per agent (its active one, else the last that ended), newest first.
   */
  grantsApprovedBy(name: string): Promise<readonly Grant[]>;
  readonly paths: Required<AgentAuthPaths>;
  readonly runtime: AgentRuntime;
  readonly oauth: AuthorizationServer;
  readonly service: DeviceAuthorizationService;
  readonly keys: KeySet;
}

/** The options, checked, with what was built from them: what each part below is made from. */
interface Setup {
  readonly options: AgentAuthOptions;
  readonly numbers: AgentAuthNumbers;
  readonly paths: Required<AgentAuthPaths>;
  readonly keys: KeySet;
  /** An absolute URL on the issuer's origin. */
  readonly url: (path: string) => string;
  /** Where the execute URL's protected resource metadata is served (RFC 9728 §3.1). */
  readonly executeMetadata: string;
  /** The MCP resource and where its metadata is served, when there is one. */
  readonly mcp?: { readonly url: string; readonly metadata: string };
  readonly report: (error: unknown) => void;
}

/**
 * Capability authorization for agents, assembled: discovery, the capability
 * list, execute, the device flow whose approval creates a grant, refresh by
 * `client_credentials`, revocation, events. Mount `route` in front of your
 * router, behind the chain, and write the rules the README lists.
 */
export async function agentAuth(options: AgentAuthOptions): Promise<AgentAuth> {
  const numbers = checkAgentAuthOptions(options);
  const origin = new URL(options.issuer).origin;
  const paths = agentAuthPaths(options.paths);
  const url = (path: string) => new URL(path, origin).href;
  const setup: Setup = {
    options,
    numbers,
    paths,
    keys: options.keys ?? (await generateKeySet()),
    url,
    executeMetadata: protectedResourceMetadataUrl(url(paths.execute)),
    ...(numbers.mcp === undefined
      ? {}
      : {
          mcp: {
            url: url(numbers.mcp.path),
            metadata: protectedResourceMetadataUrl(url(numbers.mcp.path)),
          },
        }),
    report: options.onStoreError ?? throttledConsole("an agent store failed"),
  };
  const runtime = agentRuntime(setup);
  const service = deviceService(setup, runtime);
  const codes = codeFlow(setup);
  const oauth = agentOAuth(setup, runtime, service, codes);
  const byPath = new Map<string, Handler>([
    [setup.paths.discovery, agentDiscovery(setup, runtime, oauth)],
    [setup.paths.capabilities, capabilityList(setup, runtime)],
    [setup.paths.execute, executeHandler(runtime, { maxBodyBytes: numbers.maxBodyBytes })],
    [pathOfUrl(setup.executeMetadata), executeMetadata(setup, runtime)],
  ]);
  if (setup.mcp !== undefined)
    byPath.set(pathOfUrl(setup.mcp.metadata), mcpMetadata(setup, runtime));
  // Registration authenticates nobody: it answers in RFC 7591's shape whatever the chain holds.
  const registration = codes?.setup.dynamicRegistration;
  if (codes !== undefined && registration !== undefined)
    byPath.set(
      registration.path,
      registrationEndpoint({
        settings: registration,
        storeTimeoutMs: numbers.storeTimeoutMs,
        now: runtime.now,
        maxBodyBytes: REGISTRATION_BODY_BYTES,
        redirectUris: codes.setup.redirectUris,
      }),
    );
  const oauthPaths = new Set<string>(Object.values(oauth.paths));
  // The MCP endpoint authenticates itself too, though `mcpEndpoint` serves it.
  if (setup.mcp !== undefined) oauthPaths.add(pathOfUrl(setup.mcp.url));
  // The requests `route` serves, and the MCP endpoint: exactly these authenticate themselves.
  const serves = (request: Request) => {
    const path = pathOfUrl(request.url);
    return byPath.has(path) || oauthPaths.has(path);
  };
  // Not among `serves`: the human approving is authenticated by the chain, like any page.
  const pages = new Map<string, Handler>();
  if (codes !== undefined) pages.set(codes.setup.path, authorizeEndpoint(setup, runtime, codes));
  return Object.freeze({
    route: async (request: Request) => {
      const path = pathOfUrl(request.url);
      return (byPath.get(path) ?? pages.get(path) ?? oauth.route)(request);
    },
    discovery: byPath.get(setup.paths.discovery) as Handler,
    capabilities: byPath.get(setup.paths.capabilities) as Handler,
    execute: byPath.get(setup.paths.execute) as Handler,
    approve: agentApproveHandler(runtime, service, {
      ...(options.approvalResponse === undefined ? {} : { respond: options.approvalResponse }),
    }),
    authenticator: withEndpoints(
      agentCredentials({ clients: options.clients, storeTimeoutMs: numbers.storeTimeoutMs }),
      serves,
    ),
    ...grantOperations(runtime, service),
    paths: Object.freeze(setup.paths),
    runtime,
    oauth,
    service,
    keys: setup.keys,
  });
}

/** What every agent handler shares: URLs, capabilities, tokens, stores, events, clock. */
function agentRuntime(setup: Setup): AgentRuntime {
  const { options, numbers, paths, keys, url, report } = setup;
  const { issuer } = options;
  const now = options.now ?? Date.now;
  const stores = options.stores ?? {};
  const grants = stores.grants ?? new MemoryGrantStore();
  const replay = stores.replay ?? new MemoryReplayStore();
  const pending = stores.pending ?? new MemoryPendingRequestStore();
  const urls = {
    issuer,
    discovery: url(paths.discovery),
    capabilities: url(paths.capabilities),
    execute: url(paths.execute),
    executeMetadata: setup.executeMetadata,
    ...(setup.mcp === undefined ? {} : { mcp: setup.mcp.url, mcpMetadata: setup.mcp.metadata }),
  };
  const registry =
    options.capabilities instanceof CapabilityRegistry
      ? options.capabilities
      : new CapabilityRegistry(options.capabilities);
  const minted = capabilityTokens({
    keys,
    issuer,
    executeUrl: urls.execute,
    now,
    ttlSeconds: numbers.tokenTtlSeconds,
  });
  const restart = replay instanceof MemoryReplayStore ? restartGuard(minted, now()) : undefined;
  const memoryOnly =
    grants instanceof MemoryGrantStore &&
    replay instanceof MemoryReplayStore &&
    pending instanceof MemoryPendingRequestStore;
  return Object.freeze({
    urls,
    registry,
    tokens: restart?.tokens ?? minted,
    grants,
    grantLimits: numbers.grantLimits,
    replay,
    pending,
    reviews: approvalReviews({ keys, issuer, audience: url(paths.verification), now }),
    store: storeCaller({
      what: "an agent store",
      timeoutMs: numbers.storeTimeoutMs,
      report,
      timed: !memoryOnly,
    }),
    emit: emitter(options.onEvent),
    now,
    ...(restart === undefined ? {} : { predatesReplayStore: restart.predates }),
    ...(options.onError === undefined ? {} : { onError: options.onError }),
    ...(numbers.dpop === undefined ? {} : { dpop: numbers.dpop }),
    ...(numbers.mcp === undefined ? {} : { mcp: mcpSettings(numbers.mcp, registry) }),
  });
}

/** The device flow humans approve agents through. */
function deviceService(setup: Setup, runtime: AgentRuntime): DeviceAuthorizationService {
  const { numbers } = setup;
  const stores = setup.options.stores ?? {};
  return new DeviceAuthorizationService({
    verificationUri: setup.url(setup.paths.verification),
    store: stores.deviceCodes ?? new MemoryDeviceCodeStore(),
    storeTimeoutMs: numbers.storeTimeoutMs,
    now: runtime.now,
    onStoreError: setup.report,
    lifetimeSeconds: numbers.deviceCodeLifetimeSeconds,
    intervalSeconds: numbers.pollIntervalSeconds,
    userCodeAttempts: { store: stores.userCodeAttempts ?? new MemoryLoginAttemptStore() },
  });
}

/** The OAuth endpoints: device authorization, and a token endpoint that mints capability tokens. */
function agentOAuth(
  setup: Setup,
  runtime: AgentRuntime,
  service: DeviceAuthorizationService,
  codes: CodeFlow | undefined,
): AuthorizationServer {
  const { options, paths, numbers } = setup;
  return authorizationServer({
    issuer: options.issuer,
    service,
    clients: codes?.clients ?? options.clients,
    keys: setup.keys,
    // A list, so the metadata publishes it as `scopes_supported`.
    scopes: runtime.registry.all().map((capability) => capability.name),
    issueAccessToken: newAccessTokenIssuer(runtime, numbers.grantTtlSeconds),
    clientCredentials: capabilityRefreshGrant(runtime),
    protectedResources: [
      runtime.urls.execute,
      ...(runtime.urls.mcp === undefined ? [] : [runtime.urls.mcp]),
    ],
    paths: { deviceAuthorization: paths.deviceAuthorization, token: paths.token, jwks: paths.jwks },
    storeTimeoutMs: numbers.storeTimeoutMs,
    onDeviceAuthorization: recordPendingRequest(runtime),
    ...(runtime.dpop === undefined ? {} : { dpop: tokenEndpointDpop(runtime, runtime.dpop) }),
    ...(codes === undefined
      ? {}
      : {
          // Authorization-code clients are public: PKCE, not a secret, binds a code to its client.
          publicClients: true,
          authorizationCode: {
            codes: codes.store,
            refreshTokens: codes.refreshTokens,
            issue: codeTokenIssuer(runtime),
            revokeGrant: grantRevoker(runtime),
            refreshTokenTtlSeconds: codes.setup.refreshTokenTtlSeconds,
            authorizationPath: codes.setup.path,
            ...(codes.setup.options.clientMetadataDocuments === undefined
              ? {}
              : { clientMetadataDocuments: codes.setup.options.clientMetadataDocuments }),
            ...(codes.setup.dynamicRegistration === undefined
              ? {}
              : { registrationPath: codes.setup.dynamicRegistration.path }),
            now: runtime.now,
          },
        }),
    ...(options.onError === undefined ? {} : { onError: options.onError }),
  });
}

/** The authorization-code grant's parts, when it is on. */
interface CodeFlow {
  readonly setup: AuthorizationCodeSetup;
  readonly clients: ClientStore;
  readonly store: AuthorizationCodeStore;
  readonly refreshTokens: RefreshTokenStore;
}

// Twenty redirect URIs of 2000 characters and a name fit; anything larger is no client's metadata.
const REGISTRATION_BODY_BYTES = 65_536;

function codeFlow(setup: Setup): CodeFlow | undefined {
  const code = setup.numbers.authorizationCode;
  if (code === undefined) return undefined;
  const stores = setup.options.stores ?? {};
  const configured = setup.options.clients;
  const registered = code.dynamicRegistration?.clients;
  return {
    setup: code,
    // Metadata document clients are the endpoints' own to look up, by their priority and bounds.
    clients:
      registered === undefined
        ? configured
        : clientsWithRegistrations(configured, registered, setup.options.now ?? Date.now),
    store: stores.authorizationCodes ?? new MemoryAuthorizationCodeStore(),
    refreshTokens: stores.refreshTokens ?? new MemoryRefreshTokenStore(),
  };
}

/** The authorization endpoint: a human's page behind the chain, so it is no self-authenticating endpoint. */
function authorizeEndpoint(setup: Setup, runtime: AgentRuntime, codes: CodeFlow): Handler {
  const resources = [runtime.urls.mcp, runtime.urls.execute].filter(
    (url): url is string => url !== undefined,
  );
  return authorizeHandler({
    runtime,
    setup: codes.setup,
    codes: codes.store,
    keys: setup.keys,
    grantTtlSeconds: setup.numbers.grantTtlSeconds,
    policy: {
      clients: codes.clients,
      storeTimeoutMs: setup.numbers.storeTimeoutMs,
      now: runtime.now,
      ...(codes.setup.options.clientMetadataDocuments === undefined
        ? {}
        : { clientMetadataDocuments: codes.setup.options.clientMetadataDocuments }),
      allowed: (name) => runtime.registry.has(name),
      resources,
      redirectUris: codes.setup.redirectUris,
    },
  });
}

/** The token endpoint checks proofs with the same verifier, nonces and replay store as execute. */
function tokenEndpointDpop(runtime: AgentRuntime, dpop: DpopSettings): TokenEndpointDpop {
  return {
    verifyProof: dpop.verifyProof,
    consumeProof: (proof) => spendProof(runtime, dpop, proof),
    ...(dpop.nonces === undefined ? {} : { nonces: dpop.nonces }),
    required: dpop.required,
    algorithms: dpop.algorithms,
  };
}

/**
 * `begin` and `PendingRequestStore.create` together: what the agent asked
 * for, by user code and by agent, for the approval page.
 */
function recordPendingRequest(runtime: AgentRuntime): DeviceAuthorizationListener {
  return async ({ client, scope, userCode, expiresAt }) => {
    const hash = (await userCodeHash(userCode)) as string;
    await runtime.store(() =>
      runtime.pending.create({
        principalId: client.clientId,
        userCodeHash: hash,
        capabilities: scope,
        ...(client.name === undefined ? {} : { agentName: client.name }),
        createdAt: runtime.now(),
        expiresAt,
        grantId: randomToken(16),
      }),
    );
  };
}

function agentDiscovery(setup: Setup, runtime: AgentRuntime, oauth: AuthorizationServer): Handler {
  const { options } = setup;
  return discoveryHandler({
    urls: runtime.urls,
    oauth: oauth.metadata,
    verificationUri: setup.url(setup.paths.verification),
    providerName: providerName(setup),
    ...(options.description === undefined ? {} : { description: options.description }),
  });
}

/** The `provider_name` of discovery, also the execute URL's `resource_name`. */
function providerName({ options }: Setup): string {
  return options.providerName ?? new URL(options.issuer).host;
}

/**
 * The execute URL's protected resource metadata (RFC 9728): the scopes are
 * the capabilities execute serves, and with DPoP on, its proof algorithms.
 */
function executeMetadata(setup: Setup, runtime: AgentRuntime): Handler {
  return resourceMetadata(setup, runtime, runtime.urls.execute, toolNames(runtime.registry));
}

/** The MCP endpoint's protected resource metadata: its scopes are the ones clients ask for first. */
function mcpMetadata(setup: Setup, runtime: AgentRuntime): Handler {
  const { urls, mcp } = runtime as Required<Pick<AgentRuntime, "mcp">> & AgentRuntime;
  return resourceMetadata(setup, runtime, urls.mcp as string, mcp.scopes);
}

function resourceMetadata(
  setup: Setup,
  runtime: AgentRuntime,
  resource: string,
  scopes: readonly string[],
): Handler {
  const { dpop } = runtime;
  return protectedResourceMetadataEndpoint(
    protectedResourceMetadata({
      resource,
      authorizationServers: [setup.options.issuer],
      scopes,
      name: providerName(setup),
      ...(dpop === undefined
        ? {}
        : { dpop: { algorithms: dpop.algorithms, required: dpop.required } }),
    }),
  );
}

/** The capability list authenticates agents itself, so a refused credential is answered in the agent shape. */
function capabilityList({ options, numbers }: Setup, runtime: AgentRuntime): Handler {
  const { discovery } = runtime.urls;
  const listing = capabilitiesHandler({ registry: runtime.registry, discoveryUrl: discovery });
  return async (request, ...rest) => {
    const check = await checkAgentCredentials(request, options.clients, numbers.storeTimeoutMs);
    if (check.outcome === "unavailable")
      return agentError("temporarily_unavailable", "the client store is unavailable", {
        retryAfter: 1,
      });
    if (check.outcome === "refused")
      return agentError("authentication_required", "these client credentials are not accepted", {
        challenges: [`AgentAuth discovery="${discovery}"`],
      });
    if (check.outcome === "verified") bindAgent(request, check.client);
    return listing(request, ...rest);
  };
}
