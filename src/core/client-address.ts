import { bindValue, contextFrom, createContextKey } from "./context.ts";
import { InvalidOptionsError } from "./errors.ts";
import { directLeg, type Middleware } from "./handler.ts";

/**
 * The socket peer's address as the runtime reported it (the last hop: a proxy
 * when one sits in front). A Fetch `Request` does not carry it, so adapters
 * bind it, or `peerAddress(clientAddress)` binds what a runtime preset reads.
 */
export const PEER_ADDRESS = createContextKey<string>("portcullis.peerAddress");

/**
 * Bound by a framework adapter when the framework in front is set to believe
 * forwarding proxies (Express `trust proxy`, Koa `app.proxy`, Fastify
 * `trustProxy`): if the chain believes none, the two disagree about the client.
 */
export const FRAMEWORK_TRUSTS_PROXY = createContextKey<true>("portcullis.frameworkTrustsProxy");

/**
 * What to do when no client address is known, in the words of the host the
 * chain runs in: bound by an adapter whose host the default advice (a
 * `clientAddress` preset, a Node adapter) does not fit.
 */
export const CLIENT_ADDRESS_ADVICE = createContextKey<string>("portcullis.clientAddressAdvice");

const DEFAULT_ADVICE =
  "pass newHandler's clientAddress option (nodeServerClientAddress for @hono/node-server, bunClientAddress, denoClientAddress, workersClientAddress) or mount the chain through a Node adapter";

/** The advice of the `PORTCULLIS_NO_CLIENT_ADDRESS` warning for `request`'s host. */
export function clientAddressAdvice(request: Request): string {
  return contextFrom(request).get(CLIENT_ADDRESS_ADVICE) ?? DEFAULT_ADVICE;
}

/** The client address `resolveClientAddress` settled on, normalized; read it with `clientAddressOf`. */
export const CLIENT_ADDRESS = createContextKey<string>("portcullis.clientAddress");

/**
 * Reads the peer address from what a runtime passes after the request
 * (Bun's `server`, Deno's `info`, the Node server's bindings).
 */
// biome-ignore lint/suspicious/noExplicitAny: runtimes pass differently typed extras, as in Handler.
export type ClientAddressFunction = (request: Request, ...rest: any[]) => string | null | undefined;

/** `Bun.serve`: `fetch(request, server)`; the address comes from `server.requestIP(request)`. */
export const bunClientAddress: ClientAddressFunction = (request, server) =>
  server?.requestIP?.(request)?.address;

/** `Deno.serve`: `handler(request, info)`; the address is `info.remoteAddr.hostname` (absent on Unix sockets). */
export const denoClientAddress: ClientAddressFunction = (_request, info) =>
  info?.remoteAddr?.hostname;

/**
 * `@hono/node-server`: `fetch(request, { incoming, outgoing })`; the socket's
 * `remoteAddress`. Other Node frameworks go through adapters, which bind
 * `PEER_ADDRESS` themselves.
 */
export const nodeServerClientAddress: ClientAddressFunction = (_request, env) =>
  (env?.server ?? env)?.incoming?.socket?.remoteAddress;

/**
 * Cloudflare Workers: `CF-Connecting-IP`. A Worker is only reachable through
 * Cloudflare's edge, which overwrites this header, so it is not client-controlled
 * there; never use this preset on a server reachable without Cloudflare.
 */
export const workersClientAddress: ClientAddressFunction = (request) =>
  request.headers.get("cf-connecting-ip");

/**
 * Middleware binding `PEER_ADDRESS` from `clientAddress(request, ...rest)`
 * before the rest of the chain runs. When the function finds nothing, an
 * address an adapter already bound is kept.
 */
export function peerAddress(clientAddress: ClientAddressFunction): Middleware {
  if (typeof clientAddress !== "function")
    throw new InvalidOptionsError("peerAddress needs a clientAddress function");
  return directLeg((next) => (request, ...rest) => {
    const address = clientAddress(request, ...rest);
    if (typeof address === "string" && address !== "") bindValue(request, PEER_ADDRESS, address);
    return next(request, ...rest);
  });
}

/**
 * Which forwarding proxies to believe, for the chain (`newChain`,
 * `newHandler`), `rateLimit` and `resolveClientAddress`.
 *
 * @example
 * ```ts
 * import { authz, newHandler } from "portcullis";
 *
 * // Behind one reverse proxy that appends the address it saw to X-Forwarded-For.
 * const handler = newHandler(app.fetch, {
 *   trustProxy: 1,
 *   authorization: authz.routes([authz.anyRequest().permitAll()]),
 * });
 * ```
 */
export interface ClientAddressOptions {
  /**
   * Which forwarding proxies to believe.
   * - `0`: forwarding headers are ignored; the client is the socket peer.
   * - `n > 0`: exactly `n` proxies sit in front and each appends the address it
   *   saw; the client is the `n`-th entry from the right. Entries further left
   *   were written by the client and never count. When the list is shorter than
   *   `n`, the left-most entry is used (every entry present was then written by
   *   a proxy of ours), and with no entries at all, the peer: either choice is an
   *   address a client cannot pick, at worst a proxy's, which throttles more
   *   rather than less.
   * - a function: walking from the peer leftwards, each hop whose normalized
   *   address satisfies it is a trusted proxy; the first one that does not is
   *   the client. Needs the peer address; without it the client is unknown.
   *
   * @default 0 (forwarding headers are ignored)
   */
  readonly trustProxy?: number | ((address: string) => boolean) | undefined;
  /**
   * The header the trusted proxies write: `"x-forwarded-for"` or the RFC 7239
   * `"forwarded"` (`for=` parameters). The other one is ignored, so a client
   * cannot slip addresses in through the header the proxies leave alone.
   *
   * @default "x-forwarded-for"
   */
  readonly forwardedHeader?: "x-forwarded-for" | "forwarded" | undefined;
}

/** Validates `ClientAddressOptions`, throwing `InvalidOptionsError`; for factories that take them. */
export function checkClientAddressOptions(options: ClientAddressOptions): void {
  const trust = options.trustProxy;
  if (
    trust !== undefined &&
    typeof trust !== "function" &&
    !(Number.isSafeInteger(trust) && trust >= 0)
  ) {
    throw new InvalidOptionsError(
      "trustProxy must be a non-negative integer (proxy hops) or a function",
    );
  }
  const header = options.forwardedHeader;
  if (header !== undefined && header !== "x-forwarded-for" && header !== "forwarded") {
    throw new InvalidOptionsError('forwardedHeader must be "x-forwarded-for" or "forwarded"');
  }
}

/**
 * The client's address for `request`, normalized (see `normalizeAddress`), or
 * `undefined` when it is unknown or malformed. A resolved address is bound
 * under `CLIENT_ADDRESS` for `clientAddressOf`.
 */
export function resolveClientAddress(
  request: Request,
  options: ClientAddressOptions = {},
): string | undefined {
  const trust = options.trustProxy ?? 0;
  const raw = contextFrom(request).get(PEER_ADDRESS);
  const peer = raw === undefined ? undefined : normalizeAddress(raw);
  let address: string | undefined;
  if (trust === 0) {
    address = peer;
  } else {
    const hops = forwardedHops(request, options.forwardedHeader ?? "x-forwarded-for");
    if (typeof trust === "number") {
      address = hops.length === 0 ? peer : hop(hops, Math.max(0, hops.length - trust));
    } else if (peer !== undefined) {
      address = peer;
      for (let i = hops.length - 1; i >= 0 && address !== undefined && trust(address); i--) {
        address = hop(hops, i);
      }
    }
  }
  if (address !== undefined) bindValue(request, CLIENT_ADDRESS, address);
  return address;
}

/** The address `resolveClientAddress` last bound to `request`, if any. */
export function clientAddressOf(request: object): string | undefined {
  return contextFrom(request).get(CLIENT_ADDRESS);
}

/**
 * The client's address as every leg reads it: what the chain resolved, or,
 * for a leg used without the chain, the socket peer's (no forwarded header
 * is trusted then). `undefined` when nothing bound an address.
 */
export function clientAddress(request: Request): string | undefined {
  return clientAddressOf(request) ?? resolveClientAddress(request);
}

function hop(hops: readonly string[], index: number): string | undefined {
  const entry = hops[index];
  return entry === undefined ? undefined : normalizeAddress(entry);
}

/** Forwarded entries, left to right; unusable ones stay as entries so positions still count hops. */
function forwardedHops(request: Request, header: "x-forwarded-for" | "forwarded"): string[] {
  const value = request.headers.get(header);
  if (value === null) return [];
  if (header === "x-forwarded-for") {
    // Empty entries can only come from the client's part (or an empty header line); skip them.
    return value
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
  }
  return parseForwarded(value);
}

/** The `for=` value of each RFC 7239 element (`""` when it has none). */
function parseForwarded(value: string): string[] {
  const result: string[] = [];
  for (const element of splitUnquoted(value, ",")) {
    if (element.trim() === "") continue;
    let forValue = "";
    for (const pair of splitUnquoted(element, ";")) {
      const eq = pair.indexOf("=");
      if (eq !== -1 && pair.slice(0, eq).trim().toLowerCase() === "for") {
        forValue = unquote(pair.slice(eq + 1).trim());
        break;
      }
    }
    result.push(forValue);
  }
  return result;
}

/** Splits on `separator` outside quoted strings (a quoted `[v6]:port` may hold anything). */
function splitUnquoted(value: string, separator: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (quoted) {
      if (c === "\\") i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') {
      quoted = true;
    } else if (c === separator) {
      parts.push(value.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(value.slice(start));
  return parts;
}

function unquote(value: string): string {
  if (value.length < 2 || !value.startsWith('"') || !value.endsWith('"')) return value;
  return value.slice(1, -1).replace(/\\(.)/g, "$1");
}

const IPV4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const HEX_GROUP = /^[0-9a-f]{1,4}$/;
const PORT = /^\d{1,5}$/;

/** A parsed address: 4 bytes, or 8 16-bit groups. */
export type ParsedAddress =
  | { readonly version: 4; readonly bytes: readonly number[] }
  | { readonly version: 6; readonly groups: readonly number[] };

/**
 * Parses an address as peers and proxies write it: IPv4, IPv6, either with a
 * port (`1.2.3.4:80`, `[::1]:443`), IPv6 in brackets or with a zone id
 * (dropped). IPv4-mapped IPv6 (`::ffff:1.2.3.4`) becomes IPv4, so both
 * spellings of one client share a key. IPv4 parts with leading zeros are
 * refused: some parsers read them as octal. `undefined` when malformed.
 */
export function parseAddress(text: string): ParsedAddress | undefined {
  if (typeof text !== "string") return undefined;
  let s = text.trim();
  if (s.length === 0 || s.length > 64) return undefined;
  if (s.startsWith("[")) {
    const close = s.indexOf("]");
    if (close === -1) return undefined;
    const after = s.slice(close + 1);
    if (after !== "" && !(after.startsWith(":") && PORT.test(after.slice(1)))) return undefined;
    s = s.slice(1, close);
    if (s.includes(".") && !s.includes(":")) return undefined; // brackets are for IPv6 only
  } else if (s.includes(".") && s.indexOf(":") === s.lastIndexOf(":") && s.includes(":")) {
    const colon = s.indexOf(":");
    if (!PORT.test(s.slice(colon + 1))) return undefined;
    s = s.slice(0, colon);
  }
  const zone = s.indexOf("%");
  if (zone !== -1) {
    if (!s.includes(":")) return undefined;
    s = s.slice(0, zone);
  }
  s = s.toLowerCase();
  if (IPV4.test(s)) return { version: 4, bytes: s.split(".").map(Number) };
  const groups = parseIPv6(s);
  if (groups === undefined) return undefined;
  if (
    groups[0] === 0 &&
    groups[1] === 0 &&
    groups[2] === 0 &&
    groups[3] === 0 &&
    groups[4] === 0 &&
    groups[5] === 0xffff
  ) {
    const hi = groups[6] as number;
    const lo = groups[7] as number;
    return { version: 4, bytes: [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff] };
  }
  return { version: 6, groups };
}

function parseIPv6(s: string): number[] | undefined {
  if (!s.includes(":")) return undefined;
  const gap = s.indexOf("::");
  if (gap !== -1 && gap !== s.lastIndexOf("::")) return undefined;
  const head = gap === -1 ? s : s.slice(0, gap);
  const tail = gap === -1 ? "" : s.slice(gap + 2);
  const left = parseGroups(head, gap === -1);
  const right = gap === -1 ? [] : parseGroups(tail, true);
  if (left === undefined || right === undefined) return undefined;
  const count = left.length + right.length;
  if (gap === -1 ? count !== 8 : count > 7) return undefined;
  return [...left, ...new Array<number>(8 - count).fill(0), ...right];
}

/** Colon-separated hex groups; the last may be a dotted IPv4 tail when `last` is true. */
function parseGroups(part: string, last: boolean): number[] | undefined {
  if (part === "") return [];
  const pieces = part.split(":");
  const groups: number[] = [];
  for (let i = 0; i < pieces.length; i++) {
    const piece = pieces[i] as string;
    if (last && i === pieces.length - 1 && piece.includes(".")) {
      if (!IPV4.test(piece)) return undefined;
      const [a, b, c, d] = piece.split(".").map(Number) as [number, number, number, number];
      groups.push((a << 8) | b, (c << 8) | d);
    } else if (HEX_GROUP.test(piece)) {
      groups.push(Number.parseInt(piece, 16));
    } else {
      return undefined;
    }
  }
  return groups;
}

/** Canonical text: dotted IPv4, or RFC 5952 IPv6 (lower case, longest zero run as `::`). */
export function formatAddress(address: ParsedAddress): string {
  if (address.version === 4) return address.bytes.join(".");
  const g = address.groups;
  let bestStart = -1;
  let bestLength = 1; // RFC 5952: a single zero group is not shortened
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number) =>
    g
      .slice(from, to)
      .map((x) => x.toString(16))
      .join(":");
  if (bestStart === -1) return hex(0, 8);
  return `${hex(0, bestStart)}::${hex(bestStart + bestLength, 8)}`;
}

// Dotted quad with no leading zeros and every octet at most 255.
const CANONICAL_IPV4 =
  /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/** `parseAddress` then `formatAddress`: one string per address however it was spelled. */
export function normalizeAddress(text: string): string | undefined {
  // Requests mostly come from the peer the previous one came from.
  if (text === lastAddress) return lastNormalized;
  let normalized: string | undefined;
  if (CANONICAL_IPV4.test(text)) {
    normalized = text; // the common case, already in its one spelling
  } else {
    const parsed = parseAddress(text);
    normalized = parsed === undefined ? undefined : formatAddress(parsed);
  }
  if (typeof text === "string") {
    lastAddress = text;
    lastNormalized = normalized;
  }
  return normalized;
}

let lastAddress: string | undefined;
let lastNormalized: string | undefined;

/**
 * The network holding `address` as `address/prefix` with the host bits
 * zeroed: one IPv6 subscriber usually gets a whole /56 or /64, so keying a
 * single /128 would let them rotate addresses past any limit.
 */
export function addressNetwork(
  address: string,
  prefixes: { readonly ipv4Prefix?: number; readonly ipv6Prefix?: number } = {},
): string | undefined {
  if ((prefixes.ipv4Prefix ?? 32) === 32 && CANONICAL_IPV4.test(address)) return `${address}/32`;
  const parsed = parseAddress(address);
  if (parsed === undefined) return undefined;
  if (parsed.version === 4) {
    const prefix = prefixes.ipv4Prefix ?? 32;
    return `${formatAddress({ version: 4, bytes: mask(parsed.bytes, 8, prefix) })}/${prefix}`;
  }
  const prefix = prefixes.ipv6Prefix ?? 56;
  return `${formatAddress({ version: 6, groups: mask(parsed.groups, 16, prefix) })}/${prefix}`;
}

function mask(units: readonly number[], bits: number, prefix: number): number[] {
  return units.map((unit, i) => {
    const keep = Math.min(bits, Math.max(0, prefix - i * bits));
    return keep === 0 ? 0 : unit & (((1 << bits) - 1) ^ ((1 << (bits - keep)) - 1));
  });
}
