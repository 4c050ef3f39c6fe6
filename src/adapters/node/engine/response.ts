import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { FieldList } from "../../../core/field-list.ts";
import type { ResponseOutbox } from "../../../core/outbox.ts";
import { lightHeaders, lightState } from "./light-response.ts";
import { lingerOnClose } from "./lingering-close.ts";

/** Headers of a pass-through answer that describe its (empty) body, not the route's. */
const BODY_HEADERS = new Set(["content-length", "transfer-encoding"]);

/**
 * Copies `headers` onto a Node response: each `Set-Cookie` appended on its own
 * (never joined: a joined list is one broken cookie), every other header set,
 * replacing a value an earlier middleware set. `skip` names headers to leave out.
 */
export function applyHeaders(
  res: ServerResponse,
  headers: Headers,
  skip?: (name: string) => boolean,
  withBodyHeaders = false,
): void {
  if (headers instanceof FieldList) {
    // A list of our own: one pass over the map, no sorted copy, no entry arrays.
    headers.forEachField((name, value) => {
      if ((!withBodyHeaders && BODY_HEADERS.has(name)) || skip?.(name)) return;
      res.setHeader(name, value);
    });
    for (const cookie of headers.cookies()) res.appendHeader("set-cookie", cookie);
    return;
  }
  for (const [name, value] of headers) {
    if (name === "set-cookie" || BODY_HEADERS.has(name) || skip?.(name)) continue;
    res.setHeader(name, value);
  }
  for (const cookie of headers.getSetCookie()) res.appendHeader("set-cookie", cookie);
}

/**
 * An error answered before the request body was read (a 401, a 403, a 413 for
 * a declared length over the limit): the answer says `Connection: close`, and
 * once it is out the connection closes the lingering way (`lingerOnClose`):
 * the client gets the answer even while it is still uploading, yet can neither
 * hold the connection open until the request timeout nor make the server read
 * more than a bounded part of a body nobody wants.
 */
export function closeAfterEarlyError(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
): void {
  if (status < 400 || req.complete || res.headersSent) return;
  // A request that announces no body has nothing left to read.
  if (req.headers["content-length"] === undefined && req.headers["transfer-encoding"] === undefined)
    return;
  res.setHeader("connection", "close");
  lingerOnClose(req, res);
  // Node closes the connection itself after `Connection: close`; this covers a framework that
  // took the header off again.
  res.once("finish", () => req.socket?.destroySoon?.());
}

/**
 * Calls `field` for every header field, each `Set-Cookie` on its own and
 * last; a list of our own is walked as it is held, without a sorted copy.
 */
export function eachField(headers: Headers, field: (name: string, value: string) => void): void {
  if (headers instanceof FieldList) {
    headers.forEachField(field);
    for (const cookie of headers.cookies()) field("set-cookie", cookie);
    return;
  }
  for (const [name, value] of headers) if (name !== "set-cookie") field(name, value);
  for (const cookie of headers.getSetCookie()) field("set-cookie", cookie);
}

/**
 * Writes a Fetch `Response` to a Node response: status, headers, then the
 * body. A body made from a string or bytes goes out with the head in one
 * write; any other is streamed chunk by chunk, waiting for `'drain'` when the
 * socket is full. A client that goes away cancels the body.
 */
export async function writeResponse(
  res: ServerResponse,
  response: Response,
  method: string | undefined,
): Promise<void> {
  await writeResponseNow(res, response, method);
}

/**
 * `writeResponse`, answering `undefined` when the whole answer went out
 * within the call (a string, bytes or no body) and a promise only when the
 * body streams. Throws what setting the head throws.
 */
export function writeResponseNow(
  res: ServerResponse,
  response: Response,
  method: string | undefined,
): Promise<void> | undefined {
  const light = lightState(response);
  if (light !== undefined) {
    res.statusCode = light.status;
    if (light.statusText !== "") res.statusMessage = light.statusText;
    if (light.headers !== undefined) applyHeaders(res, light.headers, undefined, true);
    else {
      const { pairs } = light;
      for (let i = 0; i < pairs.length; i += 2)
        res.setHeader(pairs[i] as string, pairs[i + 1] as string);
    }
    res.end(method === "HEAD" || light.body === null ? undefined : light.body);
    return undefined;
  }
  res.statusCode = response.status;
  if (response.statusText !== "") res.statusMessage = response.statusText;
  const fields = lightHeaders(response);
  if (fields !== undefined) applyHeaders(res, fields, undefined, true);
  else applyHeadersOf(res, response);
  const whole = wholeBody(response);
  if (whole !== undefined) {
    res.end(method === "HEAD" ? undefined : whole);
    return undefined;
  }
  const body = response.body;
  if (body === null) {
    res.end();
    return undefined;
  }
  if (method === "HEAD") {
    res.end();
    return body.cancel().catch(() => {});
  }
  return pipeBody(res, body);
}

// The runtime's Response keeps its state in a symbol slot (undici 6, Node 20 and 22), where a
// body made from a string or bytes keeps its source beside the stream made of it.
const RESPONSE_STATE = Object.getOwnPropertySymbols(new Response(null)).find(
  (slot) => slot.description === "state",
);

interface BodyState {
  readonly stream?: ReadableStream | null;
  readonly source?: unknown;
}

/** The string or bytes an unread body was made from, when the runtime tells; else `undefined`. */
export function wholeBody(response: Response): string | Uint8Array | undefined {
  if (RESPONSE_STATE === undefined) return undefined;
  const state = (response as unknown as Record<symbol, { body?: BodyState | null } | undefined>)[
    RESPONSE_STATE
  ];
  const body = state?.body;
  if (body === undefined || body === null) return undefined;
  const source = body.source;
  if (typeof source !== "string" && !(source instanceof Uint8Array)) return undefined;
  if (body.stream?.locked === true || response.bodyUsed) return undefined;
  return source;
}

/** Every header of the chain's own answer, its body headers included. */
function applyHeadersOf(res: ServerResponse, response: Response): void {
  for (const [name, value] of response.headers) {
    if (name !== "set-cookie") res.setHeader(name, value);
  }
  for (const cookie of response.headers.getSetCookie()) res.appendHeader("set-cookie", cookie);
}

/**
 * Streams a Web body into `res`, respecting backpressure; ends `res` when done.
 * Rejects with the body's own error, once the connection is cut, when the body fails.
 */
export async function pipeBody(
  res: ServerResponse,
  body: ReadableStream<Uint8Array>,
): Promise<void> {
  const reader = body.getReader();
  let closed = false;
  let wake: (() => void) | undefined;
  const onClose = () => {
    closed = true;
    wake?.();
    // A read may be waiting on a source with nothing to say yet (server-sent events): cancel
    // it now, so the source learns the client left and lets go of what it holds.
    reader.cancel().catch(() => {});
  };
  const onDrain = () => wake?.();
  res.on("close", onClose);
  res.on("drain", onDrain);
  try {
    for (;;) {
      if (closed || res.destroyed) {
        await reader.cancel().catch(() => {});
        return;
      }
      const { done, value } = await reader.read();
      if (closed) return;
      if (done) break;
      if (!res.write(value) && !closed) {
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    }
    res.end();
  } catch (error) {
    // A body that fails half-way cannot be answered any more: cut the connection, and let the
    // caller report why.
    res.destroy();
    await reader.cancel().catch(() => {});
    throw error;
  } finally {
    res.removeListener("close", onClose);
    res.removeListener("drain", onDrain);
    reader.releaseLock();
  }
}

// A mark on the response rather than a WeakSet entry: a weak collection insertion per request
// costs the garbage collector far more than a property (ephemerons are rescanned every scavenge).
const DRAINING = Symbol("portcullis.drainingOutbox");

/**
 * Makes `res` pick up response headers a leg queued after the chain returned
 * (a `session.save()` inside the route): they are taken from the request's
 * `outbox` when the head is written. Node's implicit head (`res.end()`
 * without `writeHead`) goes through `writeHead` as well. Installed once per
 * response; the wrapper is never removed, so wrappers added later keep working.
 */
export function drainOutboxOnHead(res: ServerResponse, outbox: ResponseOutbox): void {
  const marked = res as ServerResponse & { [DRAINING]?: true };
  if (Object.hasOwn(marked, DRAINING)) return;
  marked[DRAINING] = true;
  const writeHead = res.writeHead;
  let fired = false;
  const wrapped = function (this: ServerResponse, ...args: unknown[]) {
    const status = args[0];
    if (!fired && !(typeof status === "number" && status < 200)) {
      fired = true;
      if (!outbox.empty) {
        const late = new Headers();
        outbox.drainInto(late);
        mergeLateHeaders(res, args, late);
      }
    }
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  };
  res.writeHead = wrapped as ServerResponse["writeHead"];
}

/**
 * Adds `late` to a response about to write its head. Headers passed to
 * `writeHead` replace those set on `res`, so a name the call passes is merged
 * into the call's headers; any other goes on `res`.
 */
export function mergeLateHeaders(res: ServerResponse, args: unknown[], late: Headers): void {
  const index = typeof args[1] === "string" ? 2 : 1;
  const given = args[index];
  const cookies = late.getSetCookie();
  if (Array.isArray(given)) {
    const copy = [...given] as unknown[];
    const nested = copy.length > 0 && Array.isArray(copy[0]);
    const names = new Set<string>();
    if (nested)
      for (const pair of copy as [string, unknown][]) names.add(String(pair[0]).toLowerCase());
    else for (let i = 0; i < copy.length; i += 2) names.add(String(copy[i]).toLowerCase());
    const add = (name: string, value: string) => {
      if (nested) copy.push([name, value]);
      else copy.push(name, value);
    };
    for (const cookie of cookies) {
      if (names.has("set-cookie")) add("set-cookie", cookie);
      else res.appendHeader("set-cookie", cookie);
    }
    for (const [name, value] of late) {
      if (name === "set-cookie") continue;
      if (names.has(name)) {
        // Replace every occurrence: the outbox's value (no-store) must win.
        removePairs(copy, nested, name);
        add(name, value);
      } else {
        res.setHeader(name, value);
      }
    }
    args[index] = copy;
    return;
  }
  if (given !== null && typeof given === "object") {
    const copy: OutgoingHttpHeaders = { ...(given as OutgoingHttpHeaders) };
    const keyOf = (name: string) => Object.keys(copy).find((k) => k.toLowerCase() === name);
    const cookieKey = keyOf("set-cookie");
    if (cookies.length > 0) {
      if (cookieKey === undefined)
        for (const cookie of cookies) res.appendHeader("set-cookie", cookie);
      else copy[cookieKey] = [...toList(copy[cookieKey]), ...cookies];
    }
    for (const [name, value] of late) {
      if (name === "set-cookie") continue;
      const key = keyOf(name);
      if (key === undefined) res.setHeader(name, value);
      else copy[key] = value;
    }
    args[index] = copy;
    return;
  }
  for (const cookie of cookies) res.appendHeader("set-cookie", cookie);
  for (const [name, value] of late) if (name !== "set-cookie") res.setHeader(name, value);
}

function toList(value: OutgoingHttpHeaders[string]): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value.map(String) : [String(value)];
}

function removePairs(list: unknown[], nested: boolean, name: string): void {
  if (nested) {
    for (let i = list.length - 1; i >= 0; i--) {
      if (String((list[i] as [string])[0]).toLowerCase() === name) list.splice(i, 1);
    }
  } else {
    for (let i = list.length - 2; i >= 0; i -= 2) {
      if (String(list[i]).toLowerCase() === name) list.splice(i, 2);
    }
  }
}
