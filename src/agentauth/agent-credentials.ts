import {
  AUTHORIZATION_VERIFIED,
  bindAuthentication,
  createAuthentication,
} from "../core/authentication.ts";
import { bindValue } from "../core/context.ts";
import { withDeadline } from "../core/deadline.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Middleware } from "../core/handler.ts";
import { rejectUnknownKeys, timeoutOption } from "../core/options.ts";
import { problemResponse } from "../core/problem.ts";
import { parseBasicClient, verifyClientSecret } from "../oauth2/client-authentication.ts";
import type { ClientStore } from "../oauth2/clients.ts";
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

/**
 * An authenticator for the chain's `authentication` slot: a request whose
 * `Authorization: Basic` names a registered agent client (client id or API
 * key id, form-urlencoded as at the token endpoint) is authenticated as that
 * agent, with the authority `AGENT`. A wrong secret is 401. A Basic header
 * naming no agent is left to the authenticators after this one (`basicAuth`
 * for humans). Capability tokens are never accepted here.
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
  return (next) =>
    async (request, ...rest) => {
      const header = request.headers.get("authorization");
      if (header === null || !/^basic /i.test(header) || header.length > 4096)
        return next(request, ...rest);
      const presented = parseBasicClient(header);
      if (presented === undefined) return next(request, ...rest);
      let client: Awaited<ReturnType<ClientStore["get"]>>;
      try {
        client = await withDeadline(clients.get(presented.id), timeoutMs, "the client store");
      } catch {
        return problemResponse(503, { headers: { "retry-after": "1" } });
      }
      if (client === undefined) return next(request, ...rest);
      if (!(await verifyClientSecret(client, presented.secret)))
        return problemResponse(401, {
          headers: { "www-authenticate": 'Basic realm="agents", charset="UTF-8"' },
        });
      bindValue(request, AUTHORIZATION_VERIFIED, true);
      bindAuthentication(
        request,
        createAuthentication(client.clientId, [AGENT_AUTHORITY], { kind: client.kind }),
      );
      return next(request, ...rest);
    };
}
