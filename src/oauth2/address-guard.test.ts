import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "../core/errors.ts";
import { addressBytes, addressGuard, isPublicAddress, parseAddressRange } from "./address-guard.ts";

describe("address literals", () => {
  it("reads IPv4, IPv6, compressed, bracketed and dotted-tail forms alike", () => {
    const mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 10, 0, 0, 1];
    expect(addressBytes("10.0.0.1")).toEqual(mapped);
    expect(addressBytes("::ffff:10.0.0.1")).toEqual(mapped);
    expect(addressBytes("::ffff:a00:1")).toEqual(mapped);
    expect(addressBytes("0:0:0:0:0:ffff:0a00:0001")).toEqual(mapped);
    expect(addressBytes("[::ffff:10.0.0.1]")).toEqual(mapped);
    expect(addressBytes("::1")).toEqual([...new Array(15).fill(0), 1]);
    expect(addressBytes("::")).toEqual(new Array(16).fill(0));
    expect(addressBytes("2001:DB8::8:800:200C:417A")).toEqual([
      0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0x08, 0x08, 0, 0x20, 0x0c, 0x41, 0x7a,
    ]);
  });

  it("refuses what is not one plain literal", () => {
    for (const text of [
      "localhost",
      "example.com",
      "",
      "1.2.3",
      "1.2.3.4.5",
      "256.1.1.1",
      "010.0.0.1", // octal to some parsers
      "0x7f.0.0.1",
      "127.1",
      "2130706433",
      "1::2::3",
      "1:2:3:4:5:6:7:8:9",
      "1:2:3:4:5:6:7:8::",
      "::1%lo",
      "fe80::1%eth0",
      "12345::",
      "1.2.3.4::",
      "[::1",
      ":::",
      "::ffff:1.2.3",
    ])
      expect(addressBytes(text), text).toBeUndefined();
  });
});

describe("public addresses", () => {
  it.each([
    "0.0.0.0",
    "0.1.2.3",
    "10.0.0.0",
    "10.255.255.255",
    "100.64.0.1",
    "100.127.255.254",
    "127.0.0.1",
    "127.255.255.254",
    "169.254.169.254",
    "169.254.0.1",
    "172.16.0.1",
    "172.31.255.255",
    "192.0.0.8",
    "192.0.2.1",
    "192.88.99.1",
    "192.168.1.1",
    "198.18.0.1",
    "198.19.255.255",
    "198.51.100.7",
    "203.0.113.9",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "[::1]",
    "0:0:0:0:0:0:0:1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "[::ffff:a9fe:a9fe]",
    "::127.0.0.1", // IPv4-compatible, deprecated
    "::8.8.8.8",
    "64:ff9b::10.0.0.1", // NAT64 of a private address
    "64:ff9b::7f00:1",
    "64:ff9b:1::8.8.8.8", // local-use NAT64
    "2002:a00:1::", // 6to4 of 10.0.0.1
    "2002:7f00:1::1",
    "fc00::1",
    "fd12:3456:789a::1",
    "fe80::1",
    "febf:ffff::1",
    "fec0::1",
    "ff02::1",
    "ff0e::1",
    "2001:db8::1",
    "2001::1", // Teredo
    "3fff::1",
    "100::1", // discard-only
    "not an address",
    "metadata.google.internal",
  ])("refuses %s", (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "100.63.255.255", // just below CGNAT
    "100.128.0.0", // just above it
    "172.15.255.255",
    "172.32.0.0",
    "169.253.255.255",
    "192.169.0.1",
    "223.255.255.255",
    "::ffff:8.8.8.8",
    "::ffff:808:808",
    "64:ff9b::8.8.8.8",
    "2002:808:808::1",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
    "[2606:4700:4700::1111]",
    "2001:4860:4860::8888",
  ])("lets %s through", (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe("the allow-list", () => {
  it("lets the listed addresses and ranges through, in both IPv4 forms", () => {
    const allowed = addressGuard("test", ["127.0.0.1", "10.1.0.0/16", "fd00::/8"]);
    expect(allowed("127.0.0.1")).toBe(true);
    expect(allowed("::ffff:127.0.0.1")).toBe(true);
    expect(allowed("127.0.0.2")).toBe(false);
    expect(allowed("10.1.200.3")).toBe(true);
    expect(allowed("10.2.0.1")).toBe(false);
    expect(allowed("fd00::5")).toBe(true);
    expect(allowed("fe80::1")).toBe(false);
    expect(allowed("8.8.8.8")).toBe(true);
    expect(allowed("a name")).toBe(false);
  });

  it("refuses a malformed entry when built", () => {
    for (const bad of [["localhost"], ["10.0.0.0/33"], ["::/129"], ["10.0.0.0/"], [7]])
      expect(() => addressGuard("test", bad as string[])).toThrow(InvalidOptionsError);
    expect(() => addressGuard("test", "127.0.0.1" as never)).toThrow(InvalidOptionsError);
    expect(parseAddressRange("0.0.0.0/0")).toEqual({ prefix: expect.any(Array), bits: 96 });
  });
});
