import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "../core/errors.ts";
import { CapabilityRegistry } from "./capabilities.ts";
import { checkPlainArguments, compileSchema } from "./schema.ts";

const KIB64 = 64 * 1024;
const object = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: "object",
  properties,
  ...extra,
});
const verdict = (schema: unknown, value: unknown) =>
  compileSchema("test", schema)(value).length === 0 ? "valid" : "invalid";
const OMITTED = { path: "", message: "more errors were found; only the first 20 are listed" };

/**
 * `value` rebuilt so that every read of its objects and arrays is counted:
 * the checker's work, measured without a clock.
 */
function counted(value: unknown, meter: { reads: number }): unknown {
  if (typeof value !== "object" || value === null) return value;
  const copy = Array.isArray(value)
    ? value.map((inner) => counted(inner, meter))
    : Object.fromEntries(Object.entries(value).map(([k, inner]) => [k, counted(inner, meter)]));
  return new Proxy(copy, {
    get(target, key, receiver) {
      meter.reads++;
      return Reflect.get(target, key, receiver);
    },
    has(target, key) {
      meter.reads++;
      return Reflect.has(target, key);
    },
    ownKeys(target) {
      meter.reads++;
      return Reflect.ownKeys(target);
    },
    getOwnPropertyDescriptor(target, key) {
      meter.reads++;
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
  });
}

/** The errors `schema` finds in `value`, and how many reads of `value` it took. */
function measured(schema: unknown, value: unknown) {
  const check = compileSchema("test", schema);
  const meter = { reads: 0 };
  const errors = check(counted(value, meter));
  return { errors, reads: meter.reads };
}

/** `$defs` l0..l{depth}: each level applies the next `ways` times to the same value. */
function diamond(keyword: "allOf" | "anyOf" | "oneOf", ways: number, depth: number) {
  const $defs: Record<string, unknown> = { [`l${depth}`]: { type: "string" } };
  for (let i = 0; i < depth; i++)
    $defs[`l${i}`] = {
      [keyword]: Array.from({ length: ways }, () => ({ $ref: `#/$defs/l${i + 1}` })),
    };
  return { $defs, type: "object", properties: { u: { $ref: "#/$defs/l0" } } };
}

type Descent = readonly [
  name: string,
  schema: (next: unknown) => Record<string, unknown>,
  value: (inner: unknown) => unknown,
];
type Join = readonly [name: string, schema: (other: unknown) => Record<string, unknown>];

/**
 * A diamond across levels: level i descends to level i + 1 by `descent`, and
 * reaches a second subschema that descends the same way by `join`, so an
 * error report that is not memoised visits the wrong leaf 2^depth times (or
 * more). The value nests `depth` levels down to a number where a string is
 * wanted.
 */
function acrossLevels([, descend, wrap]: Descent, [, join]: Join, depth: number) {
  const $defs: Record<string, unknown> = { [`l${depth}`]: { type: "string" } };
  let value: unknown = 1;
  for (let i = depth - 1; i >= 0; i--) {
    const next = { $ref: `#/$defs/l${i + 1}` };
    $defs[`m${i}`] = descend(next);
    $defs[`l${i}`] = { ...descend(next), ...join({ $ref: `#/$defs/m${i}` }) };
    value = wrap(value);
  }
  return { schema: { $defs, $ref: "#/$defs/l0" }, value };
}

const DESCENTS: readonly Descent[] = [
  ["properties", (next) => ({ properties: { x: next } }), (inner) => ({ x: inner })],
  ["additionalProperties", (next) => ({ additionalProperties: next }), (inner) => ({ x: inner })],
  ["items", (next) => ({ items: next }), (inner) => [inner]],
  ["prefixItems", (next) => ({ prefixItems: [next] }), (inner) => [inner]],
];
const JOINS: readonly Join[] = [
  ["allOf", (other) => ({ allOf: [other, other] })],
  ["$ref beside other keywords", (other) => other as Record<string, unknown>],
  // biome-ignore lint/suspicious/noThenProperty: the JSON Schema keyword
  ["then", (other) => ({ if: true, then: other })],
  ["else", (other) => ({ if: false, else: other })],
];

describe("input schemas: adversarial arguments are checked in linear time", () => {
  it("answers a 40-byte near-URL under format url at once (the issue's verdict; a generous bound)", () => {
    // The old validator's url expression took seconds here, about four times more per two bytes.
    const check = compileSchema(
      "test",
      object({ u: { type: "string", format: "url", maxLength: 64 } }),
    );
    const u = `http://${"a".repeat(32)}_`;
    expect(u).toHaveLength(40);
    const started = performance.now();
    const errors = check({ u });
    expect(performance.now() - started).toBeLessThan(1000);
    expect(errors).toEqual([{ path: "/u", message: "must be a valid url" }]);
  });

  it("gives verdicts on 64 KiB near-URLs, near-URIs and near-emails", () => {
    const a = "a".repeat(KIB64);
    const cases: [string, string, "valid" | "invalid"][] = [
      ["url", `http://${a}_`, "invalid"],
      ["url", `http://${a}.com/`, "valid"],
      ["url", `https://${"a-".repeat(KIB64 / 2)}.com`, "invalid"],
      ["url", `http://example.com/${"%".repeat(KIB64)}`, "valid"],
      ["url", `http://example.com/${"a".repeat(KIB64)} `, "invalid"],
      ["uri", `http://${a}`, "valid"],
      ["uri", `http://${"%a".repeat(KIB64 / 2)}`, "invalid"],
      ["uri", `x:${"/a".repeat(KIB64 / 2)}?${"?".repeat(100)}#${"@".repeat(100)}`, "valid"],
      ["uri", `${a}`, "invalid"],
      ["uri", `http://[${"1:".repeat(KIB64 / 2)}]/`, "invalid"],
      ["email", `${a}@example.com`, "invalid"],
      ["email", `a@${"a.".repeat(KIB64 / 2)}`, "invalid"],
      ["email", `${"a.".repeat(30)}a@example.com`, "valid"],
      ["email", `${"!".repeat(60)}@${"a.".repeat(60)}com`, "valid"],
      ["hostname", `${"a.".repeat(KIB64 / 2)}a`, "invalid"],
      ["date-time", `2026-01-01T00:00:00.${"1".repeat(KIB64)}Z`, "valid"],
      ["date-time", `2026-01-01T00:00:00.${"1".repeat(KIB64)}`, "invalid"],
      ["ipv6", "1:".repeat(KIB64 / 2), "invalid"],
      ["uuid", "0".repeat(KIB64), "invalid"],
    ];
    for (const [format, value, expected] of cases)
      expect(verdict({ type: "string", format }, value), `${format} ${value.slice(0, 40)}`).toBe(
        expected,
      );
  });

  it("checks maxItems before uniqueItems: many near-duplicate items fail on the count alone", () => {
    const items = Array.from({ length: 4000 }, (_, i) => ({ k: "x".repeat(12), i }));
    const bounded = compileSchema("test", { type: "array", maxItems: 10, uniqueItems: true });
    expect(bounded(items)).toEqual([{ path: "", message: "must have at most 10 items" }]);
    const unbounded = compileSchema("test", { type: "array", uniqueItems: true });
    expect(unbounded(items)).toEqual([]);
    expect(unbounded([...items, { i: 0, k: "x".repeat(12) }])).toEqual([
      { path: "", message: "must have unique items (items 0 and 4000 are equal)" },
    ]);
  });

  it("compares items as JSON values for uniqueItems", () => {
    const unique = { type: "array", uniqueItems: true };
    expect(
      verdict(unique, [
        { a: 1, b: [2] },
        { b: [2], a: 1 },
      ]),
    ).toBe("invalid");
    expect(verdict(unique, [1, "1", [1], { 1: 1 }, null, "null", true, "true"])).toBe("valid");
    expect(verdict(unique, [0, -0])).toBe("invalid");
    expect(
      verdict(unique, [
        [1, 2],
        [2, 1],
      ]),
    ).toBe("valid");
  });

  it("checks each subschema once per value, however $ref and oneOf recurse", () => {
    // Both branches descend before one fails: without memoised verdicts, 2^31 checks.
    const schema = {
      $defs: {
        t: {
          oneOf: [
            { type: "array", items: { $ref: "#/$defs/t" } },
            { type: "array", items: { $ref: "#/$defs/t" }, not: { maxItems: 4 } },
          ],
        },
      },
      $ref: "#/$defs/t",
    };
    let deep: unknown = [];
    for (let i = 0; i < 31; i++) deep = [deep];
    expect(verdict(schema, deep)).toBe("valid");
    let wrong: unknown = [7];
    for (let i = 0; i < 30; i++) wrong = [wrong];
    expect(verdict(schema, wrong)).toBe("invalid");
    let tooDeep: unknown = [];
    for (let i = 0; i < 40; i++) tooDeep = [tooDeep];
    expect(compileSchema("test", schema)(tooDeep)[0]?.message).toBe("nested deeper than 32 levels");
  });

  it("reports at most 20 errors, each {path, message}, for a body full of wrong values", () => {
    const check = compileSchema("test", {
      type: "array",
      items: { type: "string", format: "email" },
    });
    const errors = check(Array.from({ length: 10_000 }, (_, i) => `user${i}@`));
    expect(errors).toHaveLength(21);
    expect(errors[3]).toEqual({ path: "/3", message: "must be a valid email" });
    expect(errors[20]).toEqual(OMITTED);
    // Exactly 20: nothing was left out, so no marker.
    expect(check(Array.from({ length: 20 }, (_, i) => `user${i}@`))).toHaveLength(20);
  });

  it("clips each error's path and message: long keys cannot make the answer larger than the request", () => {
    const check = compileSchema("test", {
      $defs: { n: { type: "object", additionalProperties: { $ref: "#/$defs/n" } } },
      $ref: "#/$defs/n",
    });
    // 28 levels of 2 KiB keys above 25 wrong values: unclipped, 20 paths of 56 KiB each.
    let body: unknown = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`v${i}`, 1]));
    for (let i = 0; i < 28; i++) body = { [`${i}`.padStart(4, "0") + "k".repeat(2044)]: body };
    const request = JSON.stringify(body).length;
    const errors = check(body);
    expect(errors).toHaveLength(21);
    for (const error of errors.slice(0, 20)) {
      expect(error.path).toHaveLength(256);
      expect(error.path.startsWith("/0027kkk")).toBe(true);
      expect(error.path.endsWith("…")).toBe(true);
      expect(error.message).toBe("must be of type object");
    }
    expect(JSON.stringify(errors).length).toBeLessThan(8 * 1024);
    expect(request).toBeGreaterThan(56 * 1024);
    // Clipped between characters, never inside a surrogate pair.
    const emoji = compileSchema("test", { additionalProperties: false })({
      [`a${"😀".repeat(200)}`]: 1,
    });
    expect(emoji[0]?.path).toHaveLength(255);
    expect(emoji[0]?.path.endsWith("😀…")).toBe(true);
    // A long key refused for what it is is clipped the same way.
    const poisoned = compileSchema("test", {})({ ["k".repeat(5000)]: { constructor: 1 } });
    expect(poisoned[0]?.path).toHaveLength(256);
    expect(poisoned[0]?.message).toBe("the key constructor is not allowed");
  });
});

describe("input schemas: the error report costs what the verdict costs", () => {
  for (const descent of DESCENTS)
    for (const join of JOINS)
      it(`reports a wrong leaf 12 levels under a diamond of ${descent[0]} and ${join[0]} in linear work`, () => {
        const { schema, value } = acrossLevels(descent, join, 12);
        const { errors, reads } = measured(schema, value);
        expect(errors).toHaveLength(1);
        expect(errors[0]?.message).toBe("must be of type string");
        expect(errors[0]?.path.split("/")).toHaveLength(13);
        // Each (subschema, value) pair is reported once: a few reads per level, not 2^12 or 3^12.
        expect(reads).toBeLessThan(40 * 12);
      });

  it("reports a wrong leaf under dependentSchemas diamonds in linear work", () => {
    const $defs: Record<string, unknown> = { l16: { type: "string" } };
    let value: unknown = 1;
    for (let i = 15; i >= 0; i--) {
      const next = { properties: { x: { $ref: `#/$defs/l${i + 1}` } } };
      $defs[`l${i}`] = { ...next, dependentSchemas: { x: next } };
      value = { x: value };
    }
    const { errors, reads } = measured({ $defs, $ref: "#/$defs/l0" }, value);
    expect(errors).toEqual([{ path: "/x".repeat(16), message: "must be of type string" }]);
    expect(reads).toBeLessThan(40 * 16);
  });

  it("reports many wrong values under diamonds with at most 20 errors and linear work", () => {
    const { schema } = acrossLevels(DESCENTS[0] as Descent, JOINS[0] as Join, 4);
    const wrong = { x: { x: { x: { x: 1 } } } };
    const items = Array.from({ length: 500 }, () => structuredClone(wrong));
    const array = { $defs: schema.$defs, type: "array", items: { $ref: "#/$defs/l0" } };
    const { errors, reads } = measured(array, items);
    // The screen for prototype keys reads every value once, whatever the schema.
    const screened = measured({}, items).reads;
    expect(reads - screened).toBeLessThan(40 * 4 * 21);
    expect(errors).toHaveLength(21);
    expect(errors[0]).toEqual({ path: "/0/x/x/x/x", message: "must be of type string" });
    expect(errors[20]).toEqual(OMITTED);
  });

  it("decides anyOf and oneOf diamonds across levels once per value", () => {
    for (const keyword of ["anyOf", "oneOf"]) {
      const $defs: Record<string, unknown> = { l20: { type: "string" } };
      let value: unknown = 1;
      for (let i = 19; i >= 0; i--) {
        const next = { properties: { x: { $ref: `#/$defs/l${i + 1}` } } };
        $defs[`l${i}`] = { [keyword]: [next, { ...next, required: ["x"] }] };
        value = { x: value };
      }
      const { errors, reads } = measured({ $defs, $ref: "#/$defs/l0" }, value);
      expect(errors).toHaveLength(1);
      expect(reads, keyword).toBeLessThan(40 * 20);
    }
  });
});

describe("input schemas: what is refused when the registry is built", () => {
  const register = (schema: unknown) => () =>
    new CapabilityRegistry([
      { name: "wide", description: "C.", input: schema as never, handler: () => 1 },
    ]);

  it("refuses a diamond under which one value meets more than 256 subschemas, however reached", () => {
    for (const [keyword, ways, depth] of [
      ["allOf", 8, 14],
      ["allOf", 8, 8],
      ["allOf", 8, 3],
      ["allOf", 2, 8],
      ["anyOf", 4, 4],
      ["oneOf", 3, 5],
    ] as const) {
      const build = register(diamond(keyword, ways, depth));
      expect(build, `${keyword} ${ways} x ${depth}`).toThrow(InvalidOptionsError);
      expect(build).toThrow('capability "wide" input: at #/$defs/l0, ');
      expect(build).toThrow("than the 256 that one value may be checked against");
    }
  });

  it("accepts the diamonds below the bound, and checks them", () => {
    for (const [keyword, ways, depth] of [
      ["allOf", 8, 2],
      ["allOf", 2, 7],
      ["anyOf", 3, 4],
      ["oneOf", 15, 1],
    ] as const) {
      const check = compileSchema("test", diamond(keyword, ways, depth));
      expect(check({ u: "a" }), `${keyword} ${ways} x ${depth}`).toEqual(
        keyword === "oneOf"
          ? [{ path: "/u", message: "must match exactly one schema of oneOf, not several" }]
          : [],
      );
      expect(check({ u: 1 }).length).toBeGreaterThan(0);
    }
  });

  it("counts subschemas reached through $ref, if/then/else, not and dependentSchemas towards the bound", () => {
    // Each level reaches the next twice, by one pair of keywords or another: past 256 within 8 levels.
    const $defs: Record<string, unknown> = { l8: { type: "string" } };
    for (let i = 0; i < 8; i++) {
      const next = { $ref: `#/$defs/l${i + 1}` };
      const pairs = [
        // biome-ignore lint/suspicious/noThenProperty: the JSON Schema keyword
        { if: next, then: next },
        { $ref: next.$ref, not: { not: next } },
        { if: false, else: next, dependentSchemas: { a: next } },
      ];
      $defs[`l${i}`] = pairs[i % 3];
    }
    expect(register({ $defs, $ref: "#/$defs/l0" })).toThrow(
      "than the 256 that one value may be checked against",
    );
    // A recursive schema that descends is not a diamond: the bound is per value.
    const tree = {
      $defs: {
        t: {
          type: "object",
          properties: { kids: { type: "array", items: { $ref: "#/$defs/t" } } },
        },
      },
      $ref: "#/$defs/t",
    };
    expect(register(tree)).not.toThrow();
  });

  const refused: [string, unknown, string][] = [
    [
      "a catastrophic pattern",
      object({ s: { type: "string", pattern: "^(a+)+$" } }),
      "pattern is not supported",
    ],
    [
      "patternProperties",
      { patternProperties: { "^x": true } },
      "patternProperties is not supported",
    ],
    [
      "a format not checked in linear time",
      object({ s: { format: "idn-email" } }),
      'format "idn-email" cannot be checked',
    ],
    ["an unknown keyword", object({ s: { maxlength: 3 } }), 'unknown keyword "maxlength"'],
    [
      "a keyword named like an Object method",
      object({ s: { toString: 3 } }),
      'unknown keyword "toString"',
    ],
    [
      "a $ref loop on the same value",
      { $defs: { a: { allOf: [{ $ref: "#/$defs/a" }] } }, $ref: "#/$defs/a" },
      "a $ref loop",
    ],
    ["a $ref to nothing", { $ref: "#/$defs/none" }, "points at nothing"],
    ["an anchor", { $defs: { a: { $anchor: "x" } } }, "$anchor is not supported"],
    ["unevaluatedProperties", { unevaluatedProperties: false }, "use additionalProperties"],
    [
      "too many subschemas on one value",
      { anyOf: Array.from({ length: 16 }, (_, i) => ({ const: i })) },
      "more than the 16 that can be checked",
    ],
  ];
  for (const [what, schema, message] of refused)
    it(`refuses ${what}`, () => {
      const build = () =>
        new CapabilityRegistry([
          { name: "c", description: "C.", input: schema as never, handler: () => 1 },
        ]);
      expect(build).toThrow(InvalidOptionsError);
      expect(build).toThrow(message);
      expect(build).toThrow('capability "c" input');
    });

  it("publishes an output schema whatever its keywords (it is never run)", () => {
    const registry = new CapabilityRegistry([
      {
        name: "c",
        description: "C.",
        output: { type: "string", pattern: "^a+$", format: "idn-email" },
        handler: () => 1,
      },
    ]);
    expect(registry.get("c")?.output).toMatchObject({ pattern: "^a+$" });
  });
});

describe("input schemas: enum and const", () => {
  it("find a value among 10 000 listed objects without comparing it to each", () => {
    const listed = Array.from({ length: 10_000 }, (_, i) => ({ k: i, tag: `t${i}` }));
    const items = Array.from({ length: 50 }, (_, i) => ({ tag: `t${i * 199}`, k: i * 199 }));
    const found = measured({ type: "array", items: { enum: listed } }, items);
    expect(found.errors).toEqual([]);
    expect(found.reads).toBeLessThan(20 * 50);
    const missing = measured({ type: "array", items: { enum: listed } }, [{ k: 1, tag: "t2" }]);
    expect(missing.errors).toEqual([
      { path: "/0", message: "must be one of the values listed in enum" },
    ]);
    expect(missing.reads).toBeLessThan(40);
  });

  it("compare values as JSON: key order is ignored, numbers by value, types never mixed", () => {
    const cases: [unknown[], unknown, "valid" | "invalid"][] = [
      [[{ a: 1, b: [1, { c: null }] }], { b: [1, { c: null }], a: 1 }, "valid"],
      [[{ a: 1, b: [1, { c: null }] }], { b: [{ c: null }, 1], a: 1 }, "invalid"],
      [[{ a: 1 }], { a: 1, b: 1 }, "invalid"],
      [[{ a: 1, b: 1 }], { a: 1 }, "invalid"],
      [[1], JSON.parse("1.0"), "valid"],
      [[1], JSON.parse("1e0"), "valid"],
      [[100], JSON.parse("1E2"), "valid"],
      [[0], -0, "valid"],
      [[-0], 0, "valid"],
      [[1], "1", "invalid"],
      [["1"], 1, "invalid"],
      [[null], "null", "invalid"],
      [[true], "true", "invalid"],
      [[true], 1, "invalid"],
      [[[]], {}, "invalid"],
      [[{}], [], "invalid"],
      [[{ "1": 1 }], [1], "invalid"],
      [['a"b', "x\\y", "é😀"], "é😀", "valid"],
      [["a,b"], ["a", "b"], "invalid"],
      [[["a", "b"]], ["a,b"], "invalid"],
      [[{ "a:1": 1 }], { a: "1:1" }, "invalid"],
      [[0.1 + 0.2], 0.30000000000000004, "valid"],
      [[0.3], 0.1 + 0.2, "invalid"],
      [[1e21], JSON.parse("1000000000000000000000"), "valid"],
    ];
    for (const [listed, value, expected] of cases) {
      const what = `${JSON.stringify(listed)} ${JSON.stringify(value)}`;
      expect(verdict({ enum: listed }, value), what).toBe(expected);
      if (listed.length === 1) expect(verdict({ const: listed[0] }, value), what).toBe(expected);
    }
  });

  it("refuses listed values that are not JSON data when the registry is built", () => {
    for (const bad of [
      undefined,
      Number.POSITIVE_INFINITY,
      Number.NaN,
      new Date(0),
      [1, undefined],
    ]) {
      const build = () => compileSchema("test", { enum: ["a", bad] });
      expect(build, String(bad)).toThrow(InvalidOptionsError);
      expect(build).toThrow("at #/enum/1, must be JSON data");
      expect(() => compileSchema("test", { const: bad })).toThrow("at #/const, must be JSON data");
    }
  });
});

describe("input schemas: numbers", () => {
  it("take multipleOf exactly, as the decimals they are written as", () => {
    const cases: [number, number, "valid" | "invalid"][] = [
      [0.01, 0.0100000000001, "invalid"],
      [0.01, 0.07, "valid"],
      [0.01, 4.35, "valid"],
      [0.01, 0.075, "invalid"],
      [0.01, -0.07, "valid"],
      [0.01, -0.075, "invalid"],
      [0.1, 0.3, "valid"],
      [0.1, 0.1 + 0.2, "invalid"],
      [0.1, 0, "valid"],
      [0.1, -0, "valid"],
      [1e-7, 3e-7, "valid"],
      [1e-7, 1e-8, "invalid"],
      [1e-8, 1e-7, "valid"],
      [1.5e-7, 4.5e-7, "valid"],
      [1.5e-7, 4.4e-7, "invalid"],
      [1e-300, 1e300, "valid"],
      [0.5, 1e300, "valid"],
      [3, 1e300, "invalid"],
      [7, 1e21, "invalid"],
      [2, 1e21, "valid"],
      [3, 9007199254740990, "valid"],
      [3, 9007199254740991, "invalid"],
      [1, 1.0000000001, "invalid"],
      [1, 5e-10, "invalid"],
      [0.25, 1.75, "valid"],
      [0.25, 1.7, "invalid"],
      [1e20, 3e20, "valid"],
      [1e20, 3.5e20, "invalid"],
      [2.5, -7.5, "valid"],
      [123.456, 246.912, "valid"],
      [123.456, 246.913, "invalid"],
    ];
    for (const [step, value, expected] of cases)
      expect(verdict({ multipleOf: step }, value), `${value} of ${step}`).toBe(expected);
  });

  it("refuse Infinity and NaN wherever a number may stand, with or without a schema", () => {
    const huge = JSON.parse('{"n": 1e400, "m": [-1e400]}');
    expect(huge.n).toBe(Number.POSITIVE_INFINITY);
    for (const schema of [{ type: "number" }, { type: "integer" }, {}, true, { minimum: 0 }]) {
      const check = compileSchema("test", { properties: { n: schema } });
      expect(check({ n: huge.n }), JSON.stringify(schema)).toEqual([
        { path: "/n", message: "must be a finite number" },
      ]);
    }
    expect(compileSchema("test", {})(huge)).toEqual([
      { path: "/n", message: "must be a finite number" },
    ]);
    expect(checkPlainArguments({ a: [1, [Number.NaN]] })).toEqual([
      { path: "/a/1/0", message: "must be a finite number" },
    ]);
    expect(checkPlainArguments({ m: huge.m })).toEqual([
      { path: "/m/0", message: "must be a finite number" },
    ]);
    expect(compileSchema("test", { type: "number" })(Number.MAX_VALUE)).toEqual([]);
  });
});

describe("input schemas: keywords", () => {
  it("apply as JSON Schema says", () => {
    const conditional = JSON.parse(
      '{"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"minimum": 5}}',
    );
    const cases: [unknown, unknown, "valid" | "invalid"][] = [
      [object({ a: { type: "integer" } }, { required: ["a"] }), {}, "invalid"],
      [object({ a: true }, { additionalProperties: false }), { a: 1, b: 2 }, "invalid"],
      [object({ a: true }, { additionalProperties: false }), { a: 1 }, "valid"],
      [{ enum: ["x", { y: [1] }] }, { y: [1] }, "valid"],
      [{ const: { y: [1] } }, { y: [1, 2] }, "invalid"],
      [{ oneOf: [{ type: "integer" }, { type: "number" }] }, 1, "invalid"],
      [{ oneOf: [{ type: "integer" }, { type: "number" }] }, 1.5, "valid"],
      [conditional, "a", "invalid"],
      [conditional, 4, "invalid"],
      [conditional, 6, "valid"],
      [{ type: "string", maxLength: 2 }, "😀😀", "valid"],
      [{ type: "string", minLength: 3 }, "😀😀", "invalid"],
      [{ multipleOf: 0.01 }, 0.07, "valid"],
      [{ multipleOf: 0.01 }, 0.075, "invalid"],
      // An integer step is exact: no rounding tolerance.
      [{ multipleOf: 1 }, 1.0000000001, "invalid"],
      [{ multipleOf: 1 }, 5e-10, "invalid"],
      [{ multipleOf: 3 }, 9007199254740990, "valid"],
      [{ multipleOf: 3 }, 6, "valid"],
      [{ multipleOf: 3 }, 7, "invalid"],
      [{ not: { type: "null" } }, null, "invalid"],
      [{ type: "array", contains: { const: 1 }, maxContains: 1 }, [1, 1], "invalid"],
      [{ type: "array", prefixItems: [{ type: "string" }], items: false }, ["a", 1], "invalid"],
      [{ propertyNames: { maxLength: 2 } }, { abc: 1 }, "invalid"],
      [{ dependentRequired: { a: ["b"] } }, { a: 1 }, "invalid"],
      [
        {
          $schema: "http://json-schema.org/draft-07/schema#",
          items: [{ type: "string" }],
          additionalItems: false,
        },
        ["a", "b"],
        "invalid",
      ],
      [
        { $schema: "http://json-schema.org/draft-04/schema#", maximum: 5, exclusiveMaximum: true },
        5,
        "invalid",
      ],
      [{ type: "string", format: "date-time" }, "2024-02-29T12:00:00+01:00", "valid"],
      [{ type: "string", format: "date" }, "2023-02-29", "invalid"],
      [{ type: "string", format: "ipv6" }, "::ffff:192.0.2.1", "valid"],
      [{ type: "string", format: "ipv4" }, "192.168.01.1", "invalid"],
      [{ type: "string", format: "url" }, "http://192.168.1.1/", "invalid"],
      [{ type: "string", format: "url" }, "https://user:pw@example.org:8443/a?b#c", "valid"],
      // The host is the one a URL parser reaches, not what follows the last "@".
      [{ type: "string", format: "url" }, "http://127.0.0.1\\@evil.com/", "invalid"],
      [{ type: "string", format: "url" }, "http://127.0.0.1#@evil.com/x", "invalid"],
      [{ type: "string", format: "url" }, "http://169.254.169.254?@example.com/", "invalid"],
      [{ type: "string", format: "url" }, "http://127.0.0.\uff11\uff12/", "invalid"],
      [{ type: "string", format: "url" }, "http://2130706433.com.127.0.0.1/", "invalid"],
      [
        { type: "string", format: "url" },
        "https://\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444/",
        "valid",
      ],
      [{ type: "string", format: "uuid" }, "123e4567-e89b-12d3-a456-426614174000", "valid"],
    ];
    for (const [schema, value, expected] of cases)
      expect(verdict(schema, value), `${JSON.stringify(schema)} ${JSON.stringify(value)}`).toBe(
        expected,
      );
  });

  it("say where and why a value fails", () => {
    const check = compileSchema(
      "test",
      object(
        { n: { type: "integer", minimum: 1 }, tags: { type: "array", items: { type: "string" } } },
        { required: ["n"], additionalProperties: false },
      ),
    );
    expect(check({ n: 0, tags: ["a", 2], "x/y": 1 })).toEqual([
      { path: "/n", message: "must be at least 1" },
      { path: "/tags/1", message: "must be of type string" },
      { path: "/x~1y", message: "the property is not allowed" },
    ]);
  });

  it("check formats by their definitions", () => {
    const cases: [string, string, boolean][] = [
      ["ipv6", "::", true],
      ["ipv6", "::1", true],
      ["ipv6", "1::", true],
      ["ipv6", "1:2:3:4:5:6:7:8", true],
      ["ipv6", "1:2:3:4:5:6:7::", true],
      ["ipv6", "1:2:3:4:5:6:7:8:9", false],
      ["ipv6", "1::2::3", false],
      ["ipv6", ":1", false],
      ["ipv6", "1:", false],
      ["ipv6", "12345::", false],
      ["ipv6", "1:2:3:4:5:6:1.2.3.4", true],
      ["ipv6", "1:2:3:4:5:1.2.3.4", false],
      ["ipv6", "fe80::1:2.3.4.5", true],
      ["ipv6", "g::", false],
      ["ipv4", "0.0.0.0", true],
      ["ipv4", "255.255.255.255", true],
      ["ipv4", "256.1.1.1", false],
      ["ipv4", "1.2.3", false],
      ["ipv4", "1.2.3.4.", false],
      ["ipv4", "1.2.3.4.5", false],
      ["uri", "https://example.com", true],
      ["uri", "urn:isbn:0451450523", true],
      ["uri", "http://[::1]:8080/x?y#z", true],
      ["uri", "http://a b", false],
      ["uri", "/relative", false],
      ["uri", "http://x:99a/", false],
      ["uri", "mailto:a@b.c", true],
      ["uri", "http://u@h@x/", false],
      ["uri", "http://%zz", false],
      ["url", "http://example.com", true],
      ["url", "http://localhost/", false],
      ["url", "http://10.0.0.1/", false],
      ["url", "http://8.8.8.8:80/a", true],
      ["url", "ftp://example.com", false],
      ["url", "http://exa mple.com", false],
      ["url", "http://a..com", false],
      ["url", "http://-a.com", false],
      ["url", "http://a-.com", false],
      ["url", "https://bücher.de/", true],
      ["url", "http://example.com:1/", false],
      ["url", "http://@example.com", false],
      ["email", "a@b.co", true],
      ["email", "a.b@c", true],
      ["email", ".a@b", false],
      ["email", "a..b@c", false],
      ["email", "a@[1.2.3.4]", true],
      ["email", "a@b@c", false],
      ["email", "@b", false],
      ["email", "a@", false],
      ["hostname", "a", true],
      ["hostname", "a-b.c", true],
      ["hostname", "-a", false],
      ["hostname", "a.", false],
      ["hostname", "a".repeat(64), false],
      ["date-time", "2024-01-01T00:00:00Z", true],
      ["date-time", "2024-01-01t00:00:00.5+05:30", true],
      ["date-time", "2024-01-01T24:00:00Z", false],
      ["date-time", "2024-01-01T00:00:00", false],
      ["date-time", "2024-01-01T00:00:00.Z", false],
      ["date", "2024-13-01", false],
      ["date", "2000-02-29", true],
      ["date", "1900-02-29", false],
      ["time", "23:59:60Z", true],
      ["time", "1:00:00Z", false],
      ["uuid", "123e4567-e89b-12d3-a456-42661417400g", false],
    ];
    for (const [format, value, valid] of cases)
      expect(verdict({ type: "string", format }, value), `${format} ${value}`).toBe(
        valid ? "valid" : "invalid",
      );
  });
});
