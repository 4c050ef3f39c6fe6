// Control characters and backslashes: browsers strip or turn them into "/", so
// "/\evil.example" or "/\t/evil.example" would leave the site.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const UNSAFE = /[\u0000-\u001f\u007f\\]/;
const PROBE = "https://origin.invalid";
// Control characters are refused above, so this is everything beyond ASCII.
const NON_ASCII = /[^\x20-\x7e]+/gu;
const MAX_LENGTH = 2048;

/**
 * `value` when it is a path on this site to send a browser back to (a `next`
 * parameter), else `undefined`: absolute URLs, `//host`, `/\host`, their
 * percent-encoded forms and anything with control characters are dropped, so
 * a link cannot turn sign-in into an open redirect. Characters beyond ASCII
 * come back percent-encoded (UTF-8), as a browser sends them: a `Location`
 * header cannot carry them raw.
 */
export function sameOriginPath(value: unknown): string | undefined {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_LENGTH)
    return undefined;
  if (!value.startsWith("/") || value.startsWith("//") || UNSAFE.test(value)) return undefined;
  let decoded = value;
  for (let round = 0; round < 3; round++) {
    let next: string;
    try {
      next = decodeURIComponent(decoded);
    } catch {
      return undefined;
    }
    if (next === decoded) break;
    decoded = next;
    if (decoded.startsWith("//") || UNSAFE.test(decoded)) return undefined;
  }
  if (!URL.canParse(value, PROBE) || new URL(value, PROBE).origin !== PROBE) return undefined;
  let ascii: string;
  try {
    ascii = value.replace(NON_ASCII, encodeURIComponent);
  } catch {
    return undefined; // a lone surrogate encodes to nothing
  }
  return ascii.length > MAX_LENGTH ? undefined : ascii;
}
