import { reportError } from "../core/problem.ts";
import type { Capability, CapabilityHandler } from "./capabilities.ts";
import type { AgentRuntime } from "./runtime.ts";
import type { AgentDenial, AgentSession, OpenedSession } from "./session.ts";

/**
 * A call of a capability through an opened session, wherever it comes from
 * (the execute URL, an MCP `tools/call`): which capability may run, whether
 * its arguments hold, and running it. One place, so the two doors decide alike.
 */

/** Where a call came in, for its events; the execute URL's carry none. */
export type CallChannel = "execute" | "mcp";

/** A capability the session may run here, with its handler. */
export interface Dispatchable {
  readonly capability: Capability;
  readonly handler: CapabilityHandler;
}

/** The ids a refusal of `capability` for this session is told with. */
export function refusalContext(session: AgentSession, capability?: string) {
  return {
    principalId: session.principalId,
    grantId: session.grantId,
    ...(capability === undefined ? {} : { capability }),
  };
}

/**
 * The named capability, when it exists, runs here (it has a handler), and is
 * in token ∩ grant. A granted capability served at its own location is
 * `wrong_location`; one outside token ∩ grant is `capability_not_granted`.
 */
export function chooseCapability(
  runtime: AgentRuntime,
  { session, grant }: OpenedSession,
  name: string,
): Dispatchable | AgentDenial {
  const capability = runtime.registry.get(name);
  if (capability === undefined)
    return {
      ...refusalContext(session, name),
      error: "capability_not_found",
      message: "no capability has this name",
    };
  const { handler } = capability;
  // Granted but served elsewhere: tokens for here never carry it, so say where it lives.
  if (handler === undefined && grant.capabilities.includes(name))
    return {
      ...refusalContext(session, name),
      error: "wrong_location",
      message: "this capability is served at its own location",
      extra: { location: capability.location },
    };
  if (!session.capabilities.includes(name) || handler === undefined)
    return {
      ...refusalContext(session, name),
      error: "capability_not_granted",
      message: "the capability is not granted",
    };
  return { capability, handler };
}

/** The arguments against the capability's input schema. */
export function checkArguments(
  { capability }: Dispatchable,
  args: unknown,
  session: AgentSession,
): AgentDenial | undefined {
  const errors = capability.check(args);
  if (errors.length === 0) return undefined;
  return {
    ...refusalContext(session, capability.name),
    error: "invalid_request",
    message: "the arguments do not match the input schema",
    extra: { errors },
  };
}

/** What a handler answered: its data, or that it threw (reported to `onError`, never shown). */
export type CallOutcome = { readonly ok: true; readonly data: unknown } | { readonly ok: false };

/** Calls the handler, telling listeners the outcome and how long it took. */
export async function invokeCapability(
  runtime: AgentRuntime,
  request: Request,
  { capability, handler }: Dispatchable,
  args: Readonly<Record<string, unknown>>,
  session: AgentSession,
  channel: CallChannel,
): Promise<CallOutcome> {
  const started = performance.now();
  const executed = (outcome: "ok" | "error") =>
    runtime.emit({
      type: "capability.executed",
      principalId: session.principalId,
      grantId: session.grantId,
      capability: capability.name,
      tokenId: session.tokenId,
      outcome,
      durationMs: performance.now() - started,
      ...(channel === "execute" ? {} : { via: channel }),
    });
  try {
    const data = await handler(args, session, request);
    executed("ok");
    return { ok: true, data: data ?? null };
  } catch (error) {
    executed("error");
    reportError(runtime.onError, error, request);
    return { ok: false };
  }
}
