import { readJsonBody } from "../core/body.ts";
import type { Handler } from "../core/handler.ts";
import { methodNotAllowed } from "../core/http-method.ts";
import { bodyLimitOption, rejectUnknownKeys } from "../core/options.ts";
import {
  checkArguments,
  chooseCapability,
  type Dispatchable,
  invokeCapability,
  refusalContext,
} from "./capability-call.ts";
import { withDpopNonce } from "./dpop.ts";
import { agentFailure, openRequestSession, refuseAgent } from "./resolve-session.ts";
import type { AgentRuntime } from "./runtime.ts";
import {
  type AgentSession,
  INVALID_TOKEN,
  type OpenedSession,
  presentedToken,
  TOKEN_REQUIRED,
} from "./session.ts";
import { agentError } from "./wire.ts";

export { bearerToken } from "../core/bearer.ts";

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
 * open the agent session (`openAgentSession`: verify the token, consume its
 * `jti`, load the grant, require it the agent's, active and unexpired), then
 * read the body, require the capability in token ∩ grant, validate the
 * arguments, and call the handler with that session, whose `capabilities` is
 * exactly the intersection. `200 {"data": ...}`.
 */
export function executeHandler(runtime: AgentRuntime, options: ExecuteOptions = {}): Handler {
  const maxBodyBytes = checkedMaxBodyBytes(options);
  return async (request) => {
    if (request.method !== "POST") return methodNotAllowed("POST");
    const token = presentedToken(runtime, request);
    if (typeof token !== "string") return refusedToken(runtime, token, request);
    const opened = await openRequestSession(runtime, request, token, runtime.urls.execute);
    if (opened instanceof Response) return opened;
    let answer: Response;
    try {
      answer = await dispatch(runtime, request, opened, maxBodyBytes);
    } catch (error) {
      answer = agentFailure(runtime, error, request);
    }
    // Without DPoP there is no nonce to add: the answer is handed back as it is.
    return runtime.dpop === undefined ? answer : withDpopNonce(runtime, request, answer);
  };
}

function checkedMaxBodyBytes(options: ExecuteOptions): number {
  rejectUnknownKeys("executeHandler", options, ["maxBodyBytes"]);
  return bodyLimitOption("executeHandler", options.maxBodyBytes, 65_536, 256);
}

/** The refusal when no token (`null`) or a malformed one (`undefined`) is presented. */
function refusedToken(
  runtime: AgentRuntime,
  token: null | undefined,
  request: Request,
): Promise<Response> {
  const denial = token === null ? TOKEN_REQUIRED : INVALID_TOKEN;
  return refuseAgent(runtime, denial, runtime.urls.execute, request);
}

/** Reads the body (the token is already spent), picks the capability, checks its arguments, runs it. */
async function dispatch(
  runtime: AgentRuntime,
  request: Request,
  opened: OpenedSession,
  maxBodyBytes: number,
): Promise<Response> {
  const body = await readBody(request, maxBodyBytes);
  if (body instanceof Response) return refusedBody(runtime, opened.session, body);
  const chosen = chooseCapability(runtime, opened, body.capability);
  if ("error" in chosen) return refuseAgent(runtime, chosen, runtime.urls.execute);
  const invalid = checkArguments(chosen, body.arguments, opened.session);
  if (invalid !== undefined) return refuseAgent(runtime, invalid, runtime.urls.execute);
  return runCapability(runtime, request, chosen, body.arguments, opened);
}

function refusedBody(runtime: AgentRuntime, session: AgentSession, answer: Response): Response {
  runtime.emit({ type: "execute.denied", error: "invalid_request", ...refusalContext(session) });
  return answer;
}

/** Runs the capability and answers `200 {"data": ...}`, or a fixed 500 when the handler threw. */
async function runCapability(
  runtime: AgentRuntime,
  request: Request,
  chosen: Dispatchable,
  args: Readonly<Record<string, unknown>>,
  { session }: OpenedSession,
): Promise<Response> {
  const outcome = await invokeCapability(runtime, request, chosen, args, session, "execute");
  if (!outcome.ok) return agentError("internal_error", "the capability failed");
  return new Response(JSON.stringify({ data: outcome.data }), {
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
}

interface ExecuteBody {
  readonly capability: string;
  readonly arguments: Readonly<Record<string, unknown>>;
}

const BODY_FAILURES = {
  media_type: ["the body must be application/json", 415],
  too_large: ["the body is too large", 413],
  unreadable: ["the body could not be read", 400],
  malformed: ["the body is not JSON", 400],
} as const;

async function readBody(request: Request, maxBytes: number): Promise<ExecuteBody | Response> {
  const read = await readJsonBody(request, maxBytes);
  if (!read.ok) {
    const [message, status] = BODY_FAILURES[read.failure];
    const said =
      read.failure === "too_large" ? `the body is larger than ${maxBytes} bytes` : message;
    return agentError("invalid_request", said, { status });
  }
  const parsed = read.value;
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    return agentError("invalid_request", "the body must be a JSON object");
  const { capability, arguments: args } = parsed as Record<string, unknown>;
  if (typeof capability !== "string" || capability === "")
    return agentError("invalid_request", "capability must be a non-empty string");
  if (args !== undefined && (typeof args !== "object" || args === null || Array.isArray(args)))
    return agentError("invalid_request", "arguments must be a JSON object");
  return { capability, arguments: (args ?? {}) as Record<string, unknown> };
}
