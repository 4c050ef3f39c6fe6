import { InvalidOptionsError } from "./errors.ts";

// A DNS name or an IP literal; the URL parser lets through more (`*`, `!`, `$`) than any browser sends.
const HOST = /^(?:[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?|\[[0-9a-f:.]+\])$/;

/**
 * The serialized form (`scheme://host[:port]`, lower case, as browsers send it
 * in `Origin`) of a configured http(s) origin, or `undefined` when `value` is
 * not one. A single trailing `/` is dropped, since a URL copied from the
 * address bar carries one; a path, query, fragment, userinfo, wildcard or an
 * explicit default port is refused, as no `Origin` header can ever equal it.
 */
export function serializedOriginOf(value: unknown): string | undefined {
  if (typeof value !== "string" || value.includes("*")) return undefined;
  const trimmed = value.endsWith("/") ? value.slice(0, -1) : value;
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    return undefined;
  }
  const lower = trimmed.toLowerCase();
  if (url.protocol !== "https:" && url.protocol !== "http:") return undefined;
  if (url.origin !== lower || !HOST.test(url.hostname)) return undefined;
  return lower;
}

/** `serializedOriginOf(value)`, or an `InvalidOptionsError` naming `where` and what to write. */
export function parseOrigin(where: string, value: unknown): string {
  const origin = serializedOriginOf(value);
  if (origin === undefined) {
    throw new InvalidOptionsError(
      `${where}: ${JSON.stringify(value)} is not an origin; write scheme://host[:port] (http or https, no path, no wildcard, no default port)`,
    );
  }
  return origin;
}
