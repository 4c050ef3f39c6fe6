import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "./errors.ts";
import { mountPathOption } from "./options.ts";

describe("mountPathOption", () => {
  it("takes absolute paths of plain segments", () => {
    for (const path of [
      "/",
      "/oauth/token",
      "/a/b/",
      "/v1/x:y@z",
      "/.well-known/agent-configuration",
    ])
      expect(mountPathOption("test", "path", path)).toBe(path);
  });

  it("refuses relative paths, empty or dot segments and other characters, naming the option", () => {
    for (const path of [
      "",
      "oauth",
      "//x",
      "/a//b",
      "/a/./b",
      "/a/..",
      "/a b",
      "/a?b",
      "/a#b",
      "/ü",
      7,
    ])
      expect(() => mountPathOption("test", "paths.token", path)).toThrow(
        new InvalidOptionsError("test: paths.token must be an absolute path"),
      );
  });

  it("refuses a long path with a stray character at its end at once, checking segment by segment", () => {
    // A nested-quantifier pattern over the whole path backtracks exponentially on this shape.
    expect(() => mountPathOption("test", "path", `/${"a".repeat(5_000)} `)).toThrow(
      InvalidOptionsError,
    );
  });
});
