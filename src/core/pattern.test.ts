import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "./errors.ts";
import { compilePattern } from "./pattern.ts";

describe("compilePattern", () => {
  it("matches a literal pattern exactly", () => {
    const matches = compilePattern("/login");
    expect(matches("/login")).toBe(true);
    expect(matches("/login/x")).toBe(false);
    expect(matches("/logins")).toBe(false);
    expect(matches("/")).toBe(false);
  });

  it("lower-cases and drops empty segments of the pattern as paths are", () => {
    const matches = compilePattern("/Reports//Annual/");
    expect(matches("/reports/annual")).toBe(true);
  });

  it("lets a trailing ** match the base and everything below it, but not a longer name", () => {
    const matches = compilePattern("/admin/**");
    expect(matches("/admin")).toBe(true);
    expect(matches("/admin/x")).toBe(true);
    expect(matches("/admin/x/y/z")).toBe(true);
    expect(matches("/administrator")).toBe(false);
    expect(matches("/admin-panel/x")).toBe(false);
    expect(matches("/public/admin/x")).toBe(false);
  });

  it("lets /** match every path", () => {
    const matches = compilePattern("/**");
    expect(matches("/")).toBe(true);
    expect(matches("/anything/at/all")).toBe(true);
  });

  it("lets * match exactly one whole segment", () => {
    const matches = compilePattern("/users/*");
    expect(matches("/users/42")).toBe(true);
    expect(matches("/users")).toBe(false);
    expect(matches("/users/42/posts")).toBe(false);
  });

  it("lets * inside a segment match within that segment only", () => {
    const matches = compilePattern("/static/*.css");
    expect(matches("/static/site.css")).toBe(true);
    expect(matches("/static/.css")).toBe(true);
    expect(matches("/static/site.js")).toBe(false);
    expect(matches("/static/site.css.map")).toBe(false);
    expect(matches("/static/sub/site.css")).toBe(false);
  });

  it("treats regular-expression characters in a segment literally", () => {
    const matches = compilePattern("/v1.0/*.(json)");
    expect(matches("/v1.0/a.(json)")).toBe(true);
    expect(matches("/v1x0/a.(json)")).toBe(false);
    expect(matches("/v1.0/a.json")).toBe(false);
  });

  it("lets ** in the middle match zero or more segments", () => {
    const matches = compilePattern("/api/**/edit");
    expect(matches("/api/edit")).toBe(true);
    expect(matches("/api/users/edit")).toBe(true);
    expect(matches("/api/users/42/edit")).toBe(true);
    expect(matches("/api/users/42")).toBe(false);
    expect(matches("/api/users/edit/more")).toBe(false);
    expect(matches("/other/users/edit")).toBe(false);
  });

  it("combines a middle ** with single-segment wildcards", () => {
    const matches = compilePattern("/files/**/*.pdf");
    expect(matches("/files/a.pdf")).toBe(true);
    expect(matches("/files/x/y/a.pdf")).toBe(true);
    expect(matches("/files/x/y/a.txt")).toBe(false);
  });

  it.each([
    ["/users/:id", "/users/*"],
    ["/users/{id}", "/users/*"],
    ["/users/[id]/posts", "/users/*/posts"],
    ["/docs/[...slug]", "/docs/*"],
  ])("refuses the route template %s when compiled, suggesting %s", (template, suggestion) => {
    expect(() => compilePattern(template)).toThrow(InvalidOptionsError);
    expect(() => compilePattern(template)).toThrow(suggestion);
  });

  it("treats other punctuation as text", () => {
    expect(compilePattern("/users/<id>")("/users/42")).toBe(false);
    expect(compilePattern("/a:b")("/a:b")).toBe(true);
  });

  it.each([
    ["no leading slash", "admin/**"],
    ["empty", ""],
    ["** glued to text", "/admin/**x"],
    ["** glued to a prefix", "/admin/x**"],
    ["query", "/admin?x"],
    ["fragment", "/admin#x"],
    ["backslash", "/admin\\x"],
    ["white space", "/ad min"],
    ["dot-dot segment", "/public/../admin"],
    ["dot segment", "/./admin"],
  ])("refuses a bad pattern (%s) with InvalidOptionsError", (_label, pattern) => {
    expect(() => compilePattern(pattern)).toThrow(InvalidOptionsError);
  });

  it("refuses a pattern that is not a string", () => {
    expect(() => compilePattern(42 as unknown as string)).toThrow(InvalidOptionsError);
  });
});
