/**
 * Longest `Cookie` header read, 32 KiB: twice what Node accepts for all of a
 * request's headers by default. `readCookie` reads nothing from a longer one;
 * the session leg answers it with 431 rather than treating it as no session.
 */
export const MAX_COOKIE_HEADER_LENGTH = 32 * 1024;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// RFC 6265 cookie-octet: visible ASCII except `"`, `,`, `;` and `\`.
const COOKIE_VALUE = /^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*$/;

/**
 * Reads one cookie's value from a `Cookie` header, or `undefined`. When the
 * name appears more than once the first wins (browsers send the most specific
 * path first). A malformed or oversized header yields `undefined`, never a throw.
 */
export function readCookie(header: string | null, name: string): string | undefined {
  if (header === null || header.length > MAX_COOKIE_HEADER_LENGTH) return undefined;
  if (!header.includes(name)) return undefined; // most requests: the cookie is not there at all
  // A scan rather than split(): no array of pairs for the one value wanted.
  for (let start = 0; start <= header.length; ) {
    let end = header.indexOf(";", start);
    if (end < 0) end = header.length;
    const at = skipSpaces(header, start, end);
    if (header.startsWith(name, at)) {
      const eq = skipSpaces(header, at + name.length, end);
      if (eq < end && header.charCodeAt(eq) === 61 /* = */) {
        let value = header.slice(eq + 1, end).trim();
        if (value.length >= 2 && value.startsWith('"') && value.endsWith('"'))
          value = value.slice(1, -1);
        return COOKIE_VALUE.test(value) ? value : undefined;
      }
    }
    start = end + 1;
  }
  return undefined;
}

function skipSpaces(text: string, from: number, end: number): number {
  let i = from;
  while (i < end && (text.charCodeAt(i) === 32 || text.charCodeAt(i) === 9)) i++;
  return i;
}

export interface CookieAttributes {
  /** @default true */
  readonly secure?: boolean;
  /** @default true */
  readonly httpOnly?: boolean;
  /** @default "Lax" */
  readonly sameSite?: "Strict" | "Lax" | "None";
  /** @default "/" */
  readonly path?: string;
  /** @default none (host-only); a cookie with the `__Host-` prefix cannot have one */
  readonly domain?: string;
  /** Seconds; omitted means a browser-session cookie, `0` deletes. */
  readonly maxAge?: number;
}

/** Checks a cookie name and its attributes once, when a middleware is built. */
export function validateCookie(name: string, attributes: CookieAttributes): string | undefined {
  if (!TOKEN.test(name)) return `cookie name ${JSON.stringify(name)} is not an RFC 6265 token`;
  const secure = attributes.secure ?? true;
  if (
    name.startsWith("__Host-") &&
    (!secure || attributes.domain !== undefined || (attributes.path ?? "/") !== "/")
  ) {
    return "a __Host- cookie must be Secure, have Path=/ and no Domain";
  }
  if (name.startsWith("__Secure-") && !secure) return "a __Secure- cookie must be Secure";
  if (attributes.sameSite === "None" && !secure) return "SameSite=None requires Secure";
  if (attributes.path !== undefined && !/^\/[\x21-\x3a\x3c-\x7e]*$/.test(attributes.path))
    return "invalid cookie path";
  if (attributes.domain !== undefined && !/^[A-Za-z0-9.-]+$/.test(attributes.domain))
    return "invalid cookie domain";
  return undefined;
}

/** Serializes a `Set-Cookie` value; the value must already be a valid cookie-octet string. */
export function serializeCookie(
  name: string,
  value: string,
  attributes: CookieAttributes = {},
): string {
  if (!COOKIE_VALUE.test(value))
    throw new TypeError("cookie value holds characters a cookie cannot carry");
  let out = `${name}=${value}; Path=${attributes.path ?? "/"}`;
  if (attributes.domain !== undefined) out += `; Domain=${attributes.domain}`;
  if (attributes.maxAge !== undefined) {
    const seconds = Math.max(0, Math.floor(attributes.maxAge));
    out += `; Max-Age=${seconds}`;
    if (seconds === 0) out += "; Expires=Thu, 01 Jan 1970 00:00:00 GMT";
  }
  if (attributes.httpOnly ?? true) out += "; HttpOnly";
  if (attributes.secure ?? true) out += "; Secure";
  out += `; SameSite=${attributes.sameSite ?? "Lax"}`;
  return out;
}
