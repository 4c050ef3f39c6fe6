import type { ContextSource } from "../core/context.ts";
import { type CapabilityRegistry, isExecutable } from "./capabilities.ts";
import { effectiveStatus, type Grant, type GrantStore, keyFits } from "./grants.ts";
import type { CapabilityTokens, MintedToken } from "./token.ts";

/** What `refreshCapabilityToken` needs besides the grants. */
export interface RefreshTokenConfig {
  readonly tokens: CapabilityTokens;
  readonly registry: CapabilityRegistry;
  /** The MCP endpoint, when tokens may be minted for it (`AgentRuntime` carries it). */
  readonly urls?: { readonly mcp?: string };
}

/** A narrower token than the grant allows, if wanted. */
export interface RefreshRequest {
  /**
   * A subset of the grant's capabilities.
   *
   * @default all of them
   */
  readonly capabilities?: readonly string[];
  /**
   * The execute URL, the MCP endpoint, or the `location` of a granted
   * capability; the token carries only the capabilities served there. For
   * the MCP endpoint it carries what was asked ∩ the grant ∩ the tools, as
   * MCP clients ask for every scope the resource names.
   *
   * @default the execute URL when any capability asked for is served there, else the location of the first
   */
  readonly audience?: string;
  /**
   * The RFC 7638 thumbprint of the key the token is bound to (`cnf.jkt`),
   * from a DPoP proof the channel verified.
   *
   * @default none — a bearer token
   */
  readonly jkt?: string;
}

export type RefreshResult =
  | {
      readonly ok: true;
      readonly token: MintedToken;
      readonly grant: Grant;
      readonly capabilities: readonly string[];
      readonly audience: string;
      /** The key the token is bound to, if it is. */
      readonly jkt?: string;
    }
  | {
      readonly ok: false;
      /**
       * No active, unexpired grant covers what was asked; or the audience is no
       * granted location; or no proof came while any active grant of the agent
       * is bound to a DPoP key (`dpop_proof_required`); or every grant that
       * covers it is bound to another key than the proof's (`bound_to_another_key`).
       */
      readonly reason:
        | "no_active_grant"
        | "capability_not_granted"
        | "invalid_audience"
        | "dpop_proof_required"
        | "bound_to_another_key";
    };

/**
 * Mints a fresh capability token for `principalId` from a grant re-read from
 * the store that is still active and unexpired, without a new approval. It
 * never creates a grant and never widens one. Of the agent's grants (one per
 * human who approved it), it takes the one whose token carries the most of
 * what was asked, the newest of equals; once any of them is bound to a DPoP
 * key, a request without a proof mints nothing, and a grant bound to a key
 * mints only for that key. Call it only from a channel
 * that has already authenticated `principalId` (the token endpoint's
 * `client_credentials` grant, a session- or API-key-gated endpoint, a job):
 * `ctx` is that channel's request or context, for the record only.
 */
export async function refreshCapabilityToken(
  _ctx: ContextSource | undefined,
  principalId: string,
  grants: GrantStore,
  tokenConfig: RefreshTokenConfig,
  request: RefreshRequest = {},
): Promise<RefreshResult> {
  const { tokens, registry } = tokenConfig;
  const now = tokens.now();
  const wanted =
    request.capabilities === undefined ? undefined : [...new Set(request.capabilities)];
  const active = (await grants.listByPrincipal(principalId)).filter(
    (grant) => grant.principalId === principalId && effectiveStatus(grant, now) === "active",
  );
  if (active.length === 0) return { ok: false, reason: "no_active_grant" };
  // Once the agent proved a key for any grant, it proves it for every token: a
  // leaked client secret alone mints nothing, whichever human's grant would serve.
  if (request.jkt === undefined && active.some((grant) => grant.jkt !== undefined))
    return { ok: false, reason: "dpop_proof_required" };
  const forTools = request.audience !== undefined && request.audience === tokenConfig.urls?.mcp;
  // What each grant would give: all that was asked (or, for MCP, the tools of it the grant holds).
  const given = (grant: Grant): readonly string[] | undefined => {
    const asked = wanted ?? grant.capabilities;
    if (!forTools)
      return asked.every((name) => grant.capabilities.includes(name)) ? asked : undefined;
    const held = asked.filter(
      (name) => grant.capabilities.includes(name) && isTool(registry, name),
    );
    return held.length === 0 ? undefined : held;
  };
  const covering = active.filter((candidate) => given(candidate) !== undefined);
  if (covering.length === 0) return { ok: false, reason: "capability_not_granted" };
  // A grant bound to a key mints only for that key; an unbound one, for the proof's key if any.
  const usable = covering.filter((candidate) => keyFits(candidate, request.jkt));
  if (usable.length === 0) return { ok: false, reason: "bound_to_another_key" };
  // The grant whose token carries the most of what was asked; of equals, the newest.
  let best: { grant: Grant; audience: string; capabilities: readonly string[] } | undefined;
  for (const grant of usable) {
    const asked = given(grant) as readonly string[];
    const target =
      request.audience === undefined
        ? tokenTarget(registry, asked, tokens.executeUrl)
        : resourceTarget(tokenConfig, asked, request.audience);
    if (
      target !== undefined &&
      (best === undefined || target.capabilities.length > best.capabilities.length)
    )
      best = { grant, ...target };
  }
  if (best === undefined) return { ok: false, reason: "invalid_audience" };
  const { grant, capabilities, audience } = best;
  const jkt = grant.jkt ?? request.jkt;
  const token = await tokens.mint({
    principalId,
    grantId: grant.grantId,
    capabilities,
    audience,
    ...(jkt === undefined ? {} : { jkt }),
  });
  return { ok: true, token, grant, capabilities, audience, ...(jkt === undefined ? {} : { jkt }) };
}

/**
 * Where a token for `capabilities` can be used, and which of them it carries:
 * each capability is served at the execute URL or at its own `location`, and
 * a token has one audience. `audience` given: the capabilities served there
 * (`undefined` if none). Not given: the execute URL with the executable ones
 * when there are any, else the location of the first, with those served
 * there, so no token is minted where it could never be used.
 */
export function tokenTarget(
  registry: CapabilityRegistry,
  capabilities: readonly string[],
  executeUrl: string,
  audience?: string,
): { readonly audience: string; readonly capabilities: readonly string[] } | undefined {
  const servedAt = (name: string) => registry.get(name)?.location ?? executeUrl;
  const first = capabilities[0];
  const target =
    audience ??
    (first === undefined || capabilities.some((name) => servedAt(name) === executeUrl)
      ? executeUrl
      : servedAt(first));
  const carried = capabilities.filter((name) => servedAt(name) === target);
  // An empty set names nothing: a token for the execute URL (then refused at use) as before.
  if (carried.length === 0 && capabilities.length > 0) return undefined;
  return { audience: target, capabilities: carried };
}

/**
 * The token for `resource` from `capabilities`: at the MCP endpoint the tools
 * among them, elsewhere those served there (`tokenTarget`); `undefined` when
 * none is.
 */
export function resourceTarget(
  config: RefreshTokenConfig,
  capabilities: readonly string[],
  resource: string,
): { readonly audience: string; readonly capabilities: readonly string[] } | undefined {
  if (resource !== config.urls?.mcp)
    return tokenTarget(config.registry, capabilities, config.tokens.executeUrl, resource);
  const tools = capabilities.filter((name) => isTool(config.registry, name));
  return tools.length === 0 ? undefined : { audience: resource, capabilities: tools };
}

function isTool(registry: CapabilityRegistry, name: string): boolean {
  const capability = registry.get(name);
  return capability !== undefined && isExecutable(capability);
}
