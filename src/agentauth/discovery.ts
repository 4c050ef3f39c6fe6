import type { Handler } from "../core/handler.ts";
import { refuseOtherMethods } from "../core/http-method.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import type { AuthorizationServerMetadata } from "../oauth2/index.ts";
import type { AgentUrls } from "./runtime.ts";
import { AGENT_AUTH_VERSION } from "./wire.ts";

const READ_METHODS = ["GET", "HEAD"];

/**
 * Options of `discoveryHandler`; `agentAuth` builds one for you.
 *
 * @example
 * ```ts
 * import { discoveryHandler } from "portcullis/agentauth";
 *
 * // `agents` is what `await agentAuth({...})` returned.
 * const discovery = discoveryHandler({
 *   urls: agents.runtime.urls,
 *   oauth: agents.oauth.metadata,
 *   verificationUri: "https://notes.example.com/agent/approve",
 *   providerName: "Notes",
 *   description: "Read and add notes.",
 * });
 * ```
 */
export interface DiscoveryOptions {
  readonly urls: AgentUrls;
  /** The OAuth metadata of the device flow the agents use. */
  readonly oauth: AuthorizationServerMetadata;
  /** The human approval page. */
  readonly verificationUri: string;
  /**
   * The `provider_name` agents see.
   *
   * @default the host of `urls.issuer`
   */
  readonly providerName?: string;
  /**
   * A short text telling agents what the service offers (the Agent Auth
   * draft requires one).
   *
   * @default "Capabilities of <provider name> for agents a human has approved."
   */
  readonly description?: string;
}

/**
 * `GET /.well-known/agent-configuration`: what an agent needs to start. Every
 * URL is absolute and fixed when built, from the configured issuer, never from
 * `Host` or forwarded headers.
 */
export function discoveryHandler(options: DiscoveryOptions): Handler {
  rejectUnknownKeys("discoveryHandler", options, [
    "urls",
    "oauth",
    "verificationUri",
    "providerName",
    "description",
  ]);
  const { urls, oauth } = options;
  const providerName = options.providerName ?? new URL(urls.issuer).host;
  const document = JSON.stringify({
    version: AGENT_AUTH_VERSION,
    provider_name: providerName,
    description:
      options.description ?? `Capabilities of ${providerName} for agents a human has approved.`,
    issuer: urls.issuer,
    default_location: urls.execute,
    algorithms: [],
    modes: ["delegated"],
    approval_methods: ["device_authorization"],
    endpoints: { capabilities: urls.capabilities, execute: urls.execute },
    device_authorization_endpoint: oauth.device_authorization_endpoint,
    token_endpoint: oauth.token_endpoint,
    verification_uri: options.verificationUri,
    ...(oauth.jwks_uri === undefined ? {} : { jwks_uri: oauth.jwks_uri }),
    // The token endpoint's list: one DPoP configuration serves both.
    ...(oauth.dpop_signing_alg_values_supported === undefined
      ? {}
      : { dpop_signing_alg_values_supported: oauth.dpop_signing_alg_values_supported }),
  });
  return async (request) => {
    const refused = refuseOtherMethods(request, READ_METHODS);
    if (refused !== undefined) return refused;
    return new Response(request.method === "HEAD" ? null : document, {
      headers: { "content-type": "application/json", "cache-control": "public, max-age=3600" },
    });
  };
}
