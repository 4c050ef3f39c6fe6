/**
 * The `format`s an input schema may assert, each checked by a single pass over
 * the string (no regular expression: a backtracking one on client input can
 * take exponential time).
 */
export const FORMATS: Readonly<Record<string, (value: string) => boolean>> = {
  "date-time": isDateTime,
  date: (value) => isDate(value, 0) && value.length === 10,
  time: (value) => isTime(value, 0),
  email: isEmail,
  hostname: (value) => isHostname(value, 0, value.length),
  ipv4: (value) => isIpv4(value, 0, value.length),
  ipv6: (value) => isIpv6(value, 0, value.length),
  uri: isUri,
  url: isUrl,
  uuid: isUuid,
};

const code = (value: string, i: number) => value.charCodeAt(i);
const isDigit = (c: number) => c >= 48 && c <= 57;
const isAlpha = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isHex = (c: number) => isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);

/** The number written by `count` digits at `start`, or -1. */
function digits(value: string, start: number, count: number): number {
  if (start + count > value.length) return -1;
  let n = 0;
  for (let i = start; i < start + count; i++) {
    const c = code(value, i);
    if (!isDigit(c)) return -1;
    n = n * 10 + (c - 48);
  }
  return n;
}

/** RFC 3339 full-date at `start` (10 characters). */
function isDate(value: string, start: number): boolean {
  const year = digits(value, start, 4);
  const month = digits(value, start + 5, 2);
  const day = digits(value, start + 8, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1) return false;
  if (code(value, start + 4) !== 45 || code(value, start + 7) !== 45) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] as number;
  return day <= days;
}

/** RFC 3339 full-time from `start` to the end: hh:mm:ss[.frac](Z|±hh:mm). */
function isTime(value: string, start: number): boolean {
  const hour = digits(value, start, 2);
  const minute = digits(value, start + 3, 2);
  const second = digits(value, start + 6, 2);
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60) return false;
  if (code(value, start + 2) !== 58 || code(value, start + 5) !== 58) return false;
  let i = start + 8;
  if (code(value, i) === 46) {
    const first = ++i;
    while (i < value.length && isDigit(code(value, i))) i++;
    if (i === first) return false;
  }
  const zone = code(value, i);
  if ((zone === 90 || zone === 122) && i + 1 === value.length) return true;
  if (zone !== 43 && zone !== 45) return false;
  const offsetHour = digits(value, i + 1, 2);
  const offsetMinute = digits(value, i + 4, 2);
  return (
    i + 6 === value.length &&
    code(value, i + 3) === 58 &&
    offsetHour >= 0 &&
    offsetHour <= 23 &&
    offsetMinute >= 0 &&
    offsetMinute <= 59
  );
}

function isDateTime(value: string): boolean {
  const separator = code(value, 10);
  return isDate(value, 0) && (separator === 84 || separator === 116) && isTime(value, 11);
}

function isUuid(value: string): boolean {
  if (value.length !== 36) return false;
  for (let i = 0; i < 36; i++) {
    const c = code(value, i);
    if (i === 8 || i === 13 || i === 18 || i === 23 ? c !== 45 : !isHex(c)) return false;
  }
  return true;
}

/** Dotted-decimal IPv4 in value[start, end), no leading zeros. */
function isIpv4(value: string, start: number, end: number): boolean {
  return ipv4Octets(value, start, end) !== undefined;
}

function ipv4Octets(value: string, start: number, end: number): number[] | undefined {
  const octets: number[] = [];
  let i = start;
  while (octets.length < 4) {
    const first = i;
    let n = 0;
    while (i < end && isDigit(code(value, i)) && i - first < 3)
      n = n * 10 + (code(value, i++) - 48);
    const width = i - first;
    if (width === 0 || n > 255 || (width > 1 && code(value, first) === 48)) return undefined;
    octets.push(n);
    if (octets.length < 4) {
      if (i >= end || code(value, i) !== 46) return undefined;
      i++;
    }
  }
  return i === end ? octets : undefined;
}

/** RFC 4291 text form in value[start, end): eight groups, one `::`, an optional IPv4 tail. */
function isIpv6(value: string, start: number, end: number): boolean {
  let groups = 0;
  let compressed = false;
  let i = start;
  if (code(value, i) === 58) {
    if (code(value, i + 1) !== 58) return false;
    compressed = true;
    i += 2;
    if (i === end) return true;
  }
  while (i < end) {
    const first = i;
    while (i < end && isHex(code(value, i)) && i - first < 4) i++;
    if (i < end && code(value, i) === 46) {
      // An IPv4 tail counts as two groups and ends the address.
      return isIpv4(value, first, end) && (compressed ? groups <= 5 : groups === 6);
    }
    if (i === first) return false;
    groups++;
    if (i === end) break;
    if (code(value, i) !== 58) return false;
    i++;
    if (code(value, i) === 58 && i < end) {
      if (compressed) return false;
      compressed = true;
      i++;
      if (i === end) break;
    } else if (i === end) return false;
  }
  return compressed ? groups <= 7 : groups === 8;
}

/** RFC 1123 host name in value[start, end): dot-separated labels of letters, digits and inner hyphens. */
function isHostname(value: string, start: number, end: number): boolean {
  if (end - start < 1 || end - start > 253) return false;
  let label = 0;
  for (let i = start; i < end; i++) {
    const c = code(value, i);
    if (c === 46) {
      if (label === 0 || code(value, i - 1) === 45) return false;
      label = 0;
    } else if (isAlpha(c) || isDigit(c) || (c === 45 && label > 0)) {
      if (++label > 63) return false;
    } else return false;
  }
  return label > 0 && code(value, end - 1) !== 45;
}

const ATEXT = new Set("!#$%&'*+-/=?^_`{|}~");

/** An address `local@domain`: a dot-atom local part and a host name or `[IPv4]`. */
function isEmail(value: string): boolean {
  const at = value.lastIndexOf("@");
  if (at < 1 || at > 64 || value.length > 254) return false;
  for (let i = 0; i < at; i++) {
    const c = code(value, i);
    if (c === 46) {
      if (i === 0 || i === at - 1 || code(value, i - 1) === 46) return false;
    } else if (!isAlpha(c) && !isDigit(c) && !ATEXT.has(value[i] as string)) return false;
  }
  if (code(value, at + 1) === 91 && code(value, value.length - 1) === 93)
    return isIpv4(value, at + 2, value.length - 1);
  return isHostname(value, at + 1, value.length);
}

// ASCII classes for URIs: unreserved and sub-delims, then the extras each part allows.
const URI_BASIC = 1;
const URI_COLON_AT = 2;
const URI_SLASH = 4;
const URI_QUESTION = 8;
const URI_CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++)
  if (isAlpha(c) || isDigit(c) || "-._~!$&'()*+,;=".includes(String.fromCharCode(c)))
    URI_CLASS[c] = URI_BASIC;
URI_CLASS[58] = URI_COLON_AT;
URI_CLASS[64] = URI_COLON_AT;
URI_CLASS[47] = URI_SLASH;
URI_CLASS[63] = URI_QUESTION;

/** One allowed character or a percent-encoded octet at i; returns the next index or -1. */
function uriChar(value: string, i: number, allowed: number): number {
  const c = code(value, i);
  if (c < 128 && ((URI_CLASS[c] as number) & (allowed | URI_BASIC)) !== 0) return i + 1;
  if (c === 37 && isHex(code(value, i + 1)) && isHex(code(value, i + 2))) return i + 3;
  return -1;
}

/** value[start, end) made only of URI characters (plus the `allowed` classes). */
function uriRun(value: string, start: number, end: number, allowed: number): boolean {
  let i = start;
  while (i < end) {
    i = uriChar(value, i, allowed);
    if (i < 0 || i > end) return false;
  }
  return true;
}

/** RFC 3986 absolute URI: scheme ":" hier-part ["?" query] ["#" fragment]. */
function isUri(value: string): boolean {
  if (!isAlpha(code(value, 0))) return false;
  let i = 1;
  while (i < value.length) {
    const c = code(value, i);
    if (!isAlpha(c) && !isDigit(c) && c !== 43 && c !== 45 && c !== 46) break;
    i++;
  }
  if (code(value, i) !== 58) return false;
  i++;
  const hash = indexFrom(value, "#", i);
  const query = indexFrom(value, "?", i, hash);
  const pathEnd = Math.min(query, hash);
  if (value.startsWith("//", i)) {
    const authorityEnd = Math.min(indexFrom(value, "/", i + 2, pathEnd), pathEnd);
    if (!isAuthority(value, i + 2, authorityEnd)) return false;
    i = authorityEnd;
  }
  return (
    uriRun(value, i, pathEnd, URI_COLON_AT | URI_SLASH) &&
    uriRun(value, pathEnd + 1, hash, URI_COLON_AT | URI_SLASH | URI_QUESTION) &&
    uriRun(value, hash + 1, value.length, URI_COLON_AT | URI_SLASH | URI_QUESTION)
  );
}

function indexFrom(value: string, char: string, from: number, end = value.length): number {
  const found = value.indexOf(char, from);
  return found < 0 || found > end ? end : found;
}

function isAuthority(value: string, start: number, end: number): boolean {
  const at = value.lastIndexOf("@", end - 1);
  let host = start;
  if (at >= start) {
    if (!uriRun(value, start, at, URI_COLON_AT) || value.lastIndexOf("@", at - 1) >= start)
      return false;
    host = at + 1;
  }
  let hostEnd = end;
  if (code(value, host) === 91) {
    const close = value.indexOf("]", host);
    if (close < 0 || close >= end || !isIpv6(value, host + 1, close)) return false;
    hostEnd = close + 1;
  } else {
    const colon = value.lastIndexOf(":", end - 1);
    if (colon >= host) hostEnd = colon;
    if (!uriRun(value, host, hostEnd, 0)) return false;
  }
  if (hostEnd === end) return true;
  if (code(value, hostEnd) !== 58) return false;
  for (let i = hostEnd + 1; i < end; i++) if (!isDigit(code(value, i))) return false;
  return true;
}

/**
 * An http(s) URL naming a public-looking host: a domain name with an
 * alphabetic top-level label, or an IPv4 address outside the loopback,
 * private and link-local ranges; an optional port, then no whitespace.
 */
function isUrl(value: string): boolean {
  let i: number;
  const lower = value.slice(0, 8).toLowerCase();
  if (lower.startsWith("http://")) i = 7;
  else if (lower.startsWith("https://")) i = 8;
  else return false;
  for (let j = i; j < value.length; j++) if (isSpace(code(value, j))) return false;
  // The authority ends where a URL parser ends it: at "/", "\\", "?" or "#".
  let slash = value.length;
  for (let j = i; j < slash; j++) {
    const c = code(value, j);
    if (c === 47 || c === 92 || c === 63 || c === 35) slash = j;
  }
  const at = value.lastIndexOf("@", slash - 1);
  const host = at >= i ? at + 1 : i;
  if (at === i) return false;
  const colon = value.indexOf(":", host);
  let hostEnd = slash;
  if (colon >= 0 && colon < slash) {
    hostEnd = colon;
    const port = slash - colon - 1;
    if (port < 2 || port > 5 || digits(value, colon + 1, port) < 0) return false;
  }
  if (!isPublicHost(value, host, hostEnd)) return false;
  // The host a client would reach is the one the URL parser finds (it maps full-width digits,
  // reads numeric hosts as IPv4): it must be public too. The parser is linear in the input.
  let parsed: string;
  try {
    parsed = new URL(value).hostname;
  } catch {
    return false;
  }
  return isPublicHost(parsed, 0, parsed.length);
}

function isPublicHost(value: string, start: number, end: number): boolean {
  const octets = ipv4Octets(value, start, end);
  if (octets !== undefined) return isPublicIpv4(octets);
  return isDomainName(value, start, end);
}

const isSpace = (c: number) =>
  c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x2028 || c === 0x2029 || c === 0xfeff;

function isPublicIpv4([a, b, , d]: number[]): boolean {
  if (a === undefined || b === undefined || d === undefined) return false;
  if (a < 1 || a > 223 || d < 1 || d > 254) return false;
  if (a === 10 || a === 127 || (a === 169 && b === 254) || (a === 192 && b === 168)) return false;
  return !(a === 172 && b >= 16 && b <= 31);
}

/** Labels of letters (any script) and digits with inner hyphens; the last one alphabetic, 2+. */
function isDomainName(value: string, start: number, end: number): boolean {
  let label = 0;
  let alphabetic = true;
  let labels = 0;
  for (let i = start; i <= end; i++) {
    const c = i === end ? 46 : code(value, i);
    if (c === 46) {
      if (label === 0 || code(value, i - 1) === 45) return false;
      labels++;
      // An internationalised label as the URL parser writes it ("xn--p1ai") stands for letters.
      if (value.startsWith("xn--", i - label)) alphabetic = true;
      if (i === end) return labels > 1 && alphabetic && label >= 2;
      label = 0;
      alphabetic = true;
    } else if (isAlpha(c) || c >= 0xa1) label++;
    else if (isDigit(c) || (c === 45 && label > 0)) {
      label++;
      alphabetic = false;
    } else return false;
  }
  return false;
}
