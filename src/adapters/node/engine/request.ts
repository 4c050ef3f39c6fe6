import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import { FieldList } from "../../../core/field-list.ts";
import { BodyTap } from "./body-tap.ts";
import { LAZY_REQUESTS, lazyRequest, requestInit } from "./lazy-request.ts";

// A DNS name, IPv4 address or bracketed IPv6 literal, with an optional port: nothing that
// could end the authority early (`/`, `?`, `#`, `@`, `\`) or smuggle in a second one.
const HOST = /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/** Host used when an HTTP/1.0 client sends none; never taken from the request. */
const DEFAULT_HOST = "localhost";

export interface BuiltRequest {
  readonly request: Request;
  /** The body view the chain reads; `undefined` when the request has no body. */
  readonly tap: BodyTap | undefined;
  /** The request target's path: up to the first `?` or `#`, as sent. */
  readonly rawPath: string;
}

/**
 * Splits an origin-form request target into its path (what routers route on:
 * everything before `?` or `#`) and the rest. `undefined` for other forms
 * (`http://host/x`, `*`): routers read those differently, so they are refused.
 */
export function splitTarget(target: string): { path: string; rest: string } | undefined {
  if (target.charCodeAt(0) !== 0x2f) return undefined;
  let end = target.length;
  for (let i = 1; i < target.length; i++) {
    const code = target.charCodeAt(i);
    if (code === 0x3f || code === 0x23) {
      end = i;
      break;
    }
  }
  return { path: target.slice(0, end), rest: target.slice(end) };
}

/** True when `host` is a plain host[:port], safe to put between `scheme://` and a path. */
export function isValidHost(host: string): boolean {
  return host.length <= 261 && HOST.test(host);
}

function hasBody(headers: IncomingHttpHeaders): boolean {
  if (headers["transfer-encoding"] !== undefined) return true;
  const length = headers["content-length"];
  return length !== undefined && length !== "0";
}

// DNS labels of letters, digits, `-` and `_`, the last not a number (decimal or 0x-hex, which the URL
// parser would read as IPv4), none an IDNA `xn--` label, and a port the parser takes.
const PLAIN_NAME =
  /^(?:(?!xn--)[A-Za-z0-9_-]+\.)*(?!xn--|0x[0-9a-f]*\.?(?::\d*)?$)[A-Za-z0-9_-]*[A-Za-z_-][A-Za-z0-9_-]*\.?(?::(\d{1,5}))?$/i;
const DOTTED_QUAD =
  /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}(?::(\d{1,5}))?$/;

/** True when `scheme://host/...` cannot fail to parse as a URL. */
export function parsesSurely(host: string): boolean {
  const match = PLAIN_NAME.exec(host) ?? DOTTED_QUAD.exec(host);
  if (match === null) return false;
  const port = match[match.length - 1];
  return port === undefined || Number(port) <= 65535;
}

// Requests mostly repeat the previous one's Host: the last good one's checks are remembered.
let checkedHost: string | undefined;
let checkedHostIsPlain = false;

/** Methods Fetch refuses to carry. */
const FORBIDDEN_METHODS = new Set(["CONNECT", "TRACE", "TRACK"]);
/** An upper-case token: a method Fetch keeps exactly as sent (Node's parser sends only these). */
const PLAIN_METHOD = /^[A-Z]+$/;

/**
 * Builds a Fetch `Request` from a Node request: the headers the framework sees
 * (`message.headers`), the method as sent, and a lazy body. The URL is
 * `scheme://host` plus the request target, joined as strings: parsing the
 * target against a base would turn a path such as `//evil.example/x` into a
 * host. `undefined` when the Host header or the target cannot be used safely,
 * or Fetch refuses the method (`TRACE`, `CONNECT`).
 *
 * @param target the request target as the framework routes on it
 *   (Express `req.originalUrl`, Koa `ctx.originalUrl`, `req.url`)
 * @param record keep the bytes the chain reads, so they can be put back
 */
export function buildRequest(
  message: IncomingMessage,
  target: string,
  record = true,
  options: BuildOptions = {},
): BuiltRequest | undefined {
  const split = splitTarget(target);
  if (split === undefined) return undefined;
  const host = message.headers.host ?? DEFAULT_HOST;
  let plain: boolean;
  if (host === checkedHost) {
    plain = checkedHostIsPlain;
  } else {
    if (!isValidHost(host)) return undefined;
    plain = parsesSurely(host);
    checkedHost = host;
    checkedHostIsPlain = plain;
  }
  const scheme = (message.socket as TLSSocket | null)?.encrypted === true ? "https" : "http";
  const method = message.method ?? "GET";
  const plainRead = method === "GET" || method === "HEAD";
  if (!plainRead && FORBIDDEN_METHODS.has(method.toUpperCase())) return undefined;
  const tap = !plainRead && hasBody(message.headers) ? new BodyTap(message, record) : undefined;
  const url = `${scheme}://${host}${target}`;
  const source = { target: url, method, headers: message.headers, tap, response: options.response };
  try {
    const lazy = (options.lazy ?? LAZY_REQUESTS) && (plainRead || PLAIN_METHOD.test(method));
    // A host of plain shape always parses, so its URL can wait until someone reads it.
    if (lazy && plain) return { request: lazyRequest(source), tap, rawPath: split.path };
    // The URL as Fetch serializes it (dot segments resolved, characters escaped); throws when bad.
    const href = new URL(url).href;
    const request = lazy
      ? lazyRequest({ ...source, target: href })
      : new Request(href, requestInit(source, FieldList.parsed(message.headers)));
    return { request, tap, rawPath: split.path };
  } catch {
    return undefined;
  }
}

/**
 * How `buildRequest` builds.
 *
 * @example
 * ```ts
 * const built = buildRequest(req, req.url ?? "", false, { response: res });
 * ```
 */
export interface BuildOptions {
  /**
   * The request's `signal` aborts when this response closes before it finished.
   *
   * @default undefined (the signal never aborts)
   */
  readonly response?: ServerResponse;
  /**
   * Build a lazy request, or a real one at once.
   *
   * @default LAZY_REQUESTS (lazy where the runtime allows it)
   */
  readonly lazy?: boolean;
}
