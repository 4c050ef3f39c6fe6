import { isAuthenticated } from "../core/authentication.ts";
import { base64url, fromBase64url } from "../core/encoding.ts";
import type { Handler } from "../core/handler.ts";
import { refuseOtherMethods } from "../core/http-method.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { type CapabilityRegistry, listingOf } from "./capabilities.ts";
import { agentError, agentJson } from "./wire.ts";

const READ_METHODS = ["GET", "HEAD"];

/**
 * Options of `capabilitiesHandler`; `agentAuth` builds one for you.
 *
 * @example
 * ```ts
 * import { capabilitiesHandler, defineCapabilities } from "portcullis/agentauth";
 *
 * const list = capabilitiesHandler({
 *   registry: defineCapabilities([
 *     { name: "get_time", description: "Tells the time.", handler: () => ({ now: Date.now() }) },
 *   ]),
 *   discoveryUrl: "https://notes.example.com/.well-known/agent-configuration",
 * });
 * ```
 */
export interface CapabilitiesOptions {
  readonly registry: CapabilityRegistry;
  /** For the `AgentAuth` challenge of a 401. */
  readonly discoveryUrl: string;
}

/**
 * `GET /capability/list?limit=&cursor=`: every registered capability, sorted
 * by name (no per-agent filtering in v1), for authenticated, non-anonymous
 * callers only: a signed-in human or an agent authenticated by its credentials.
 */
export function capabilitiesHandler(options: CapabilitiesOptions): Handler {
  rejectUnknownKeys("capabilitiesHandler", options, ["registry", "discoveryUrl"]);
  const { registry, discoveryUrl } = options;
  return async (request) => {
    const refused = refuseOtherMethods(request, READ_METHODS);
    if (refused !== undefined) return refused;
    if (!isAuthenticated(request))
      return agentError("authentication_required", "authenticate to list capabilities", {
        challenges: [`AgentAuth discovery="${discoveryUrl}"`],
      });
    const query = new URL(request.url).searchParams;
    const limitText = query.get("limit") ?? "50";
    const limit = /^\d{1,3}$/.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= 1 && limit <= 100))
      return agentError("invalid_request", "limit must be a whole number from 1 to 100");
    const cursor = query.get("cursor");
    let after = "";
    if (cursor !== null) {
      const bytes = fromBase64url(cursor);
      const decoded = bytes === undefined ? undefined : new TextDecoder().decode(bytes);
      if (decoded === undefined || !/^[a-z0-9_]{1,64}$/.test(decoded))
        return agentError("invalid_request", "the cursor is not one this endpoint made");
      after = decoded;
    }
    const all = registry.all();
    const start = after === "" ? 0 : all.findIndex((capability) => capability.name > after);
    const page = start < 0 ? [] : all.slice(start, start + limit);
    const last = page[page.length - 1];
    const hasMore = start >= 0 && start + limit < all.length;
    return agentJson({
      capabilities: page.map(listingOf),
      has_more: hasMore,
      ...(hasMore && last !== undefined
        ? { next_cursor: base64url(new TextEncoder().encode(last.name)) }
        : {}),
    });
  };
}
