/**
 * The speed goals, as one table: what the chain adds to a request over the
 * bare server, beside what the same work written by hand adds, leg by leg and
 * in all, on each adapter and framework; and beside the peer stacks.
 */

/** The contenders the goals are computed from, in the order they are measured. */
export const ADAPTERS = [
  { title: "nodeListener", bare: "bare-node", hand: "by-hand-node", chain: "portcullis-node" },
  {
    title: "serveFetch",
    bare: "bare-fetch-servefetch",
    hand: "by-hand-servefetch",
    chain: "portcullis-servefetch",
  },
] as const;

/**
 * The same work by hand in the Fetch shape (a guard reading a Fetch `Request`, fields added to
 * the answer), on each adapter from Node to Fetch: beside the reference on node:http, what the
 * shape costs before any library, which the chain's legs share.
 */
export const FETCH_SHAPE = [
  { title: "serveFetch", bare: "bare-fetch-servefetch", hand: "by-hand-servefetch" },
  { title: "@hono/node-server", bare: "bare-fetch-hono-server", hand: "by-hand-fetch-hono-server" },
] as const;

/** One leg at a time: each variant's cost is counted over the variant with no legs. */
export const LEG_ROWS = [
  [":empty", "the adapter, no legs"],
  [":headers", "security headers"],
  [":cors", "CORS"],
  [":ratelimit", "rate limit"],
  [":session", "session lookup + role check"],
  [":csrf", "CSRF"],
] as const;

export const FRAMEWORKS = [
  {
    title: "Express",
    bare: "bare-express",
    hand: "by-hand-express",
    chain: "portcullis-express",
    stack: "express-stack",
  },
  {
    title: "Fastify",
    bare: "bare-fastify",
    hand: "by-hand-fastify",
    chain: "portcullis-fastify",
    stack: "fastify-stack",
  },
  {
    title: "Koa",
    bare: "bare-koa",
    hand: "by-hand-koa",
    chain: "portcullis-koa",
    stack: undefined,
  },
  {
    title: "Hono",
    bare: "bare-hono",
    hand: "by-hand-hono",
    chain: "portcullis-hono",
    stack: "hono-stack",
  },
] as const;

/** Every contender the goals table needs. */
export function goalContenders(): string[] {
  const names: string[] = [];
  for (const a of ADAPTERS) {
    names.push(a.bare);
    for (const [leg] of LEG_ROWS) names.push(`${a.hand}${leg}`, `${a.chain}${leg}`);
    names.push(a.hand, a.chain);
  }
  for (const shape of FETCH_SHAPE) names.push(shape.bare, shape.hand);
  for (const f of FRAMEWORKS) {
    names.push(f.bare, f.hand, f.chain);
    if (f.stack !== undefined) names.push(f.stack);
  }
  for (const a of ADAPTERS) names.push(`${a.bare}@api`, `${a.hand}@api`, `${a.chain}@api`);
  return names;
}

const fmt = (value: number, digits = 0) =>
  value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** A difference with its sign: within a few thousand instructions a leg can count below none. */
const signed = (value: number, digits: number) =>
  `${value < 0 ? "−" : "+"}${fmt(Math.abs(value), digits)}`;

/**
 * Prints the goals table from `cost` (instructions or CPU µs per request by
 * contender, `undefined` when not measured); rows whose contenders were not
 * measured are left out.
 */
export function printGoals(
  cost: (name: string) => number | undefined,
  unit: string,
  digits = 0,
): void {
  const rows: [string, string, string, string, string][] = [];
  const added = (name: string, over: string) => {
    const a = cost(name);
    const b = cost(over);
    return a === undefined || b === undefined ? undefined : a - b;
  };
  const row = (
    what: string,
    chain: number | undefined,
    other: number | undefined,
    target: string,
    ratioDigits = 2,
  ) => {
    if (chain === undefined || other === undefined) return;
    rows.push([
      what,
      signed(chain, digits),
      signed(other, digits),
      other > 0 && chain > 0 ? `${fmt(chain / other, ratioDigits)}x` : "—",
      target,
    ]);
  };
  for (const a of ADAPTERS) {
    for (const [leg, what] of LEG_ROWS) {
      const over = leg === ":empty" ? a.bare : undefined;
      row(
        `1. ${a.title}: ${what}`,
        added(`${a.chain}${leg}`, over ?? `${a.chain}:empty`),
        added(`${a.hand}${leg}`, over ?? `${a.hand}:empty`),
        "",
      );
    }
    row(
      `1. ${a.title}: all legs, over bare`,
      added(a.chain, a.bare),
      added(a.hand, a.bare),
      "≤ 1.5x",
    );
  }
  const native = ADAPTERS[0];
  for (const shape of FETCH_SHAPE)
    row(
      `1. by hand, Fetch-shaped on ${shape.title} vs on node:http`,
      added(shape.hand, shape.bare),
      added(native.hand, native.bare),
      "(the shape's own cost)",
    );
  for (const f of FRAMEWORKS) {
    row(
      `2. ${f.title}: chain vs the same by hand`,
      added(f.chain, f.bare),
      added(f.hand, f.bare),
      "≤ 1.5x",
    );
    if (f.stack === undefined) {
      if (cost(f.chain) !== undefined)
        rows.push([`2. ${f.title}: chain vs peer stack`, "", "", "no stack", "≤ 0.33x"]);
    } else
      row(
        `2. ${f.title}: chain vs peer stack`,
        added(f.chain, f.bare),
        added(f.stack, f.bare),
        "≤ 0.33x",
      );
  }
  for (const a of ADAPTERS)
    row(
      `3. API client (Basic), ${a.title}: all legs`,
      added(`${a.chain}@api`, `${a.bare}@api`),
      added(`${a.hand}@api`, `${a.bare}@api`),
      "≤ 1.5x",
    );
  if (rows.length === 0) return;
  console.log(
    `\nGoals: ${unit} the chain adds over the bare server, beside the same work by hand (or the peer stack)`,
  );
  const head: [string, string, string, string, string] = [
    "goal",
    "chain",
    "by hand / stack",
    "ratio",
    "target",
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  for (const r of [head, ...rows])
    console.log(
      r
        .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
        .join("  "),
    );
}
