import { bindValue, contextFrom, createContextKey } from "./context.ts";
import { problemResponse } from "./problem.ts";

/**
 * The raw request target's path as the server received it, bound by adapters
 * whose framework routes on the raw path (Express, Koa, node:http). A Fetch
 * `Request` only carries the URL after WHATWG parsing, which already resolved
 * dot segments and backslashes; deciding on that while the router sees the raw
 * path would let `/admin/x/../../public/y` reach an admin route.
 */
export const RAW_PATH = createContextKey<string>("portcullis.rawPath");

/** The request path after `normalizePath`, bound once by the chain so every leg matches the same string. */
export const MATCH_PATH = createContextKey<string>("portcullis.matchPath");

/**
 * Raw paths the router may route the request as besides its own, bound by an
 * adapter when middleware before the chain rewrote the URL (Express `req.url`,
 * Koa `ctx.path`): authorization must allow each of them too.
 */
export const ROUTED_PATHS = createContextKey<readonly string[]>("portcullis.routedPaths");

/** Longest path accepted; longer ones are refused rather than scanned. */
export const MAX_PATH_LENGTH = 8192;

// Paths made only of these characters need no decoding or segment checks.
const PLAIN = /^(?:\/[A-Za-z0-9_~!$&'()*+,=:@-][A-Za-z0-9._~!$&'()*+,=:@-]*)*$/;
const HEX = /^[0-9A-Fa-f]{2}$/;
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Normalizes a request path for matching, or returns `undefined` when the path
 * is ambiguous and must be refused (400):
 * - refused: control characters and NUL (raw or encoded), backslashes and `;`
 *   (raw or encoded), encoded `/`, encoded `%` (double encoding), malformed
 *   escapes or UTF-8, dot segments (raw or encoded), paths not starting with `/`;
 * - normalized: other escapes are decoded once, empty segments (`//`, trailing
 *   `/`) are dropped, and letters are lower-cased, so `/ADMIN/x/` and
 *   `/%61dmin//x` get the decision of `/admin/x`.
 */
export function normalizePath(rawPath: string): string | undefined {
  if (rawPath.length > MAX_PATH_LENGTH || rawPath.charCodeAt(0) !== 0x2f) return undefined;
  if (rawPath.length === 1) return "/";
  if (PLAIN.test(rawPath)) return rawPath.toLowerCase();
  return normalizeSlow(rawPath);
}

function normalizeSlow(rawPath: string): string | undefined {
  const bytes: number[] = [];
  for (let i = 0; i < rawPath.length; i++) {
    const code = rawPath.charCodeAt(i);
    if (code === 0x25) {
      const hex = rawPath.slice(i + 1, i + 3);
      if (!HEX.test(hex)) return undefined;
      const byte = Number.parseInt(hex, 16);
      // Encoded separators, escapes and control characters would be read differently by different routers.
      if (
        byte === 0x2f ||
        byte === 0x5c ||
        byte === 0x25 ||
        byte === 0x3b ||
        byte < 0x20 ||
        byte === 0x7f
      ) {
        return undefined;
      }
      bytes.push(byte);
      i += 2;
    } else if (code < 0x21 || code === 0x7f || code === 0x5c || code === 0x3b) {
      return undefined;
    } else if (code < 0x80) {
      bytes.push(code);
    } else {
      return undefined; // a raw non-ASCII character cannot occur in a request target
    }
  }
  let decoded: string;
  try {
    decoded = decoder.decode(new Uint8Array(bytes));
  } catch {
    return undefined;
  }
  const segments: string[] = [];
  for (const segment of decoded.split("/")) {
    if (segment === "") continue;
    if (segment === "." || segment === "..") return undefined;
    segments.push(segment);
  }
  return `/${segments.join("/")}`.toLowerCase();
}

/** The path part of an absolute URL string, without parsing the whole URL. */
export function pathOfUrl(url: string): string {
  const scheme = url.indexOf("://");
  const start = url.indexOf("/", scheme < 0 ? 0 : scheme + 3);
  if (start < 0) return "/";
  let end = url.length;
  const query = url.indexOf("?", start);
  if (query >= 0) end = query;
  const hash = url.indexOf("#", start);
  if (hash >= 0 && hash < end) end = hash;
  return url.slice(start, end);
}

/**
 * The normalized path of `request` (see `normalizePath`), computed once and
 * bound to the request; `undefined` when the path must be refused.
 */
export function matchPath(request: Request): string | undefined {
  const context = contextFrom(request);
  const bound = context.get(MATCH_PATH);
  if (bound !== undefined) return bound;
  const path = normalizePath(context.get(RAW_PATH) ?? pathOfUrl(request.url));
  if (path !== undefined) bindValue(request, MATCH_PATH, path);
  return path;
}

/** The 400 for a path `normalizePath` refuses. */
export function refusedPathResponse(): Response {
  return problemResponse(400, { detail: "The request path is not acceptable." });
}
