/**
 * Redirect URIs (RFC 6749 §3.1.2, RFC 8252, RFC 9700 §4.1): which may be
 * registered, and whether the one an authorization request names is one of
 * them. One home for both, for registered clients, dynamic registration and
 * metadata documents, and the one redirect-URI policy a server may widen.
 */
import { InvalidOptionsError } from "../core/errors.ts";
import { rejectUnknownKeys } from "../core/options.ts";

/** Longest redirect URI accepted. */
export const MAX_REDIRECT_URI_LENGTH = 2000;

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;
const SCHEME = /^[a-z][a-z0-9+.-]*$/;
// Schemes that run code or reach local content if a browser is sent there.
const REFUSED_SCHEMES = new Set([
  "javascript",
  "data",
  "vbscript",
  "file",
  "blob",
  "about",
  "filesystem",
]);
// The URL Standard's special schemes besides http(s): the web's own, never an app's.
const WEB_SCHEMES = new Set(["ftp", "ws", "wss"]);
// As the URL parser writes a host back: a domain name (IDNs in their `xn--` form) or an IP address.
const WEB_HOST = /^[a-z0-9.-]+$|^\[[0-9a-f:.]+\]$/;
// RFC 8252 §7.3: the loopback IP literals; `localhost` only as a registered name, never port-free.
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);
const MAX_PRIVATE_USE_SCHEMES = 20;

/**
 * What a server accepts beyond RFC 8252's rules for native apps, for clients
 * that do not follow them. Given to `agentAuth` as `authorizationCode.redirectUris`.
 *
 * @example
 * ```ts
 * import type { RedirectUriOptions } from "portcullis/oauth2";
 *
 * // Cursor's redirect URI is cursor://anysphere.cursor-retrieval/oauth/callback.
 * const redirectUris: RedirectUriOptions = { privateUseSchemes: ["cursor"] };
 * ```
 */
export interface RedirectUriOptions {
  /**
   * Private-use schemes of one label (no period) accepted besides reversed
   * domain names (`com.example.app:`, RFC 8252 §7.1), each named: `["cursor"]`.
   * Lower case; never one that starts with `http`, a special scheme of the
   * web (`ftp`, `ws`, `wss`), nor one that runs code or reads local content
   * (`javascript`, `data`, `file`, `blob`, `about`, `filesystem`, `vbscript`).
   * At most 20.
   *
   * @default [] — reversed domain names only
   */
  readonly privateUseSchemes?: readonly string[];
  /**
   * `http://localhost` redirect URIs match on any port, as the loopback IP
   * literals always do (RFC 8252 §7.3). Off, one matches only with the port it
   * was registered with: RFC 8252 §8.3 prefers the IP literals, since a name
   * may resolve elsewhere than the loopback interface.
   *
   * @default false
   */
  readonly localhostAnyPort?: boolean;
}

/** `RedirectUriOptions` checked: what a server accepts. */
export interface RedirectUriPolicy {
  readonly privateUseSchemes: ReadonlySet<string>;
  readonly localhostAnyPort: boolean;
}

/** RFC 8252 as written: reversed domain names only, `localhost` on its registered port only. */
export const DEFAULT_REDIRECT_URI_POLICY: RedirectUriPolicy = Object.freeze({
  privateUseSchemes: new Set<string>(),
  localhostAnyPort: false,
});

/** Checks `RedirectUriOptions`, naming the key written under `where`. */
export function redirectUriPolicy(
  where: string,
  options: RedirectUriOptions | undefined,
): RedirectUriPolicy {
  if (options === undefined) return DEFAULT_REDIRECT_URI_POLICY;
  if (typeof options !== "object" || options === null)
    throw new InvalidOptionsError(`${where} must be an object`);
  rejectUnknownKeys(where, options, ["privateUseSchemes", "localhostAnyPort"]);
  const localhostAnyPort = options.localhostAnyPort ?? false;
  if (typeof localhostAnyPort !== "boolean")
    throw new InvalidOptionsError(`${where}: localhostAnyPort must be a boolean`);
  const schemes = options.privateUseSchemes ?? [];
  if (!Array.isArray(schemes) || schemes.length > MAX_PRIVATE_USE_SCHEMES)
    throw new InvalidOptionsError(
      `${where}: privateUseSchemes must list at most ${MAX_PRIVATE_USE_SCHEMES} schemes`,
    );
  for (const scheme of schemes) {
    const problem = privateUseSchemeProblem(scheme);
    if (problem !== undefined)
      throw new InvalidOptionsError(
        `${where}: privateUseSchemes: ${JSON.stringify(scheme)} ${problem}`,
      );
  }
  return Object.freeze({ privateUseSchemes: new Set<string>(schemes), localhostAnyPort });
}

/** Why `scheme` cannot be named in `privateUseSchemes`, or `undefined` when it can. */
function privateUseSchemeProblem(scheme: unknown): string | undefined {
  if (typeof scheme !== "string" || scheme.length > 64 || !SCHEME.test(scheme))
    return "is not a scheme in lower case (a letter, then letters, digits, +, - or .)";
  if (scheme.includes("."))
    return "has a period: a reversed domain name is accepted already; name single labels only";
  if (!mayBePrivateUse(scheme))
    return "is the web's own, looks like http or https, or runs code or reads local content";
  return undefined;
}

/** A scheme no policy may admit as an app's own: the web's, look-alikes of http(s), refused ones. */
function mayBePrivateUse(scheme: string): boolean {
  return !REFUSED_SCHEMES.has(scheme) && !WEB_SCHEMES.has(scheme) && !scheme.startsWith("http");
}

/**
 * Why `uri` cannot be a redirect URI under `policy`, or `undefined` when it
 * can. With `"registrable"`, what every server refuses: a single-label
 * private-use scheme passes, for the server's policy to decide where the URI
 * is used (clients registered in code and metadata documents are written
 * before any server reads them).
 */
export function redirectUriProblem(
  uri: unknown,
  policy: RedirectUriPolicy | "registrable" = DEFAULT_REDIRECT_URI_POLICY,
): string | undefined {
  if (typeof uri !== "string" || uri.length > MAX_REDIRECT_URI_LENGTH || !VISIBLE_ASCII.test(uri))
    return "not a string of visible ASCII within the length bound";
  if (uri.includes("#")) return "a fragment";
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "not an absolute URI";
  }
  const scheme = url.protocol.slice(0, -1);
  if (!SCHEME.test(scheme) || REFUSED_SCHEMES.has(scheme)) return "a refused scheme";
  if (scheme === "https" || scheme === "http") {
    if (url.username !== "" || url.password !== "") return "a user name or password";
    // What a browser takes for a host beyond names and addresses (`;`, `,`, `'`...) is no
    // site's, and could not be named where the host is written into a policy or a page.
    if (!WEB_HOST.test(url.hostname)) return "a host that is not a domain name or an IP address";
    // RFC 8252 §7.3 and §8.3: plain http only to the loopback interface.
    if (scheme === "http" && !LOOPBACK_HOSTS.has(url.hostname))
      return "http to a host other than loopback";
    return undefined;
  }
  // None may pass for the web's own on a consent page: a scheme that starts with `http` is
  // http or https, and ws, wss and ftp are the web's.
  if (!mayBePrivateUse(scheme)) return "a private-use scheme that looks like the web's own";
  // RFC 8252 §7.1: an app's own scheme is a domain name of its maker, reversed
  // (`com.example.app`), so it holds a period, unless the server names it.
  if (scheme.includes(".") || policy === "registrable" || policy.privateUseSchemes.has(scheme))
    return undefined;
  return `a private-use scheme that is not a reversed domain name (${scheme}: is accepted only where the server names it in privateUseSchemes)`;
}

export function isRedirectUri(uri: unknown): uri is string {
  return redirectUriProblem(uri) === undefined;
}

/**
 * The registered URI `given` matches, if any, when `policy` accepts `given`:
 * compared as strings, exactly (no prefix, no normalization), except that a
 * loopback http URI matches on any port (RFC 8252 §7.3: a native app listens
 * on a port it is given), `localhost` too when the policy says so.
 */
export function matchRedirectUri(
  registered: readonly string[],
  given: string,
  policy: RedirectUriPolicy = DEFAULT_REDIRECT_URI_POLICY,
): string | undefined {
  if (redirectUriProblem(given, policy) !== undefined) return undefined;
  for (const uri of registered) if (uri === given) return uri;
  const loopback = loopbackWithoutPort(given, policy);
  if (loopback === undefined) return undefined;
  return registered.find((uri) => loopbackWithoutPort(uri, policy) === loopback);
}

/** `http://<loopback>/path?query` with the port taken out, or `undefined` for any other URI. */
function loopbackWithoutPort(uri: string, policy: RedirectUriPolicy): string | undefined {
  if (!uri.startsWith("http://") || redirectUriProblem(uri, policy) !== undefined) return undefined;
  const url = new URL(uri);
  if (!LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  if (url.hostname === "localhost" && !policy.localhostAnyPort) return undefined;
  // The string as written, minus `:port`: the rest must be equal character for character.
  const authority = uri.slice(7).split(/[/?]/, 1)[0] as string;
  const host = authority.startsWith("[")
    ? authority.slice(0, authority.indexOf("]") + 1)
    : (authority.split(":", 1)[0] as string);
  // Only digits may follow the host: a `\` there would start another path in a browser.
  if (!/^(?::[0-9]{0,5})?$/.test(authority.slice(host.length))) return undefined;
  return `http://${host}${uri.slice(7 + authority.length)}`;
}
