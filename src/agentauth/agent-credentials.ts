import {
  AUTHORIZATION_VERIFIED,
  bindAuthentication,
  createAuthentication,
  endpointAuthenticates,
} from "../core/authentication.ts";
import { bindValue } from "../core/context.ts";
import { withDeadline } from "../core/deadline.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { directLeg, type Middleware } from "../core/handler.ts";
import { rejectUnknownKeys, timeoutOption } from "../core/options.ts";
import { problemResponse } from "../core/problem.ts";
import type { ClientStore, OAuthClient } from "../oauth2/index.ts";
import { parseBasicClient, verifyClientSecret } from "../oauth2/index.ts";
import { AGENT_AUTHORITY } from "./resolve-session.ts";

/**
 * Options of `agentCredentials`.
 *
 * @example
 * ```ts
 * import { authz, basicAuth, newHandler } from "portcullis";
 * import { agentCredentials } from "portcullis/agentauth";
 *
 * const handler = newHandler(app.fetch, {
 *   // Agents first: a Basic header naming no agent goes on to the human users.
 *   authentication: [
 *     agentCredentials({ clients, storeTimeoutMs: 500 }),
 *     basicAuth({ credentials, required: false }),
 *   ],
 *   authorization: authz.routes([authz.anyRequest().authenticated()]),
 * });
 * ```
 */
export interface AgentCredentialsOptions {
  /** The agents' OAuth clients and API keys. */
  readonly clients: ClientStore;
  /**
   * A client-store call not answered within this many ms fails (503).
   *
   * @default 1000
   */
  readonly storeTimeoutMs?: number;
}

/** What an `Authorization: Basic` header says about an agent. */
export type AgentCredentialCheck =
  | { readonly outcome: "absent" }
  /** Malformed, an unknown client id or a wrong secret: told apart by nothing, time included. */
  | { readonly outcome: "refused" }
  | { readonly outcome: "unavailable" }
  | { readonly outcome: "verified"; readonly client: OAuthClient };

/**
 * Checks `Authorization: Basic` as an agent's client credentials. An unknown
 * client id costs the same secret comparison as a wrong secret.
 */
export async function checkAgentCredentials(
  request: Request,
  clients: ClientStore,
  timeoutMs: number,
): Promise<AgentCredentialCheck> {
  const header = request.headers.get("authorization");
  if (header === null || !/^basic(?: |$)/i.test(header)) return { outcome: "absent" };
  const presented = header.length > 4096 ? undefined : parseBasicClient(header);
  if (presented === undefined) return { outcome: "refused" };
  let client: OAuthClient | undefined;
  try {
    client = await withDeadline(() => clients.get(presented.id), timeoutMs, "the client store");
  } catch {
    return { outcome: "unavailable" };
  }
  if (!(await verifyClientSecret(client, presented.secret)) || client === undefined)
    return { outcome: "refused" };
  return { outcome: "verified", client };
}

/** Binds `client` as the request's principal, with the authority `AGENT`. */
export function bindAgent(request: Request, client: OAuthClient): void {
  bindValue(request, AUTHORIZATION_VERIFIED, true);
  bindAuthentication(
    request,
    createAuthentication(client.clientId, [AGENT_AUTHORITY], { kind: client.kind }),
  );
}

/**
 * An authenticator for the chain's `authentication` slot: a request whose
 * `Authorization: Basic` names a registered agent client (client id or API
 * key id, form-urlencoded as at the token endpoint) with its secret is
 * authenticated as that agent, with the authority `AGENT`. Any other Basic
 * header, an unknown client id and a wrong secret alike, is left to the
 * authenticators after this one (`basicAuth` for humans, which answers a
 * failed one), so no answer tells which client ids exist; with none after it,
 * the request goes on as anonymous. Requests the chain marked
 * `ENDPOINT_AUTHENTICATES` are left alone. Capability tokens are never
 * accepted here.
 */
export function agentCredentials(options: AgentCredentialsOptions): Middleware {
  rejectUnknownKeys("agentCredentials", options, ["clients", "storeTimeoutMs"]);
  const clients = options.clients;
  if (typeof clients?.get !== "function")
    throw new InvalidOptionsError("agentCredentials: clients must implement ClientStore");
  const timeoutMs = timeoutOption(
    "agentCredentials",
    "storeTimeoutMs",
    options.storeTimeoutMs,
    1000,
  );
  return directLeg((next) => (request, ...rest) => {
    // The agent and OAuth endpoints authenticate their callers themselves: handed on at once.
    if (endpointAuthenticates(request)) return next(request, ...rest);
    return checkAgentCredentials(request, clients, timeoutMs).then((check) => {
      if (check.outcome === "unavailable")
        return problemResponse(503, { headers: { "retry-after": "1" } });
      if (check.outcome === "verified") bindAgent(request, check.client);
      return next(request, ...rest);
    });
  });
}
