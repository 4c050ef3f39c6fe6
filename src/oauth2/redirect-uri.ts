/**
 * Redirect URIs (RFC 6749 §3.1.2, RFC 8252, RFC 9700 §4.1): which may be
 * registered, and whether the one an authorization request names is one of
 * them. One home for both, for registered clients and metadata documents.
 */

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
// As the URL parser writes a host back: a domain name (IDNs in their `xn--` form) or an IP address.
const WEB_HOST = /^[a-z0-9.-]+$|^\[[0-9a-f:.]+\]$/;
// RFC 8252 §7.3: the loopback IP literals; `localhost` only as a registered name, never port-free.
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);

/** Why `uri` cannot be a redirect URI, or `undefined` when it can. */
export function redirectUriProblem(uri: unknown): string | undefined {
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
  // RFC 8252 §7.1: an app's own scheme is a domain name of its maker, reversed
  // (`com.example.app`), so it holds a period; and none may pass for the web's
  // own on a consent page: a scheme that starts with `http` is http or https.
  if (!scheme.includes(".")) return "a private-use scheme that is not a reversed domain name";
  if (scheme.startsWith("http")) return "a private-use scheme that looks like http or https";
  return undefined;
}

export function isRedirectUri(uri: unknown): uri is string {
  return redirectUriProblem(uri) === undefined;
}

/**
 * The registered URI `given` matches, if any: compared as strings, exactly
 * (no prefix, no normalization), except that a loopback http URI matches on
 * any port (RFC 8252 §7.3: a native app listens on a port it is given).
 */
export function matchRedirectUri(registered: readonly string[], given: string): string | undefined {
  for (const uri of registered) if (uri === given) return uri;
  const loopback = loopbackWithoutPort(given);
  if (loopback === undefined) return undefined;
  return registered.find((uri) => loopbackWithoutPort(uri) === loopback);
}

/** `http://<loopback>/path?query` with the port taken out, or `undefined` for any other URI. */
function loopbackWithoutPort(uri: string): string | undefined {
  if (!uri.startsWith("http://") || !isRedirectUri(uri)) return undefined;
  const url = new URL(uri);
  if (!LOOPBACK_HOSTS.has(url.hostname) || url.hostname === "localhost") return undefined;
  // The string as written, minus `:port`: the rest must be equal character for character.
  const authority = uri.slice(7).split(/[/?]/, 1)[0] as string;
  const host = authority.startsWith("[")
    ? authority.slice(0, authority.indexOf("]") + 1)
    : (authority.split(":", 1)[0] as string);
  // Only digits may follow the host: a `\` there would start another path in a browser.
  if (!/^(?::[0-9]{0,5})?$/.test(authority.slice(host.length))) return undefined;
  return `http://${host}${uri.slice(7 + authority.length)}`;
}
