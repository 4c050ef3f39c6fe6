import { describe, expect, it } from "vitest";
import {
  addressNetwork,
  bunClientAddress,
  CLIENT_ADDRESS,
  checkClientAddressOptions,
  clientAddressOf,
  denoClientAddress,
  nodeServerClientAddress,
  normalizeAddress,
  PEER_ADDRESS,
  peerAddress,
  resolveClientAddress,
  workersClientAddress,
} from "./client-address.ts";
import { bindValue, contextFrom } from "./context.ts";
import { InvalidOptionsError } from "./errors.ts";

function request(peer: string | undefined, headers: Record<string, string> = {}): Request {
  const r = new Request("https://example.test/", { headers });
  if (peer !== undefined) bindValue(r, PEER_ADDRESS, peer);
  return r;
}

describe("normalizeAddress", () => {
  it.each([
    ["203.0.113.5", "203.0.113.5"],
    [" 203.0.113.5 ", "203.0.113.5"],
    ["203.0.113.5:8080", "203.0.113.5"],
    ["::ffff:203.0.113.5", "203.0.113.5"],
    ["::FFFF:cb00:7105", "203.0.113.5"],
    ["[::ffff:203.0.113.5]:443", "203.0.113.5"],
    ["0:0:0:0:0:ffff:203.0.113.5", "203.0.113.5"],
    ["2001:DB8:0:0:0:0:0:1", "2001:db8::1"],
    ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"],
    ["[2001:db8::1]", "2001:db8::1"],
    ["[2001:db8::1]:8443", "2001:db8::1"],
    ["fe80::1%eth0", "fe80::1"],
    ["::1", "::1"],
    ["::", "::"],
    ["2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["2001:db8:1:1:1:1:0:1", "2001:db8:1:1:1:1:0:1"],
    ["64:ff9b::192.0.2.33", "64:ff9b::c000:221"],
  ])("%s → %s", (input, expected) => {
    expect(normalizeAddress(input)).toBe(expected);
  });

  it.each([
    "",
    "unknown",
    "_hidden",
    "203.0.113",
    "203.0.113.256",
    "203.0.113.05", // leading zero: octal to some parsers
    "0x7f.0.0.1",
    "2001:db8::1::2",
    "2001:db8:::1",
    "1:2:3:4:5:6:7:8:9",
    "1:2:3:4:5:6:7",
    "12345::1",
    "2001:db8::g",
    "[203.0.113.5]",
    "[::1]x",
    "203.0.113.5:port",
    "203.0.113.5%eth0",
    "1:",
    `${"1".repeat(70)}`,
  ])("refuses %j", (input) => {
    expect(normalizeAddress(input)).toBeUndefined();
  });
});

describe("addressNetwork", () => {
  it("groups IPv6 by /56 by default, zeroing the host bits", () => {
    expect(addressNetwork("2001:db8:1:ab12::1")).toBe("2001:db8:1:ab00::/56");
    expect(addressNetwork("2001:db8:1:abff:ffff::7")).toBe("2001:db8:1:ab00::/56");
    expect(addressNetwork("2001:db8:1:ac00::1")).toBe("2001:db8:1:ac00::/56");
  });

  it("keeps one IPv4 address by default and honours other prefixes", () => {
    expect(addressNetwork("203.0.113.5")).toBe("203.0.113.5/32");
    expect(addressNetwork("203.0.113.5", { ipv4Prefix: 24 })).toBe("203.0.113.0/24");
    expect(addressNetwork("203.0.113.5", { ipv4Prefix: 0 })).toBe("0.0.0.0/0");
    expect(addressNetwork("2001:db8::1", { ipv6Prefix: 128 })).toBe("2001:db8::1/128");
    expect(addressNetwork("2001:db8:ffff::1", { ipv6Prefix: 33 })).toBe("2001:db8:8000::/33");
    expect(addressNetwork("::ffff:203.0.113.5")).toBe("203.0.113.5/32");
    expect(addressNetwork("nonsense")).toBeUndefined();
  });
});

describe("resolveClientAddress", () => {
  it("uses the peer and ignores forwarding headers by default", () => {
    const r = request("198.51.100.7", {
      "x-forwarded-for": "203.0.113.5",
      forwarded: "for=203.0.113.5",
    });
    expect(resolveClientAddress(r)).toBe("198.51.100.7");
    expect(resolveClientAddress(r, { trustProxy: 0 })).toBe("198.51.100.7");
    expect(clientAddressOf(r)).toBe("198.51.100.7");
  });

  it("is unknown without a peer or with a malformed one, and binds nothing", () => {
    expect(resolveClientAddress(request(undefined))).toBeUndefined();
    const bad = request("not an address");
    expect(resolveClientAddress(bad)).toBeUndefined();
    expect(contextFrom(bad).has(CLIENT_ADDRESS)).toBe(false);
  });

  it("with trustProxy n takes the n-th entry from the right, whatever the client prepends", () => {
    for (const spoof of ["", "1.1.1.1, ", "1.1.1.1, 2.2.2.2, 3.3.3.3, ", "garbage, "]) {
      const r = request("10.0.0.2", { "x-forwarded-for": `${spoof}203.0.113.5, 10.0.0.1` });
      expect(resolveClientAddress(r, { trustProxy: 2 })).toBe("203.0.113.5");
      expect(resolveClientAddress(r, { trustProxy: 1 })).toBe("10.0.0.1");
    }
  });

  it("reads several X-Forwarded-For lines as one list", () => {
    const headers = new Headers();
    headers.append("x-forwarded-for", "1.1.1.1");
    headers.append("x-forwarded-for", "203.0.113.5");
    const r = new Request("https://example.test/", { headers });
    bindValue(r, PEER_ADDRESS, "10.0.0.1");
    expect(resolveClientAddress(r, { trustProxy: 1 })).toBe("203.0.113.5");
  });

  it("falls back to the left-most entry, then the peer, when the list is short", () => {
    const short = request("10.0.0.1", { "x-forwarded-for": "203.0.113.5" });
    expect(resolveClientAddress(short, { trustProxy: 3 })).toBe("203.0.113.5");
    const none = request("198.51.100.7");
    expect(resolveClientAddress(none, { trustProxy: 2 })).toBe("198.51.100.7");
    const empty = request("198.51.100.7", { "x-forwarded-for": " , " });
    expect(resolveClientAddress(empty, { trustProxy: 1 })).toBe("198.51.100.7");
  });

  it("does not look past a malformed entry at the chosen position", () => {
    const r = request("10.0.0.1", { "x-forwarded-for": "203.0.113.5, unknown" });
    expect(resolveClientAddress(r, { trustProxy: 1 })).toBeUndefined();
  });

  it("normalizes the chosen entry", () => {
    const r = request("10.0.0.1", { "x-forwarded-for": "[::FFFF:203.0.113.5]:1234" });
    expect(resolveClientAddress(r, { trustProxy: 1 })).toBe("203.0.113.5");
  });

  it("with a trust function walks left over trusted hops only", () => {
    const trusted = (a: string) => a.startsWith("10.");
    const r = request("10.0.0.2", { "x-forwarded-for": "6.6.6.6, 203.0.113.5, 10.0.0.1" });
    expect(resolveClientAddress(r, { trustProxy: trusted })).toBe("203.0.113.5");
    const direct = request("203.0.113.9", { "x-forwarded-for": "6.6.6.6" });
    expect(resolveClientAddress(direct, { trustProxy: trusted })).toBe("203.0.113.9");
    const allTrusted = request("10.0.0.2", { "x-forwarded-for": "10.0.0.9" });
    expect(resolveClientAddress(allTrusted, { trustProxy: trusted })).toBe("10.0.0.9");
    expect(
      resolveClientAddress(request(undefined, { "x-forwarded-for": "203.0.113.5" }), {
        trustProxy: trusted,
      }),
    ).toBeUndefined();
  });

  it("reads RFC 7239 Forwarded only when asked, quoted IPv6 and all", () => {
    const r = request("10.0.0.1", {
      forwarded: 'for=6.6.6.6;proto=https, for="[2001:DB8::17]:4711";by="x,y", for=10.0.0.9',
      "x-forwarded-for": "7.7.7.7",
    });
    expect(resolveClientAddress(r, { trustProxy: 2, forwardedHeader: "forwarded" })).toBe(
      "2001:db8::17",
    );
    expect(resolveClientAddress(r, { trustProxy: 1 })).toBe("7.7.7.7");
    const hidden = request("10.0.0.1", { forwarded: "for=_hidden" });
    expect(
      resolveClientAddress(hidden, { trustProxy: 1, forwardedHeader: "forwarded" }),
    ).toBeUndefined();
  });

  it("validates its options", () => {
    expect(() => checkClientAddressOptions({ trustProxy: -1 })).toThrow(InvalidOptionsError);
    expect(() => checkClientAddressOptions({ trustProxy: 1.5 })).toThrow(InvalidOptionsError);
    expect(() =>
      checkClientAddressOptions({ forwardedHeader: "x-real-ip" as "forwarded" }),
    ).toThrow(InvalidOptionsError);
    expect(() => checkClientAddressOptions({ trustProxy: 2 })).not.toThrow();
  });
});

describe("runtime presets and peerAddress", () => {
  const r = () => new Request("https://example.test/");

  it("read what each runtime passes", () => {
    const req = r();
    const server = { requestIP: (x: Request) => (x === req ? { address: "::1" } : null) };
    expect(bunClientAddress(req, server)).toBe("::1");
    expect(bunClientAddress(req)).toBeUndefined();
    expect(denoClientAddress(req, { remoteAddr: { hostname: "127.0.0.1" } })).toBe("127.0.0.1");
    expect(denoClientAddress(req, { remoteAddr: { transport: "unix" } })).toBeUndefined();
    const socket = { remoteAddress: "::ffff:127.0.0.1" };
    expect(nodeServerClientAddress(req, { incoming: { socket } })).toBe("::ffff:127.0.0.1");
    expect(nodeServerClientAddress(req, { server: { incoming: { socket } } })).toBe(
      "::ffff:127.0.0.1",
    );
    const cf = new Request("https://example.test/", { headers: { "cf-connecting-ip": "1.2.3.4" } });
    expect(workersClientAddress(cf)).toBe("1.2.3.4");
  });

  it("peerAddress binds the peer before the next handler runs, passing rest on", async () => {
    let seen: string | undefined;
    const handler = peerAddress(denoClientAddress)(async (request, info) => {
      seen = contextFrom(request).get(PEER_ADDRESS);
      expect(info.remoteAddr.hostname).toBe("192.0.2.1");
      return new Response("ok");
    });
    await handler(r(), { remoteAddr: { hostname: "192.0.2.1" } });
    expect(seen).toBe("192.0.2.1");
  });

  it("peerAddress keeps an adapter's binding when the function finds nothing", async () => {
    const req = r();
    bindValue(req, PEER_ADDRESS, "192.0.2.9");
    let seen: string | undefined;
    await peerAddress(() => undefined)(async (request) => {
      seen = contextFrom(request).get(PEER_ADDRESS);
      return new Response("ok");
    })(req);
    expect(seen).toBe("192.0.2.9");
    expect(() => peerAddress("x" as never)).toThrow(InvalidOptionsError);
  });
});
