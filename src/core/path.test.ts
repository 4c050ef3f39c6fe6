import { describe, expect, it } from "vitest";
import { PROTECTED_PATH_VARIANTS } from "../../test/path-variants.ts";
import { bindValue, contextFrom } from "./context.ts";
import {
  MATCH_PATH,
  MAX_PATH_LENGTH,
  matchPath,
  normalizePath,
  pathOfUrl,
  RAW_PATH,
} from "./path.ts";

describe("normalizePath", () => {
  it("keeps a plain lower-case path as it is", () => {
    expect(normalizePath("/admin/x")).toBe("/admin/x");
    expect(normalizePath("/api/v1/users/42")).toBe("/api/v1/users/42");
  });

  it("returns the root path for /", () => {
    expect(normalizePath("/")).toBe("/");
  });

  it.each(PROTECTED_PATH_VARIANTS)("$label ($raw) gives $normalized", ({ raw, normalized }) => {
    expect(normalizePath(raw)).toBe(normalized);
  });

  it("decodes ordinary escapes exactly once", () => {
    expect(normalizePath("/caf%C3%A9/menu")).toBe("/café/menu");
    expect(normalizePath("/a%20b")).toBe("/a b");
  });

  it("refuses paths that do not start with a slash", () => {
    expect(normalizePath("")).toBeUndefined();
    expect(normalizePath("admin/x")).toBeUndefined();
    expect(normalizePath("*")).toBeUndefined();
    expect(normalizePath("http://h/admin/x")).toBeUndefined();
  });

  it("accepts a path of exactly MAX_PATH_LENGTH and refuses one character more", () => {
    const atLimit = `/${"a".repeat(MAX_PATH_LENGTH - 1)}`;
    expect(atLimit).toHaveLength(MAX_PATH_LENGTH);
    expect(normalizePath(atLimit)).toBe(atLimit);
    expect(normalizePath(`${atLimit}a`)).toBeUndefined();
    // The limit applies before any decoding work, also on the slow path.
    expect(normalizePath(`/%61${"b".repeat(MAX_PATH_LENGTH)}`)).toBeUndefined();
  });

  it("refuses raw characters that cannot occur in a request target", () => {
    for (const raw of ["/admin/ x", "/adm\u0131n/x", "/admin/\u{1F600}", "/admin/x\r\n"]) {
      expect(normalizePath(raw), JSON.stringify(raw)).toBeUndefined();
    }
  });

  it("treats segments that merely contain dots as ordinary names", () => {
    expect(normalizePath("/files/a..b")).toBe("/files/a..b");
    expect(normalizePath("/files/.well-known")).toBe("/files/.well-known");
  });
});

describe("pathOfUrl", () => {
  it("strips the query", () => {
    expect(pathOfUrl("http://h/admin/x?next=/public")).toBe("/admin/x");
  });

  it("strips the fragment, also when it comes before a question mark", () => {
    expect(pathOfUrl("http://h/admin/x#top")).toBe("/admin/x");
    expect(pathOfUrl("http://h/admin/x#frag?not-a-query")).toBe("/admin/x");
    expect(pathOfUrl("http://h/admin/x?q=1#frag")).toBe("/admin/x");
  });

  it("ignores userinfo and port", () => {
    expect(pathOfUrl("https://user:pw@example.com:8443/p/q?x")).toBe("/p/q");
  });

  it("gives / for a URL without a path", () => {
    expect(pathOfUrl("http://h")).toBe("/");
  });

  it("keeps the path exactly as serialized, escapes and double slashes included", () => {
    expect(pathOfUrl(new Request("http://h//%61dmin//x?y=1").url)).toBe("//%61dmin//x");
  });

  it("accepts a bare path", () => {
    expect(pathOfUrl("/a/b?c")).toBe("/a/b");
  });
});

describe("matchPath", () => {
  it("normalizes the request URL's path", () => {
    expect(matchPath(new Request("http://h/ADMIN//x/?q=1"))).toBe("/admin/x");
  });

  it("prefers the raw path an adapter bound over the URL", () => {
    const request = new Request("http://h/public/ok");
    bindValue(request, RAW_PATH, "/Admin/x");
    expect(matchPath(request)).toBe("/admin/x");
  });

  it("refuses a bound raw path that the URL parser would have cleaned up", () => {
    const request = new Request("http://h/admin/x");
    bindValue(request, RAW_PATH, "/public/../admin/x");
    expect(matchPath(request)).toBeUndefined();
  });

  it("binds the normalized path once, so every later leg matches the same string", () => {
    const request = new Request("http://h/Admin/X");
    expect(matchPath(request)).toBe("/admin/x");
    expect(contextFrom(request).get(MATCH_PATH)).toBe("/admin/x");
    // A raw path bound afterwards does not change a decision already taken.
    bindValue(request, RAW_PATH, "/public/y");
    expect(matchPath(request)).toBe("/admin/x");
  });

  it("binds nothing when the path is refused", () => {
    const request = new Request("http://h/admin%2fx");
    expect(matchPath(request)).toBeUndefined();
    expect(contextFrom(request).has(MATCH_PATH)).toBe(false);
  });
});
