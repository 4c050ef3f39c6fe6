import { describe, expect, it } from "vitest";
import { MAX_COOKIE_HEADER_LENGTH, readCookie, serializeCookie, validateCookie } from "./cookie.ts";

const ID = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ";

describe("readCookie", () => {
  it("reads one cookie among others, ignoring the spaces around pairs", () => {
    expect(readCookie(`a=1; sid=${ID}; b=2`, "sid")).toBe(ID);
    expect(readCookie(`sid=${ID}`, "sid")).toBe(ID);
    expect(readCookie(`a=1;sid=${ID};b=2`, "sid")).toBe(ID);
    expect(readCookie(`  sid = ${ID}  `, "sid")).toBe(ID);
  });

  it("is undefined without a header or without the cookie", () => {
    expect(readCookie(null, "sid")).toBeUndefined();
    expect(readCookie("", "sid")).toBeUndefined();
    expect(readCookie("a=1; b=2", "sid")).toBeUndefined();
  });

  it("matches the name exactly and case-sensitively", () => {
    expect(readCookie(`xsid=${ID}`, "sid")).toBeUndefined();
    expect(readCookie(`sidx=${ID}`, "sid")).toBeUndefined();
    expect(readCookie(`SID=${ID}`, "sid")).toBeUndefined();
    expect(readCookie(`__Host-sid=${ID}`, "sid")).toBeUndefined();
  });

  it("takes the first of several cookies with the name, and does not fall back when it is malformed", () => {
    expect(readCookie("sid=first; sid=second", "sid")).toBe("first");
    expect(readCookie("sid=bad\\value; sid=good", "sid")).toBeUndefined();
  });

  it("skips pairs without '=' and keeps '=' inside a value", () => {
    expect(readCookie(`junk; sid=${ID}`, "sid")).toBe(ID);
    expect(readCookie("sid=YWJj==", "sid")).toBe("YWJj==");
  });

  it("strips one pair of surrounding double quotes", () => {
    expect(readCookie(`sid="${ID}"`, "sid")).toBe(ID);
    expect(readCookie('sid=""', "sid")).toBe("");
    expect(readCookie('sid="a"b"', "sid")).toBeUndefined();
    expect(readCookie('sid="abc', "sid")).toBeUndefined();
  });

  it.each([
    ["a comma", "a,b"],
    ["a backslash", "a\\b"],
    ["a space inside", "a b"],
    ["a lone double quote", 'a"b'],
    ["non-ASCII", "caf\u00e9"],
    ["DEL", "a\u007fb"],
    ["a tab inside", "a\tb"],
  ])("refuses a value with %s", (_label, value) => {
    expect(readCookie(`sid=${value}`, "sid")).toBeUndefined();
  });

  it("reads a header of up to 32 KiB and ignores a longer one entirely", () => {
    expect(MAX_COOKIE_HEADER_LENGTH).toBe(32 * 1024);
    const exact = `sid=${ID}; pad=`;
    const atLimit = exact + "x".repeat(MAX_COOKIE_HEADER_LENGTH - exact.length);
    expect(atLimit.length).toBe(MAX_COOKIE_HEADER_LENGTH);
    expect(readCookie(atLimit, "sid")).toBe(ID);
    // 12 KiB: past the old 8 KiB bound, well within the new one.
    expect(readCookie(`sid=${ID}; pad=${"x".repeat(12 * 1024)}`, "sid")).toBe(ID);
    expect(readCookie(`${atLimit}x`, "sid")).toBeUndefined();
  });
});

describe("serializeCookie", () => {
  it("is secure by default: Path=/; HttpOnly; Secure; SameSite=Lax, no Domain, no lifetime", () => {
    expect(serializeCookie("sid", ID)).toBe(`sid=${ID}; Path=/; HttpOnly; Secure; SameSite=Lax`);
  });

  it("deletes with Max-Age=0 and an Expires in 1970", () => {
    expect(serializeCookie("sid", "", { maxAge: 0 })).toBe(
      "sid=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; Secure; SameSite=Lax",
    );
    expect(serializeCookie("sid", "", { maxAge: -10 })).toContain("Max-Age=0; Expires=");
  });

  it("floors Max-Age and writes the attributes it is given", () => {
    expect(
      serializeCookie("sid", "v", {
        maxAge: 3600.9,
        domain: "app.example",
        path: "/app",
        httpOnly: false,
        secure: false,
        sameSite: "Strict",
      }),
    ).toBe("sid=v; Path=/app; Domain=app.example; Max-Age=3600; SameSite=Strict");
  });

  it.each([
    ["a semicolon", "a;b"],
    ["a space", "a b"],
    ["a newline", "a\nb"],
    ["a comma", "a,b"],
    ["non-ASCII", "\u00e9"],
  ])("throws on a value with %s (no header injection)", (_label, value) => {
    expect(() => serializeCookie("sid", value)).toThrow(TypeError);
  });
});

describe("validateCookie", () => {
  it("accepts sound settings", () => {
    expect(validateCookie("__Host-sid", {})).toBeUndefined();
    expect(validateCookie("__Host-sid", { secure: true, path: "/" })).toBeUndefined();
    expect(validateCookie("__Secure-sid", { domain: "app.example", path: "/x" })).toBeUndefined();
    expect(validateCookie("sid", { secure: false, sameSite: "Lax" })).toBeUndefined();
  });

  it.each([
    ["a name with a space", "s id", {}],
    ["a name with '='", "s=id", {}],
    ["an empty name", "", {}],
    ["a non-ASCII name", "s\u00e9", {}],
    ["__Host- without Secure", "__Host-sid", { secure: false }],
    ["__Host- with a Domain", "__Host-sid", { domain: "app.example" }],
    ["__Host- with another Path", "__Host-sid", { path: "/app" }],
    ["__Secure- without Secure", "__Secure-sid", { secure: false }],
    ["SameSite=None without Secure", "sid", { sameSite: "None" as const, secure: false }],
    ["a relative path", "sid", { path: "app" }],
    ["a path with ';'", "sid", { path: "/a;b" }],
    ["a domain with ';'", "sid", { domain: "app.example; Secure" }],
    ["a domain with a space", "sid", { domain: "app .example" }],
  ])("reports %s", (_label, name, attributes) => {
    expect(validateCookie(name, attributes)).toEqual(expect.any(String));
  });
});
