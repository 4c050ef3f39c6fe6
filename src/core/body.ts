import { BodyReadError } from "./errors.ts";

/**
 * What reading a request body came to. `unreadable` is the client's doing
 * (it went away mid-body, or the runtime found its framing broken): the caller
 * answers 400 in its protocol's shape and reports nothing.
 */
export type BodyRead =
  | { readonly outcome: "read"; readonly bytes: Uint8Array }
  | { readonly outcome: "too_large" }
  | { readonly outcome: "unreadable"; readonly error: BodyReadError };

/**
 * Reads a request's body up to `maxBytes` bytes, the one way every leg and
 * endpoint reads one. A declared length over the limit is `too_large` without
 * reading a byte; with `keep`, a clone is read so the body stays for the
 * handler. A stream that errors is `unreadable`; it rejects only when other
 * code already took the body (the app's bug, reported as one).
 */
export async function readRequestBody(
  request: Request,
  maxBytes: number,
  options: { readonly keep?: boolean } = {},
): Promise<BodyRead> {
  if (Number(request.headers.get("content-length") ?? 0) > maxBytes)
    return { outcome: "too_large" };
  const body = options.keep === true ? request.clone().body : request.body;
  try {
    const bytes = await readAtMost(body, maxBytes);
    return bytes === undefined ? { outcome: "too_large" } : { outcome: "read", bytes };
  } catch (error) {
    if (error instanceof BodyReadError) return { outcome: "unreadable", error };
    throw error;
  }
}

/**
 * Reads a body up to `maxBytes` bytes; `undefined` when it is longer (the rest
 * is not read). A stream that errors (the client broke off its body) rejects
 * with a `BodyReadError`, which the chain answers with 400 and does not report.
 * The cancel is not awaited: on one branch of a cloned body it only settles
 * once the other branch is done, which may be never.
 */
export async function readAtMost(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<Uint8Array | undefined> {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let ended = false;
  try {
    for (;;) {
      let step: ReadableStreamReadResult<Uint8Array>;
      try {
        step = await reader.read();
      } catch (error) {
        // Whatever the runtime calls it (TypeError "terminated", an abort, a framing error).
        throw error instanceof BodyReadError
          ? error
          : new BodyReadError("the request body broke off", { cause: error });
      }
      const { done, value } = step;
      if (done) {
        ended = true;
        break;
      }
      size += value.byteLength;
      if (size > maxBytes) {
        reader.cancel().catch(() => {});
        return undefined;
      }
      chunks.push(value);
    }
  } finally {
    // A stream read to its end stays locked, as after the runtime's own `text()`: releasing
    // it rejects a promise per request, which the runtime's rejection tracking pays for.
    if (!ended) reader.releaseLock();
  }
  // A body that came in one chunk owning its whole buffer is handed over as is, uncopied.
  const only = chunks.length === 1 ? (chunks[0] as Uint8Array) : undefined;
  if (only !== undefined && only.byteOffset === 0 && only.byteLength === only.buffer.byteLength)
    return only;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** The media type of a request's `Content-Type`, lower-cased, without parameters ("" when absent). */
export function mediaTypeOf(request: Request): string {
  const field = request.headers.get("content-type") ?? "";
  // The common case, a bare lower-case type, needs no splitting.
  if (/^[a-z0-9!#$&^_.+/-]*$/.test(field)) return field;
  return field.split(";")[0]?.trim().toLowerCase() ?? "";
}

/**
 * Why a typed body was not read, for the caller to answer in its protocol's
 * shape: `media_type` (415 or the protocol's word for it), `too_large` (413),
 * `unreadable` (the client broke off), `malformed` (not UTF-8, or not the
 * syntax of its type).
 */
export type BodyFailure = "media_type" | "too_large" | "unreadable" | "malformed";

export type TypedBody<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly failure: BodyFailure };

/** An `application/x-www-form-urlencoded` body, up to `maxBytes`, as its name-value pairs in order. */
export async function readFormBody(
  request: Request,
  maxBytes: number,
): Promise<TypedBody<URLSearchParams>> {
  const text = await readText(request, maxBytes, "application/x-www-form-urlencoded");
  return text.ok ? { ok: true, value: new URLSearchParams(text.value) } : text;
}

/** An `application/json` body, up to `maxBytes`, parsed (any JSON value). */
export async function readJsonBody(
  request: Request,
  maxBytes: number,
): Promise<TypedBody<unknown>> {
  const text = await readText(request, maxBytes, "application/json");
  if (!text.ok) return text;
  try {
    return { ok: true, value: JSON.parse(text.value) as unknown };
  } catch {
    return { ok: false, failure: "malformed" };
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

async function readText(
  request: Request,
  maxBytes: number,
  type: string,
): Promise<TypedBody<string>> {
  if (mediaTypeOf(request) !== type) return { ok: false, failure: "media_type" };
  const read = await readRequestBody(request, maxBytes);
  if (read.outcome !== "read") return { ok: false, failure: read.outcome };
  try {
    return { ok: true, value: utf8.decode(read.bytes) };
  } catch {
    return { ok: false, failure: "malformed" };
  }
}
