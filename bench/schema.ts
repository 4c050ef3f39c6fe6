/**
 * The input-schema check on the worst arguments we know of, most about 64 KiB
 * of JSON (a diamond of shared subschemas needs a few bytes): the time one
 * check holds the event loop, against the documented bound of 10 ms, and the
 * size of the error list it answers. The minimum is the cost on an idle core;
 * the median and maximum include the machine's load and garbage collection.
 */
import { CapabilityRegistry } from "portcullis/agentauth";

const BOUND_MS = 10;
const KIB64 = 64 * 1024;
const RUNS = 31;

type Case = readonly [name: string, schema: Record<string, unknown>, body: unknown];

const string = (extra: Record<string, unknown>) => ({
  type: "object",
  properties: { u: { type: "string", ...extra } },
});
const nearDuplicates = Array.from({ length: 2600 }, (_, i) => ({ k: "xxxxxxxx", i }));
let chain: unknown = [];
for (let i = 0; i < 30; i++) chain = [chain];
const recursive = {
  $defs: {
    t: {
      oneOf: [
        { type: "array", items: { $ref: "#/$defs/t" } },
        { type: "array", items: { $ref: "#/$defs/t" }, not: { maxItems: 4 } },
      ],
    },
  },
  type: "array",
  items: { $ref: "#/$defs/t" },
};

/** `$defs` l0..l{depth}: each level applies the next `ways` times to the same value (a diamond). */
function diamond(ways: number, depth: number, leaf: Record<string, unknown>) {
  const $defs: Record<string, unknown> = { [`l${depth}`]: leaf };
  for (let i = 0; i < depth; i++)
    $defs[`l${i}`] = { allOf: Array.from({ length: ways }, () => ({ $ref: `#/$defs/l${i + 1}` })) };
  return $defs;
}
/**
 * A diamond across levels: each level reaches the next value's subschema
 * `ways` times (once itself, and through each of `ways - 1` allOf entries that
 * descend by the same `keyword`), so an unmemoised error report costs
 * `ways ** depth`.
 */
function descendingDiamond(ways: number, depth: number, keyword: "properties" | "items") {
  const $defs: Record<string, unknown> = { [`l${depth}`]: { type: "string" } };
  for (let i = 0; i < depth; i++) {
    const next = { $ref: `#/$defs/l${i + 1}` };
    const descend = keyword === "properties" ? { properties: { x: next } } : { items: next };
    $defs[`m${i}`] = descend;
    $defs[`l${i}`] = {
      ...descend,
      allOf: Array.from({ length: ways - 1 }, () => ({ $ref: `#/$defs/m${i}` })),
    };
  }
  return { $defs, $ref: "#/$defs/l0" };
}
let wrongLeaf: unknown = 1;
for (let i = 0; i < 30; i++) wrongLeaf = { x: wrongLeaf };
let wrongItem: unknown = 1;
for (let i = 0; i < 30; i++) wrongItem = [wrongItem];
// 28 levels of 2 KiB keys, then 25 wrong values: each error's path is about 56 KiB long.
const longKey = (i: number) => `${String(i).padStart(4, "0")}${"k".repeat(2044)}`;
let longPaths: unknown = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`v${i}`, 1]));
for (let i = 0; i < 28; i++) longPaths = { [longKey(i)]: longPaths };
const ENUM = Array.from({ length: 10_000 }, (_, i) => `v${i}`);

const CASES: readonly Case[] = [
  ["near-URL, format url", string({ format: "url" }), { u: `http://${"a".repeat(KIB64)}_` }],
  ["near-URI, format uri", string({ format: "uri" }), { u: `http://${"%a".repeat(KIB64 / 2)}` }],
  ["near-email, format email", string({ format: "email" }), { u: `a@${"a.".repeat(KIB64 / 2)}` }],
  [
    "16 subschemas on one string (the per-value bound)",
    {
      type: "object",
      properties: {
        u: { anyOf: Array.from({ length: 15 }, (_, i) => ({ format: "uri", minLength: i })) },
      },
    },
    { u: `x:${"a".repeat(KIB64)} ` },
  ],
  ["near-duplicate items, uniqueItems", { type: "array", uniqueItems: true }, nearDuplicates],
  [
    "near-duplicate items, maxItems 10 + uniqueItems",
    { type: "array", maxItems: 10, uniqueItems: true },
    nearDuplicates,
  ],
  ["30-deep arrays under recursive oneOf", recursive, Array.from({ length: 1000 }, () => chain)],
  [
    "15 anyOf branches tried on each of 16 000 items",
    {
      type: "array",
      items: {
        anyOf: [
          ...Array.from({ length: 14 }, (_, i) => ({ type: "number", minimum: i })),
          { type: "string" },
        ],
      },
    },
    Array.from({ length: 16_000 }, () => "a"),
  ],
  [
    "enum of 500 objects against a 5 000-key object",
    { enum: Array.from({ length: 500 }, (_, i) => ({ i })) },
    Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i])),
  ],
  [
    "allOf diamond, 8 $refs x 2 levels, 8 000 wrong items",
    { $defs: diamond(8, 2, { type: "string" }), type: "array", items: { $ref: "#/$defs/l0" } },
    Array.from({ length: 8000 }, (_, i) => i),
  ],
  [
    "allOf diamond, 2 $refs x 7 levels, 8 000 wrong items",
    { $defs: diamond(2, 7, { type: "string" }), type: "array", items: { $ref: "#/$defs/l0" } },
    Array.from({ length: 8000 }, (_, i) => i),
  ],
  [
    "properties diamond, 8 ways x 30 levels, one wrong leaf",
    descendingDiamond(8, 30, "properties"),
    wrongLeaf,
  ],
  [
    "items diamond, 8 ways x 30 levels, one wrong leaf",
    descendingDiamond(8, 30, "items"),
    wrongItem,
  ],
  [
    "8 000 items against a 10 000-value enum",
    { type: "array", items: { enum: ENUM } },
    Array.from({ length: 8000 }, (_, i) => `v${9999 - (i % 100)}`),
  ],
  [
    "25 wrong values under 28 levels of 2 KiB keys",
    {
      $defs: { n: { additionalProperties: { $ref: "#/$defs/n" }, type: "object" } },
      $ref: "#/$defs/n",
    },
    longPaths,
  ],
  [
    "8 000 near-emails, every one wrong",
    { type: "array", items: { type: "string", format: "email" } },
    Array.from({ length: 8000 }, (_, i) => `u${i}@`),
  ],
];

export function schemaBenchmarks(): void {
  console.log(`\ninput-schema check, worst known ~64 KiB arguments (bound ${BOUND_MS} ms)`);
  console.log(
    `${"arguments".padEnd(52)} ${"bytes".padStart(7)} ${"min ms".padStart(7)} ${"median ms".padStart(10)} ${"max ms".padStart(8)} ${"errors B".padStart(8)}  verdict (median)`,
  );
  for (const [name, schema, body] of CASES) {
    const registry = new CapabilityRegistry([
      { name: "c", description: "Bench.", input: schema, handler: () => null },
    ]);
    const check = registry.get("c")?.check;
    if (check === undefined) throw new Error("no capability");
    const text = JSON.stringify(body);
    const answered = JSON.stringify(check(JSON.parse(text))).length;
    const times: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      // Parsed afresh each run, as execute does for each request.
      const args = JSON.parse(text);
      const started = performance.now();
      check(args);
      times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    const median = times[times.length >> 1] as number;
    const max = times[times.length - 1] as number;
    const min = times[0] as number;
    console.log(
      `${name.padEnd(52)} ${String(text.length).padStart(7)} ${min.toFixed(2).padStart(7)} ${median.toFixed(2).padStart(10)} ${max.toFixed(2).padStart(8)} ${String(answered).padStart(8)}  ${median <= BOUND_MS ? "within" : "OVER"} ${BOUND_MS} ms`,
    );
  }
}
