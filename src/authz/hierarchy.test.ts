import { describe, expect, it } from "vitest";
import { createAuthentication } from "../core/authentication.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { RoleHierarchy, type RoleHierarchyInit } from "./hierarchy.ts";

const held = (hierarchy: RoleHierarchy, ...roles: string[]) =>
  [...hierarchy.authoritiesOf(createAuthentication("p", roles))].sort();

describe("RoleHierarchy.parse", () => {
  it("expands ADMIN > STAFF > USER transitively", () => {
    const hierarchy = RoleHierarchy.parse("ADMIN > STAFF > USER");
    expect(held(hierarchy, "ADMIN")).toEqual(["ADMIN", "STAFF", "USER"]);
    expect(held(hierarchy, "STAFF")).toEqual(["STAFF", "USER"]);
    expect(held(hierarchy, "USER")).toEqual(["USER"]);
  });

  it("never lets a lower role reach a higher one", () => {
    const hierarchy = RoleHierarchy.parse("ADMIN > STAFF > USER");
    expect(hierarchy.authoritiesOf(createAuthentication("u", ["USER"])).has("ADMIN")).toBe(false);
  });

  it("keeps roles the hierarchy does not mention", () => {
    const hierarchy = RoleHierarchy.parse("ADMIN > USER");
    expect(held(hierarchy, "AUDITOR", "USER")).toEqual(["AUDITOR", "USER"]);
  });

  it("accepts several chains separated by new lines or commas", () => {
    const hierarchy = RoleHierarchy.parse("ADMIN > STAFF\nSTAFF > USER, ADMIN > AUDITOR");
    expect(held(hierarchy, "ADMIN")).toEqual(["ADMIN", "AUDITOR", "STAFF", "USER"]);
  });

  it.each([
    ["a single role", "ADMIN"],
    ["a dangling >", "ADMIN >"],
    ["a leading >", "> USER"],
    ["an empty role between two >", "ADMIN >> USER"],
    ["a role with inner white space", "SUPER ADMIN > USER"],
  ])("throws InvalidOptionsError for %s", (_label, text) => {
    expect(() => RoleHierarchy.parse(text)).toThrow(InvalidOptionsError);
  });

  it.each([
    ["a two-role cycle", "A > B > A"],
    ["a self loop", "A > A"],
    ["a cycle across lines", "A > B\nB > C\nC > A"],
  ])("throws InvalidOptionsError for %s", (_label, text) => {
    expect(() => RoleHierarchy.parse(text)).toThrow(InvalidOptionsError);
  });
});

describe("RoleHierarchy.from (record form)", () => {
  it("expands the record like the string form", () => {
    const hierarchy = RoleHierarchy.from({ ADMIN: ["STAFF"], STAFF: ["USER"] });
    expect(held(hierarchy, "ADMIN")).toEqual(["ADMIN", "STAFF", "USER"]);
  });

  it("throws InvalidOptionsError for a cycle", () => {
    expect(() => RoleHierarchy.from({ A: ["B"], B: ["A"] })).toThrow(InvalidOptionsError);
  });

  it("throws InvalidOptionsError for an empty child role", () => {
    expect(() => RoleHierarchy.from({ ADMIN: [""] })).toThrow(InvalidOptionsError);
  });

  it("throws InvalidOptionsError when a role maps to a string instead of a list", () => {
    // Iterating the string would silently grant the roles "S", "T", "A" and "F".
    const malformed = { ADMIN: "STAFF" } as unknown as Record<string, string[]>;
    expect(() => RoleHierarchy.from(malformed)).toThrow(InvalidOptionsError);
  });
});

describe("RoleHierarchy.of", () => {
  it("passes undefined and RoleHierarchy instances through", () => {
    const hierarchy = RoleHierarchy.parse("A > B");
    expect(RoleHierarchy.of(undefined)).toBeUndefined();
    expect(RoleHierarchy.of(hierarchy)).toBe(hierarchy);
  });

  it("accepts the string and record forms", () => {
    expect(held(RoleHierarchy.of("A > B") as RoleHierarchy, "A")).toEqual(["A", "B"]);
    expect(held(RoleHierarchy.of({ A: ["B"] }) as RoleHierarchy, "A")).toEqual(["A", "B"]);
  });

  it.each([null, 42, true])("throws InvalidOptionsError for %j", (value) => {
    expect(() => RoleHierarchy.of(value as unknown as RoleHierarchyInit)).toThrow(
      InvalidOptionsError,
    );
  });
});
