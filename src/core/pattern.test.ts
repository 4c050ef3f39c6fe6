import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "./errors.ts";
import { compilePattern, patternCovers, uncoveredPath } from "./pattern.ts";

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

  it("treats dots and other punctuation in a segment literally", () => {
    const matches = compilePattern("/v1.0/*.json");
    expect(matches("/v1.0/a.json")).toBe(true);
    expect(matches("/v1x0/a.json")).toBe(false);
    expect(matches("/v1.0/ajson")).toBe(false);
    expect(compilePattern("/a:b/$x/!")("/a:b/$x/!")).toBe(true);
  });

  it("matches several ** and globs in one pattern", () => {
    const matches = compilePattern("/**/a*/**/*.b/**");
    expect(matches("/a/.b")).toBe(true);
    expect(matches("/x/a.b")).toBe(false);
    expect(matches("/x/a/a.b")).toBe(true);
    expect(matches("/x/ax/y/y.b/z")).toBe(true);
    expect(matches("/x/y.b/ax")).toBe(false);
    expect(compilePattern("/a*a*a*b")("/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")).toBe(false);
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

  it.each([
    ["an Express 5 named wildcard", "/files/*path", '"/files/**"'],
    ["an Express 5 wildcard at the root", "/*splat", '"/**"'],
    ["a regular-expression group", "/files/(.*)", '"/files/**"'],
    ["a repetition", "/files/a+", "regular-expression or glob syntax"],
    ["glob alternatives", "/img/{a,b}.png", "regular-expression or glob syntax"],
    ["whole-segment alternatives", "/{a,b}", "one rule for each alternative"],
    ["a character class", "/img/[ab].png", "regular-expression or glob syntax"],
    ["an alternation", "/a|b", "regular-expression or glob syntax"],
    ["a Flask-style template", "/users/<id>", '"/users/*"'],
    ["a percent-escape", "/caf%C3%A9", "write the character itself"],
    ["a semicolon", "/a;jsessionid=1", '";"'],
    ["a NUL", "/a\0", "control characters"],
  ])("refuses %s (%s), saying what to write", (_label, pattern, advice) => {
    expect(() => compilePattern(pattern)).toThrow(InvalidOptionsError);
    expect(() => compilePattern(pattern)).toThrow(advice);
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

/** A repeatable stream of integers below `n` (mulberry32), so a failing case can be replayed. */
function seeded(start: number): (n: number) => number {
  let seed = start >>> 0;
  return (n) => {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
}

/** The matcher's meaning written independently, as a regular expression over the whole path (tests only). */
function reference(pattern: string): (path: string) => boolean {
  const segments = pattern
    .toLowerCase()
    .split("/")
    .filter((s) => s !== "");
  const source = segments
    .map((s) =>
      s === "**"
        ? "(?:/[^/]+)*"
        : `/${s
            .split("*")
            .map((part) => part.replace(/[.$]/g, "\\$&"))
            .join("[^/]*")}`,
    )
    .join("");
  const regex = new RegExp(`^${source}$`);
  return (path) => regex.test(path === "/" ? "" : path);
}

const GLOBS = ["a", "b", "ab", "a.b", "*", "a*", "*.b", "*a*", "a*b", "b*a", "*ab*", "**", "**"];
const FILLS = ["a", "b", "c", "ab", "ba", "aa", "bb", "aab", "abb", "a.b", "aba", ".b", "b.ab"];

describe("patternCovers", () => {
  const random = seeded(23);
  const pick = <T>(list: readonly T[]): T => list[random(list.length)] as T;
  const pattern = (): string =>
    `/${Array.from({ length: random(5) }, () => pick(GLOBS)).join("/")}`;
  const randomPath = (): string =>
    `/${Array.from({ length: random(6) }, () => pick(FILLS)).join("/")}`;
  /** A path `pattern` matches, built from its own literals with random fills. */
  const pathFrom = (p: string): string => {
    const out: string[] = [];
    for (const s of p.split("/").filter((x) => x !== "")) {
      if (s === "**") for (let n = random(3); n > 0; n--) out.push(pick(FILLS));
      else out.push(s.replace(/\*/g, () => pick(["", ...FILLS])) || pick(FILLS));
    }
    return `/${out.join("/")}`;
  };

  it("matches exactly what an independent reference matcher matches", () => {
    for (let round = 0; round < 2000; round++) {
      const p = pattern();
      const matches = compilePattern(p);
      const expected = reference(p);
      for (let i = 0; i < 20; i++) {
        const path = i % 2 === 0 ? randomPath() : pathFrom(p);
        expect(matches(path), `${p} on ${path}`).toBe(expected(path));
      }
    }
  });

  it("agrees with the matcher on sampled paths, and gives a witness whenever it says no", () => {
    let covered = 0;
    let uncovered = 0;
    for (let round = 0; round < 4000; round++) {
      const broad = round % 5 === 0 ? "/**" : pattern();
      const narrow = round % 7 === 0 ? broad.replace("**", "a/**") : pattern();
      const a = reference(broad);
      const b = reference(narrow);
      const witness = uncoveredPath(broad, narrow);
      expect(patternCovers(broad, narrow)).toBe(witness === undefined);
      if (witness !== undefined) {
        uncovered++;
        // The witness is a real request path the narrow pattern matches and the broad one misses.
        expect(b(witness) && !a(witness), `${broad} ⊉ ${narrow}: ${witness}`).toBe(true);
        expect(compilePattern(narrow)(witness) && !compilePattern(broad)(witness)).toBe(true);
        continue;
      }
      covered++;
      for (let i = 0; i < 60; i++) {
        const path = i % 3 === 0 ? randomPath() : pathFrom(narrow);
        if (b(path)) expect(a(path), `${broad} ⊇ ${narrow} misses ${path}`).toBe(true);
      }
    }
    // Both answers are exercised often enough to mean something.
    expect(covered).toBeGreaterThan(400);
    expect(uncovered).toBeGreaterThan(400);
  });

  it.each([
    ["/api/**", "/api/admin/**", true],
    ["/api/admin/**", "/api/**", false],
    ["/**", "/", true],
    ["/*/**", "/**", false],
    ["/*/**", "/**/x/**", true],
    ["/**/*/**", "/*/**", true],
    ["/*.pdf", "/a*.pdf", true],
    ["/*a*", "/*.ab", true],
    ["/a*", "/*.a", false],
    ["/*.*", "/a*.b", true],
    ["/x/*", "/x/**", false],
    ["/**/edit", "/users/*/edit", true],
    ["/Files/**", "/files/x", true],
  ])("covers(%s, %s) is %s", (broad, narrow, expected) => {
    expect(patternCovers(broad, narrow)).toBe(expected);
  });
});
