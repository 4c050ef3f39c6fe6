import { bearerToken } from "../core/bearer.ts";
import { readRequestBody } from "../core/body.ts";
import { InvalidOptionsError, JwtInvalidError, StoreUnavailableError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { reportError } from "../core/problem.ts";
import { effectiveStatus } from "./grants.ts";
import { consumeTokenId } from "./replay.ts";
import type { AgentRuntime } from "./runtime.ts";
import type { AgentSession } from "./session.ts";
import type { CapabilityClaims } from "./token.ts";
import { type AgentErrorCode, agentChallenges, agentError } from "./wire.ts";

/**
 * Options of `executeHandler`. With `agentAuth`, set `maxBodyBytes` there.
 *
 * @example
 * ```ts
 * import { executeHandler } from "portcullis/agentauth";
 *
 * // `agents` is what `await agentAuth({...})` returned.
 * const execute = executeHandler(agents.runtime, { maxBodyBytes: 16_384 });
 * ```
 */
export interface ExecuteOptions {
  /**
   * Largest request body, in bytes (256 or more; 413 beyond).
   *
   * @default 65_536
   */
  readonly maxBodyBytes?: number;
}

/**
 * `POST {execute}` with `{"capability", "arguments"}` and a capability token:
 * verify the token, consume its `jti` (a replay is refused), load the grant,
 * require it active and unexpired and the capability in token ∩ grant,
 * validate the arguments, then call the handler with an `AgentSession` whose
 * `capabilities` is exactly that intersection. `200 {"data": ...}`.
 */
export function executeHandler(runtime: AgentRuntime, options: ExecuteOptions = {}): Handler {
  rejectUnknownKeys("executeHandler", options, ["maxBodyBytes"]);
  const maxBodyBytes = options.maxBodyBytes ?? 65_536;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 256)
    throw new InvalidOptionsError(
      "executeHandler: maxBodyBytes must be a whole number, 256 or more",
    );
  const { urls, tokens, registry } = runtime;

  const deny = (
    error: AgentErrorCode,
    message: string,
    context: { principalId?: string; grantId?: string; capability?: string } = {},
    extra?: Record<string, unknown>,
  ): Response => {
    runtime.emit({ type: "execute.denied", error, ...context });
    const unauthorized = error === "authentication_required" || error === "invalid_jwt";
    return agentError(error, message, {
      ...(extra === undefined ? {} : { extra }),
      ...(unauthorized
        ? { challenges: agentChallenges(urls.discovery, error === "invalid_jwt") }
        : {}),
    });
  };

  return async (request) => {
    if (request.method !== "POST")
      return new Response(null, {
        status: 405,
        headers: { allow: "POST", "cache-control": "no-store" },
      });
    const token = bearerToken(request);
    if (token === null) return deny("authentication_required", "a capability token is required");
    if (token === undefined) return deny("invalid_jwt", "the capability token is invalid");
    try {
      let claims: CapabilityClaims;
      try {
        claims = await tokens.verify(token, urls.execute);
      } catch (error) {
        if (error instanceof JwtInvalidError)
          return deny("invalid_jwt", "the capability token is invalid");
        throw error;
      }
      const who = { principalId: claims.sub, grantId: claims.grant_id };
      const now = runtime.now();
      // Single use: the first presentation consumes the token, whatever follows.
      const fresh = await consumeTokenId(runtime, claims);
      if (!fresh) return deny("invalid_jwt", "the capability token was already used", who);

      const body = await readBody(request, maxBodyBytes);
      if (body instanceof Response) {
        runtime.emit({ type: "execute.denied", error: "invalid_request", ...who });
        return body;
      }
      const grant = await runtime.store(() => runtime.grants.get(claims.grant_id));
      if (grant === undefined || grant.principalId !== claims.sub)
        return deny("grant_revoked", "the grant is no longer valid", who);
      const status = effectiveStatus(grant, now);
      if (status === "revoked") return deny("grant_revoked", "the grant was revoked", who);
      if (status === "expired") return deny("grant_expired", "the grant has expired", who);

      const name = body.capability;
      const context = { ...who, capability: name };
      const capability = registry.get(name);
      if (capability === undefined)
        return deny("capability_not_found", "no capability has this name", context);
      const granted = claims.capabilities.filter((held) => grant.capabilities.includes(held));
      // Granted but served elsewhere: execute tokens never carry it, so say where it lives.
      if (
        (capability.location !== undefined || capability.handler === undefined) &&
        grant.capabilities.includes(name)
      )
        return deny("wrong_location", "this capability is served at its own location", context, {
          location: capability.location,
        });
      // (A capability without a handler was answered above whenever it is granted.)
      if (!granted.includes(name) || capability.handler === undefined)
        return deny("capability_not_granted", "the capability is not granted", context);
      const errors = capability.check(body.arguments);
      if (errors.length > 0)
        return deny("invalid_request", "the arguments do not match the input schema", context, {
          errors,
        });

      const session: AgentSession = Object.freeze({
        principalId: claims.sub,
        grantId: grant.grantId,
        approvedBy: grant.approvedBy,
        capabilities: Object.freeze(granted),
        tokenId: claims.jti,
        expiresAt: claims.exp,
      });
      const started = performance.now();
      let data: unknown;
      try {
        data = await capability.handler(body.arguments, session, request);
      } catch (error) {
        runtime.emit({
          type: "capability.executed",
          ...who,
          capability: name,
          tokenId: claims.jti,
          outcome: "error",
          durationMs: performance.now() - started,
        });
        reportError(runtime.onError, error, request);
        return agentError("internal_error", "the capability failed");
      }
      runtime.emit({
        type: "capability.executed",
        ...who,
        capability: name,
        tokenId: claims.jti,
        outcome: "ok",
        durationMs: performance.now() - started,
      });
      return new Response(JSON.stringify({ data: data ?? null }), {
        headers: { "content-type": "application/json", "cache-control": "no-store" },
      });
    } catch (error) {
      if (error instanceof StoreUnavailableError)
        return agentError("temporarily_unavailable", "try again shortly", { retryAfter: 1 });
      reportError(runtime.onError, error, request);
      return agentError("internal_error", "the request could not be completed");
    }
  };
}

interface ExecuteBody {
  readonly capability: string;
  readonly arguments: Readonly<Record<string, unknown>>;
}

async function readBody(request: Request, maxBytes: number): Promise<ExecuteBody | Response> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/json")
    return agentError("invalid_request", "the body must be application/json", { status: 415 });
  const read = await readRequestBody(request, maxBytes);
  if (read.outcome === "too_large")
    return agentError("invalid_request", `the body is larger than ${maxBytes} bytes`, {
      status: 413,
    });
  if (read.outcome === "unreadable")
    return agentError("invalid_request", "the body could not be read");
  const { bytes } = read;
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return agentError("invalid_request", "the body is not JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    return agentError("invalid_request", "the body must be a JSON object");
  const { capability, arguments: args } = parsed as Record<string, unknown>;
  if (typeof capability !== "string" || capability === "")
    return agentError("invalid_request", "capability must be a non-empty string");
  if (args !== undefined && (typeof args !== "object" || args === null || Array.isArray(args)))
    return agentError("invalid_request", "arguments must be a JSON object");
  return { capability, arguments: (args ?? {}) as Record<string, unknown> };
}
