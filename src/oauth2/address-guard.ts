import { InvalidOptionsError } from "../core/errors.ts";

// Which IP addresses a server-side fetch made on a client's say-so may reach. Every address is
// held as 16 bytes: an IPv4 address as its IPv4-mapped IPv6 form (::ffff:a.b.c.d), so one range
// table covers both families and a mapped address can never slip past an IPv4 rule.

type Bytes = readonly number[];

interface Range {
  readonly prefix: Bytes;
  readonly bits: number;
}

const DECIMAL_OCTET = /^(?:0|[1-9][0-9]{0,2})$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

/** The four bytes of a dotted-decimal IPv4 address; no octal, hex or short forms (`010.1`, `0x7f.1`). */
function parseIPv4(text: string): number[] | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const bytes: number[] = [];
  for (const part of parts) {
    if (!DECIMAL_OCTET.test(part)) return undefined;
    const value = Number(part);
    if (value > 255) return undefined;
    bytes.push(value);
  }
  return bytes;
}

/** The sixteen bytes of an IPv6 address (`::` compression and a dotted IPv4 tail allowed; no zone). */
function parseIPv6(text: string): number[] | undefined {
  if (text.length > 45) return undefined;
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string): number[] | undefined => {
    if (half === "") return [];
    const out: number[] = [];
    const parts = half.split(":");
    for (const [i, part] of parts.entries()) {
      if (i === parts.length - 1 && part.includes(".")) {
        const v4 = parseIPv4(part);
        if (v4 === undefined) return undefined;
        out.push(((v4[0] as number) << 8) | (v4[1] as number));
        out.push(((v4[2] as number) << 8) | (v4[3] as number));
      } else if (HEX_GROUP.test(part)) out.push(Number.parseInt(part, 16));
      else return undefined;
    }
    return out;
  };
  const head = groupsOf(halves[0] as string);
  const tail = halves.length === 2 ? groupsOf(halves[1] as string) : [];
  if (head === undefined || tail === undefined) return undefined;
  // A dotted tail is only allowed at the very end.
  if (halves.length === 2 && (halves[0] as string).includes(".")) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...new Array<number>(missing).fill(0), ...tail];
  return groups.flatMap((group) => [group >> 8, group & 0xff]);
}

const MAPPED_PREFIX = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/**
 * The 16-byte form of an address literal, IPv4 as IPv4-mapped IPv6; `undefined`
 * for anything else (a name, a zone id `fe80::1%eth0`, a malformed literal).
 * Brackets around an IPv6 literal (`[::1]`, as URLs write it) are accepted.
 */
export function addressBytes(address: string): Bytes | undefined {
  const v4 = parseIPv4(address);
  if (v4 !== undefined) return [...MAPPED_PREFIX, ...v4];
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  return parseIPv6(bare);
}

function inRange(bytes: Bytes, range: Range): boolean {
  const whole = range.bits >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== range.prefix[i]) return false;
  const rest = range.bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((bytes[whole] as number) & mask) === ((range.prefix[whole] as number) & mask);
}

/** A range from `a.b.c.d/n`, `x::y/n` or a single address; `undefined` when malformed. */
export function parseAddressRange(text: string): Range | undefined {
  const slash = text.indexOf("/");
  const address = slash === -1 ? text : text.slice(0, slash);
  const prefix = addressBytes(address);
  if (prefix === undefined) return undefined;
  const isV4 = parseIPv4(address) !== undefined;
  const max = isV4 ? 32 : 128;
  const given = slash === -1 ? String(max) : text.slice(slash + 1);
  if (!/^(?:0|[1-9][0-9]{0,2})$/.test(given) || Number(given) > max) return undefined;
  return { prefix, bits: Number(given) + (isV4 ? 96 : 0) };
}

function ranges(list: readonly string[]): Range[] {
  return list.map((text) => {
    const range = parseAddressRange(text);
    if (range === undefined) throw new Error(`bad built-in range ${text}`);
    return range;
  });
}

// IPv4 special-purpose ranges (the IANA registry): this network, private, shared (CGNAT),
// loopback, link-local (cloud metadata at 169.254.169.254), IETF protocol assignments,
// documentation, AS112, AMT, 6to4 relay, benchmarking, multicast, reserved and broadcast.
const IPV4_REFUSED = ranges([
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.31.196.0/24",
  "192.52.193.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "192.175.48.0/24",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
]);

const MAPPED = ranges(["::ffff:0:0/96"])[0] as Range;
const NAT64 = ranges(["64:ff9b::/96"])[0] as Range;
const SIX_TO_FOUR = ranges(["2002::/16"])[0] as Range;
// Only global unicast is public; ULA fc00::/7, link-local fe80::/10, multicast ff00::/8,
// loopback, unspecified and the IPv4-compatible ::/96 all lie outside it.
const GLOBAL_UNICAST = ranges(["2000::/3"])[0] as Range;
// Within global unicast: IETF protocol assignments (Teredo 2001::/32 among them), documentation,
// AS112 direct delegation.
const IPV6_REFUSED = ranges(["2001::/23", "2001:db8::/32", "3fff::/20", "2620:4f:8000::/48"]);

function publicIPv4(v4: Bytes): boolean {
  const mapped = [...MAPPED_PREFIX, ...v4];
  return !IPV4_REFUSED.some((range) => inRange(mapped, range));
}

/**
 * Whether `address` (an IP literal) is a public unicast address a server may
 * fetch from on a stranger's say-so: false for private, loopback, link-local
 * (cloud metadata at 169.254.169.254), CGNAT, multicast, unspecified,
 * documentation and other special-purpose ranges, for unique-local IPv6
 * (fc00::/7), for the IPv4-mapped, NAT64 and 6to4 forms of a refused IPv4
 * address, and for anything that is not an address literal.
 */
export function isPublicAddress(address: string): boolean {
  const bytes = addressBytes(address);
  if (bytes === undefined) return false;
  if (inRange(bytes, MAPPED)) return publicIPv4(bytes.slice(12));
  if (inRange(bytes, NAT64)) return publicIPv4(bytes.slice(12));
  if (!inRange(bytes, GLOBAL_UNICAST)) return false;
  if (inRange(bytes, SIX_TO_FOUR)) return publicIPv4(bytes.slice(2, 6));
  return !IPV6_REFUSED.some((range) => inRange(bytes, range));
}

/**
 * A test for "may this address be reached": public addresses, plus those in
 * `allowed` (addresses or CIDR ranges, an explicit exception a deployment or a
 * test makes). Throws when an entry of `allowed` is malformed.
 */
export function addressGuard(
  where: string,
  allowed: readonly string[],
): (address: string) => boolean {
  if (!Array.isArray(allowed))
    throw new InvalidOptionsError(
      `${where}: allowAddresses must be an array of addresses or CIDR ranges`,
    );
  const exceptions = allowed.map((text) => {
    const range = typeof text === "string" ? parseAddressRange(text) : undefined;
    if (range === undefined)
      throw new InvalidOptionsError(
        `${where}: allowAddresses has ${JSON.stringify(text)}, which is no address or CIDR range`,
      );
    return range;
  });
  return (address) => {
    const bytes = addressBytes(address);
    if (bytes === undefined) return false;
    return isPublicAddress(address) || exceptions.some((range) => inRange(bytes, range));
  };
}
