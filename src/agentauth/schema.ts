import { InvalidOptionsError } from "../core/errors.ts";
import { FORMATS } from "./schema-formats.ts";

/** A JSON Schema document (draft 2020-12 unless `$schema` names 2019-09, 7 or 4). */
export type JsonSchema = Readonly<Record<string, unknown>> | boolean;

/**
 * Where in the arguments a check failed (a JSON Pointer) and why, each
 * clipped to 256 characters (a clipped one ends with "…").
 */
export interface ArgumentError {
  readonly path: string;
  readonly message: string;
}

export type ArgumentCheck = (value: unknown) => readonly ArgumentError[];

type Draft = "2020-12" | "2019-09" | "7" | "4";

const DRAFTS: Record<string, Draft> = {
  "https://json-schema.org/draft/2020-12/schema": "2020-12",
  "https://json-schema.org/draft/2019-09/schema": "2019-09",
  "http://json-schema.org/draft-07/schema": "7",
  "http://json-schema.org/draft-07/schema#": "7",
  "http://json-schema.org/draft-04/schema": "4",
  "http://json-schema.org/draft-04/schema#": "4",
};
const TYPES = new Set(["null", "boolean", "object", "array", "number", "integer", "string"]);
// Keys that would reach a handler as something other than data if merged naively.
const POISONED = new Set(["__proto__", "constructor", "prototype"]);
const MAX_DEPTH = 32;
/** At most this many errors are listed; when more were found, one last entry says so. */
const MAX_ERRORS = 20;
/** Each error's path and message are clipped to this many UTF-16 code units. */
const MAX_ERROR_TEXT = 256;
const OMITTED: ArgumentError = Object.freeze({
  path: "",
  message: `more errors were found; only the first ${MAX_ERRORS} are listed`,
});
/** At most this many subschemas in one input schema. */
const MAX_SUBSCHEMAS = 512;
/**
 * At most this many subschemas may apply to any one value of the arguments:
 * each (subschema, value) pair is checked once, so a validation costs at most
 * this many checks of each value.
 */
const MAX_PER_VALUE = 16;
/** Distinct sets of subschemas explored when bounding the above. */
const MAX_SHAPES = 4096;
/**
 * At most this many subschemas may one subschema apply to the value it
 * checks, itself included and each counted once for every way allOf, anyOf,
 * oneOf, not, if/then/else, dependentSchemas and $ref reach it: the size of
 * the subschema with those references expanded. Shared subschemas multiply
 * (eight `$ref`s to a level that holds eight `$ref`s to the next...), and the
 * error report follows them.
 */
const MAX_EXPANDED = 256;

const ANNOTATIONS = new Set([
  "title",
  "description",
  "$comment",
  "default",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "contentEncoding",
  "contentMediaType",
  "contentSchema",
]);
const UNSUPPORTED: Record<string, string> = {
  pattern:
    "a regular expression run on client input can take exponential time; use enum, format or maxLength, or check the value in the handler",
  patternProperties:
    "a regular expression run on client input can take exponential time; list the keys under properties, or check them in the handler",
  unevaluatedProperties: "use additionalProperties",
  unevaluatedItems: "use items",
  $dynamicRef: "use a local $ref",
  $recursiveRef: "use a local $ref",
  $anchor: 'refer to the subschema by a JSON Pointer ("#/$defs/name")',
  $dynamicAnchor: 'refer to the subschema by a JSON Pointer ("#/$defs/name")',
  $recursiveAnchor: 'refer to the subschema by a JSON Pointer ("#/$defs/name")',
  $vocabulary: "the standard vocabularies are the only ones",
};

/**
 * A subschema, compiled once when the registry is built. A class with every
 * field set, so that all nodes share one shape and the checks stay monomorphic.
 */
class Node {
  bool: boolean | undefined = undefined;
  types: readonly string[] | undefined = undefined;
  /** The `types` as bits of `kindOf` (0: any type), so that a check tests one mask. */
  typeMask: number = 0;
  constant: { readonly value: unknown; readonly listed: Listed } | undefined = undefined;
  enumeration: Listed | undefined = undefined;
  minLength: number | undefined = undefined;
  maxLength: number | undefined = undefined;
  format: { readonly name: string; readonly test: (value: string) => boolean } | undefined =
    undefined;
  minimum: number | undefined = undefined;
  maximum: number | undefined = undefined;
  exclusiveMinimum: number | undefined = undefined;
  exclusiveMaximum: number | undefined = undefined;
  multipleOf: number | undefined = undefined;
  minItems: number | undefined = undefined;
  maxItems: number | undefined = undefined;
  uniqueItems: boolean | undefined = undefined;
  prefix: Node[] = [];
  items: Node | undefined = undefined;
  contains: Node | undefined = undefined;
  minContains: number | undefined = undefined;
  maxContains: number | undefined = undefined;
  minProperties: number | undefined = undefined;
  maxProperties: number | undefined = undefined;
  required: string[] = [];
  properties: Map<string, Node> = new Map();
  /** The `properties` as two lists, walked without allocating entries. */
  propertyKeys: string[] = [];
  propertyNodes: Node[] = [];
  additional: Node | undefined = undefined;
  propertyNames: Node | undefined = undefined;
  dependentRequired: [string, string[]][] = [];
  dependentSchemas: [string, Node][] = [];
  allOf: Node[] = [];
  anyOf: Node[] = [];
  oneOf: Node[] = [];
  not: Node | undefined = undefined;
  condition: Node | undefined = undefined;
  whenTrue: Node | undefined = undefined;
  whenFalse: Node | undefined = undefined;
  ref: Node | undefined = undefined;
  /** Which groups of keywords the node has, so that a check skips the others at once. */
  groups: number = 0;
  /** Applied at most once to any value (one way to reach it): its verdict needs no memo. */
  once: boolean = false;

  constructor(
    readonly id: number,
    readonly at: string,
  ) {}
}

const STRING = 1;
const NUMBER = 2;
const ARRAY = 4;
const OBJECT = 8;
const APPLICATORS = 16;

/**
 * Compiles an input schema into a check. The check is our own interpreter of
 * the keywords listed in the README (no code generation: it runs on Workers
 * too), built so that its cost, the error report included, is linear in the
 * arguments: every subschema is checked, and reported, at most once per value,
 * at most `MAX_PER_VALUE` subschemas apply to one value (`MAX_EXPANDED`
 * counting each way of reaching them), formats are single-pass, bounds are
 * checked before costly keywords, `enum` and `uniqueItems` look canonical
 * forms up in sets, and at most `MAX_ERRORS` errors of bounded size are
 * listed. Whatever it cannot promise that for (`pattern`, an unknown `format`
 * or keyword, a `$ref` loop that never descends, a schema too wide) throws
 * `InvalidOptionsError` here, naming it.
 */
export function compileSchema(where: string, schema: unknown): ArgumentCheck {
  const draft = declaredDraft(where, schema);
  const compiler = new Compiler(where, schema, draft);
  const root = compiler.node(schema, "#");
  compiler.finish(root);
  const count = compiler.count;
  return (value) => {
    const refused = screen(value);
    if (refused !== undefined) return [refused];
    const run = new Run(count);
    if (run.valid(root, value)) return [];
    const sink = new Sink();
    run.report(root, value, "", sink);
    return sink.out.length > 0
      ? sink.out
      : [{ path: "", message: "the arguments do not match the input schema" }];
  };
}

/**
 * An output schema is only published, never run: it must be a JSON Schema
 * of a known draft with local references, whatever keywords it uses.
 */
export function checkPublishedSchema(where: string, schema: unknown): void {
  declaredDraft(where, schema);
  inspect(where, schema, 0);
}

/** Arguments without a schema still may not carry prototype keys nor numbers past JSON's. */
export function checkPlainArguments(value: unknown): readonly ArgumentError[] {
  const refused = screen(value);
  return refused === undefined ? [] : [refused];
}

function declaredDraft(where: string, schema: unknown): Draft {
  if (typeof schema === "boolean") return "2020-12";
  if (!isPlainObject(schema))
    throw new InvalidOptionsError(`${where}: a JSON Schema must be an object or a boolean`);
  const declared = schema.$schema;
  if (declared === undefined) return "2020-12";
  const known = typeof declared === "string" ? DRAFTS[declared] : undefined;
  if (known === undefined)
    throw new InvalidOptionsError(
      `${where}: $schema ${JSON.stringify(declared)} is not a supported draft`,
    );
  return known;
}

class Compiler {
  private readonly nodes: Node[] = [];
  /** Drafts 7 and 4: `$ref` replaces its schema, `items` may be a list. */
  readonly legacy: boolean;
  private readonly byRaw = new Map<object, Node>();
  private readonly following = new Set<object>();

  constructor(
    private readonly where: string,
    private readonly root: unknown,
    readonly draft: Draft,
  ) {
    this.legacy = draft === "7" || draft === "4";
  }

  get count(): number {
    return this.nodes.length;
  }

  fail(at: string, message: string): never {
    throw new InvalidOptionsError(`${this.where}: at ${at}, ${message}`);
  }

  node(raw: unknown, at: string): Node {
    if (typeof raw !== "boolean" && !isPlainObject(raw))
      this.fail(at, "a schema must be an object or a boolean");
    const known = typeof raw === "boolean" ? undefined : this.byRaw.get(raw);
    if (known !== undefined) return known;
    if (typeof raw !== "boolean" && this.onlyRef(raw)) {
      // A schema that is only a $ref is its target: one check per value, not two.
      if (this.following.has(raw))
        this.fail(at, "the schema applies itself to the same value again (a $ref loop)");
      this.following.add(raw);
      const target = this.resolve(raw.$ref, `${at}/$ref`);
      this.following.delete(raw);
      this.byRaw.set(raw, target);
      return target;
    }
    if (this.nodes.length >= MAX_SUBSCHEMAS)
      this.fail(at, `the schema has more than ${MAX_SUBSCHEMAS} subschemas`);
    const node = new Node(this.nodes.length, at);
    this.nodes.push(node);
    if (typeof raw === "boolean") node.bool = raw;
    else {
      this.byRaw.set(raw, node);
      this.fill(node, raw, at);
    }
    return node;
  }

  private onlyRef(raw: Record<string, unknown>): boolean {
    if (raw.$ref === undefined) return false;
    if (this.legacy) return true;
    return Object.keys(raw).every((key) => key === "$ref" || ANNOTATIONS.has(key));
  }

  private fill(node: Node, raw: Record<string, unknown>, at: string): void {
    // Before 2019-09, $ref replaces the schema it sits in.
    const onlyRef = this.legacy && raw.$ref !== undefined;
    for (const [key, value] of Object.entries(raw)) {
      if (onlyRef && key !== "$ref") continue;
      if (ANNOTATIONS.has(key)) continue;
      const here = `${at}/${pointerToken(key)}`;
      if (Object.hasOwn(UNSUPPORTED, key))
        this.fail(here, `${key} is not supported: ${UNSUPPORTED[key]}`);
      const keyword = KEYWORDS.get(key);
      if (keyword === undefined) this.fail(here, `unknown keyword ${JSON.stringify(key)}`);
      keyword(this, node, key, value, here, raw);
    }
    if (!onlyRef && raw.additionalItems !== undefined && Array.isArray(raw.items))
      node.items = this.node(raw.additionalItems, `${at}/additionalItems`);
    // then and else mean nothing without if.
    if (node.condition === undefined) {
      node.whenTrue = undefined;
      node.whenFalse = undefined;
    }
    node.propertyKeys = [...node.properties.keys()];
    node.propertyNodes = [...node.properties.values()];
    node.groups = groupsOf(node);
  }

  resolve(ref: unknown, at: string): Node {
    if (ref === "#") return this.node(this.root, "#");
    if (typeof ref !== "string" || !ref.startsWith("#/"))
      this.fail(at, `only local $ref ("#" or "#/...") can be resolved, not ${JSON.stringify(ref)}`);
    let target: unknown = this.root;
    for (const part of ref.slice(2).split("/")) {
      let name: string;
      try {
        name = decodeURIComponent(part).replaceAll("~1", "/").replaceAll("~0", "~");
      } catch {
        this.fail(at, `$ref ${JSON.stringify(ref)} is not a valid JSON Pointer`);
      }
      if (typeof target !== "object" || target === null || !Object.hasOwn(target, name))
        this.fail(at, `$ref ${JSON.stringify(ref)} points at nothing`);
      target = (target as Record<string, unknown>)[name];
    }
    return this.node(target, ref);
  }

  entries(value: unknown, at: string): [string, unknown][] {
    if (!isPlainObject(value)) this.fail(at, "must be an object");
    return Object.entries(value);
  }

  list(value: unknown, at: string): Node[] {
    if (!Array.isArray(value)) this.fail(at, "must be an array of schemas");
    return value.map((inner, i) => this.node(inner, `${at}/${i}`));
  }

  strings(value: unknown, at: string): string[] {
    if (!Array.isArray(value) || value.some((s) => typeof s !== "string"))
      this.fail(at, "must be an array of strings");
    return value;
  }

  /** The values of an `enum` (or the one of a `const`), for lookups by their canonical JSON. */
  listed(values: readonly unknown[], at: string, single = false): Listed {
    const primitives = new Set<unknown>();
    const texts = new Set<string>();
    let longest = 0;
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      const text = canonicalJson(value, Number.POSITIVE_INFINITY);
      if (text === undefined) this.fail(single ? at : `${at}/${i}`, "must be JSON data");
      if (typeof value !== "object" || value === null) primitives.add(value);
      else {
        texts.add(text);
        longest = Math.max(longest, text.length);
      }
    }
    return new Listed(primitives, texts, longest);
  }

  number(value: unknown, at: string, positive: boolean): number {
    if (typeof value !== "number" || !Number.isFinite(value) || (positive && value <= 0))
      this.fail(at, `must be a ${positive ? "positive " : ""}number`);
    return value;
  }

  /**
   * Marks the subschemas applied by one keyword of one subschema only (or the
   * root, applied by none). That subschema is itself checked at most once per
   * value (memoised, or marked so in turn), so these are applied at most once
   * per value and memoising their verdicts would only cost.
   */
  private markOnce(root: Node): void {
    const ways = new Map<Node, number>([[root, 1]]);
    for (const node of this.nodes)
      for (const inner of [...sameValue(node), ...descents(node)])
        if (inner !== undefined) ways.set(inner, (ways.get(inner) ?? 0) + 1);
    for (const node of this.nodes) node.once = ways.get(node) === 1;
  }

  private readonly closures = new Map<Node, Set<Node>>();
  private readonly visiting = new Set<Node>();

  /** The subschemas applied to the value a subschema checks, itself included. */
  private closure(node: Node): Set<Node> {
    const known = this.closures.get(node);
    if (known !== undefined) return known;
    if (this.visiting.has(node))
      this.fail(
        node.at,
        "the schema applies itself to the same value again without descending into it (a $ref loop)",
      );
    this.visiting.add(node);
    const set = new Set<Node>([node]);
    for (const inner of sameValue(node))
      if (inner !== undefined) for (const n of this.closure(inner)) set.add(n);
    this.visiting.delete(node);
    this.closures.set(node, set);
    return set;
  }

  /**
   * Bounds the work: refuses a subschema that applies itself to the same value
   * (a loop), and any shape of the arguments that more than `MAX_PER_VALUE`
   * subschemas would apply to.
   */
  finish(root: Node): void {
    const closure = (node: Node) => this.closure(node);
    const union = (pick: (node: Node) => readonly (Node | undefined)[], of: Set<Node>) => {
      const set = new Set<Node>();
      for (const node of of)
        for (const inner of pick(node))
          if (inner !== undefined) for (const n of closure(inner)) set.add(n);
      return set;
    };
    const seen = new Set<string>();
    const pending: Set<Node>[] = [];
    const reached = new Set<Node>();
    const visit = (shape: Set<Node>) => {
      if (shape.size === 0) return;
      const key = [...shape]
        .map((n) => n.id)
        .sort((a, b) => a - b)
        .join(",");
      if (seen.has(key)) return;
      if (shape.size > MAX_PER_VALUE) {
        const first = [...shape][0] as Node;
        this.fail(
          first.at,
          `up to ${shape.size} subschemas apply to one value, more than the ${MAX_PER_VALUE} that can be checked in bounded time; narrow anyOf/oneOf/allOf or $ref`,
        );
      }
      seen.add(key);
      if (seen.size > MAX_SHAPES) this.fail("#", "the schema is too complex to bound its cost");
      for (const node of shape) reached.add(node);
      pending.push(shape);
    };
    this.markOnce(root);
    visit(closure(root));
    while (pending.length > 0) {
      const shape = pending.pop() as Set<Node>;
      const names = new Set<string>();
      let tuple = 0;
      for (const node of shape) {
        for (const name of node.properties.keys()) names.add(name);
        tuple = Math.max(tuple, node.prefix.length);
      }
      for (const name of names)
        visit(union((n) => [n.properties.get(name) ?? n.additional], shape));
      visit(union((n) => [n.additional], shape));
      visit(union((n) => [n.propertyNames], shape));
      for (let i = 0; i < tuple; i++)
        visit(union((n) => [n.prefix[i] ?? n.items, n.contains], shape));
      visit(union((n) => [n.items, n.contains], shape));
    }
    // Outermost first, so that the message names where the sharing starts.
    for (const node of [...reached].sort((a, b) => a.id - b.id))
      if (this.expanded(node) > MAX_EXPANDED)
        this.fail(
          node.at,
          `one value would be checked against more subschemas than the ${MAX_EXPANDED} that one value may be checked against, counting a subschema once for every way allOf, anyOf, oneOf, not, if/then/else, dependentSchemas and $ref reach it; share fewer subschemas between these keywords`,
        );
  }

  private readonly expansions = new Map<Node, number>();

  /**
   * The subschemas `node` applies to its value, itself included and counted
   * once per way of reaching them (`MAX_EXPANDED`), past which it stops
   * counting. Memoised, so this costs one visit per subschema; only called on
   * subschemas whose closure is known to hold no loop.
   */
  private expanded(node: Node): number {
    const known = this.expansions.get(node);
    if (known !== undefined) return known;
    let size = 1;
    for (const inner of sameValue(node))
      if (inner !== undefined) size = Math.min(size + this.expanded(inner), MAX_EXPANDED + 1);
    this.expansions.set(node, size);
    return size;
  }
}

type Keyword = (
  compiler: Compiler,
  node: Node,
  key: string,
  value: unknown,
  here: string,
  raw: Record<string, unknown>,
) => void;

type Count =
  | "minLength"
  | "maxLength"
  | "minItems"
  | "maxItems"
  | "minProperties"
  | "maxProperties"
  | "minContains"
  | "maxContains";

const rootOnly: Keyword = (c, node, key, _value, here) => {
  if (node.at !== "#") return c.fail(here, `${key} is only allowed at the root`);
};

const definitions: Keyword = (c, _node, _key, value, here) => {
  for (const [name, inner] of c.entries(value, here))
    c.node(inner, `${here}/${pointerToken(name)}`);
};

const type: Keyword = (c, node, _key, value, here) => {
  const types = Array.isArray(value) ? value : [value];
  if (types.length === 0 || types.some((t) => typeof t !== "string" || !TYPES.has(t)))
    return c.fail(here, `unknown type ${JSON.stringify(value)}`);
  node.types = types as string[];
  for (const name of node.types) node.typeMask |= TYPE_BITS[name] as number;
};

const bound: Keyword = (c, node, key, value, here) => {
  node[key as "minimum" | "maximum" | "multipleOf"] = c.number(value, here, key === "multipleOf");
};

const exclusiveBound: Keyword = (c, node, key, value, here, raw) => {
  const name = key as "exclusiveMinimum" | "exclusiveMaximum";
  if (c.draft !== "4") node[name] = c.number(value, here, false);
  else {
    if (typeof value !== "boolean") return c.fail(here, `${key} must be a boolean in draft 4`);
    const limit = name === "exclusiveMinimum" ? raw.minimum : raw.maximum;
    if (value && typeof limit === "number") node[name] = limit;
  }
};

const count: Keyword = (c, node, key, value, here) => {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
    return c.fail(here, `${key} must be a non-negative integer`);
  node[key as Count] = value;
};

const format: Keyword = (c, node, _key, value, here) => {
  if (typeof value !== "string" || !Object.hasOwn(FORMATS, value))
    return c.fail(
      here,
      `format ${JSON.stringify(value)} cannot be checked in linear time here; use one of ${Object.keys(FORMATS).join(", ")}, or drop it and check the value in the handler`,
    );
  node.format = { name: value, test: FORMATS[value] as (v: string) => boolean };
};

const items: Keyword = (c, node, _key, value, here) => {
  if (Array.isArray(value) && c.draft !== "2020-12")
    node.prefix = value.map((inner, i) => c.node(inner, `${here}/${i}`));
  else if (Array.isArray(value))
    return c.fail(here, "items must be a schema in draft 2020-12 (use prefixItems for tuples)");
  else node.items = c.node(value, here);
};

const properties: Keyword = (c, node, _key, value, here) => {
  for (const [name, inner] of c.entries(value, here))
    node.properties.set(name, c.node(inner, `${here}/${pointerToken(name)}`));
};

const dependencies: Keyword = (c, node, key, value, here) => {
  for (const [name, inner] of c.entries(value, here)) {
    const there = `${here}/${pointerToken(name)}`;
    if (key === "dependentRequired" || (key === "dependencies" && Array.isArray(inner)))
      node.dependentRequired.push([name, c.strings(inner, there)]);
    else node.dependentSchemas.push([name, c.node(inner, there)]);
  }
};

const combination: Keyword = (c, node, key, value, here) => {
  const list = c.list(value, here);
  if (list.length === 0) return c.fail(here, `${key} must not be empty`);
  node[key as "allOf" | "anyOf" | "oneOf"] = list;
};

/** One subschema under a keyword, stored in the node's field of that name. */
const single =
  (
    field:
      | "contains"
      | "additional"
      | "propertyNames"
      | "not"
      | "condition"
      | "whenTrue"
      | "whenFalse",
  ): Keyword =>
  (c, node, _key, value, here) => {
    node[field] = c.node(value, here);
  };

/** How each keyword is compiled; a keyword not here (nor an annotation) is refused. */
const KEYWORDS = new Map<string, Keyword>([
  ["$schema", rootOnly],
  ["$id", rootOnly],
  ["$ref", (c, node, _key, value, here) => (node.ref = c.resolve(value, here))],
  ["$defs", definitions],
  ["definitions", definitions],
  ["type", type],
  [
    "enum",
    (c, node, _key, value, here) => {
      if (!Array.isArray(value) || value.length === 0)
        return c.fail(here, "enum must be a non-empty array");
      node.enumeration = c.listed(value, here);
    },
  ],
  [
    "const",
    (c, node, _key, value, here) =>
      (node.constant = { value, listed: c.listed([value], here, true) }),
  ],
  ["minimum", bound],
  ["maximum", bound],
  ["multipleOf", bound],
  ["exclusiveMinimum", exclusiveBound],
  ["exclusiveMaximum", exclusiveBound],
  ["minLength", count],
  ["maxLength", count],
  ["minItems", count],
  ["maxItems", count],
  ["minProperties", count],
  ["maxProperties", count],
  ["minContains", count],
  ["maxContains", count],
  ["format", format],
  [
    "uniqueItems",
    (c, node, _key, value, here) => {
      if (typeof value !== "boolean") return c.fail(here, "uniqueItems must be a boolean");
      node.uniqueItems = value;
    },
  ],
  ["items", items],
  [
    "prefixItems",
    (c, node, _key, value, here) => {
      if (c.draft !== "2020-12") return c.fail(here, "prefixItems is a draft 2020-12 keyword");
      node.prefix = c.list(value, here);
    },
  ],
  [
    // Compiled once all keywords are read, as it depends on items.
    "additionalItems",
    (c, _node, _key, _value, here) => {
      if (c.draft === "2020-12") return c.fail(here, "use items after prefixItems in 2020-12");
    },
  ],
  ["contains", single("contains")],
  ["properties", properties],
  ["additionalProperties", single("additional")],
  ["propertyNames", single("propertyNames")],
  ["required", (c, node, _key, value, here) => (node.required = c.strings(value, here))],
  ["dependentRequired", dependencies],
  ["dependentSchemas", dependencies],
  ["dependencies", dependencies],
  ["allOf", combination],
  ["anyOf", combination],
  ["oneOf", combination],
  ["not", single("not")],
  ["if", single("condition")],
  ["then", single("whenTrue")],
  ["else", single("whenFalse")],
]);

/** Which groups of keywords a compiled node has. */
function groupsOf(node: Node): number {
  const has = (...values: unknown[]) => values.some((v) => v !== undefined);
  let groups = 0;
  if (has(node.minLength, node.maxLength, node.format)) groups |= STRING;
  if (
    has(node.minimum, node.maximum, node.exclusiveMinimum, node.exclusiveMaximum, node.multipleOf)
  )
    groups |= NUMBER;
  if (
    has(node.minItems, node.maxItems, node.items, node.contains, node.uniqueItems) ||
    node.prefix.length > 0
  )
    groups |= ARRAY;
  if (
    has(node.minProperties, node.maxProperties, node.additional, node.propertyNames) ||
    node.required.length + node.properties.size > 0 ||
    node.dependentRequired.length + node.dependentSchemas.length > 0
  )
    groups |= OBJECT;
  if (
    has(node.ref, node.not, node.condition) ||
    node.allOf.length + node.anyOf.length + node.oneOf.length > 0
  )
    groups |= APPLICATORS;
  return groups;
}

/** The subschemas a subschema applies to the values below the one it checks. */
function descents(node: Node): (Node | undefined)[] {
  return [
    ...node.properties.values(),
    node.additional,
    node.propertyNames,
    ...node.prefix,
    node.items,
    node.contains,
  ];
}

/** The subschemas a subschema applies to the very value it checks. */
function sameValue(node: Node): (Node | undefined)[] {
  return [
    ...node.allOf,
    ...node.anyOf,
    ...node.oneOf,
    node.not,
    node.condition,
    node.whenTrue,
    node.whenFalse,
    node.ref,
    ...node.dependentSchemas.map(([, inner]) => inner),
  ];
}

/**
 * The errors of one check: distinct ones, at most `MAX_ERRORS`, then the
 * `OMITTED` marker once one more was found (and the check stops).
 */
class Sink {
  readonly out: ArgumentError[] = [];
  private readonly seen = new Set<string>();
  full = false;
  add(path: string, message: string): void {
    if (this.full) return;
    const key = `${path}\n${message}`;
    if (this.seen.has(key)) return;
    if (this.out.length === MAX_ERRORS) {
      this.out.push(OMITTED);
      this.full = true;
      return;
    }
    this.seen.add(key);
    this.out.push(argumentError(path, message));
  }
}

/** An error as answered: its path and message clipped, so that their size is bounded. */
function argumentError(path: string, message: string): ArgumentError {
  return { path: clipped(path), message: clipped(message) };
}

function clipped(text: string): string {
  if (text.length <= MAX_ERROR_TEXT) return text;
  let end = MAX_ERROR_TEXT - 1;
  // Never half of a surrogate pair.
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

/**
 * The values an `enum` or `const` lists: JSON's scalars in a set of their own
 * (a number is equal to itself however it was written, and 0 to -0), objects
 * and arrays as their canonical JSON. A lookup costs one canonical form of the
 * value, which stops as soon as it is longer than the longest listed.
 */
class Listed {
  constructor(
    private readonly primitives: ReadonlySet<unknown>,
    private readonly texts: ReadonlySet<string>,
    private readonly longest: number,
  ) {}

  has(value: unknown): boolean {
    if (typeof value !== "object" || value === null) return this.primitives.has(value);
    if (this.texts.size === 0) return false;
    const text = canonicalJson(value, this.longest);
    return text !== undefined && this.texts.has(text);
  }
}

/**
 * One validation: verdicts are memoised per (subschema, value), so none is
 * computed twice. A verdict depends on the value alone, so the memo is keyed
 * by the value itself: objects and arrays by identity, strings and numbers by
 * content (equal strings share their verdicts).
 */
class Run {
  /** Per subschema id, created on first use. */
  private readonly memos: (Map<unknown, boolean> | undefined)[];
  private keys: Map<object, string[]> | undefined;
  private canonicals: Map<object, number> | undefined;
  private readonly canonicalIds = new Map<string, number>();
  /** While errors are collected every verdict is kept: the same parts are asked again. */
  private reporting = false;
  /** Per subschema id, the values (and their paths) already reported against it. */
  private reported: (Map<unknown, Set<string>> | undefined)[] | undefined;

  constructor(private readonly nodes: number) {
    this.memos = new Array(nodes).fill(undefined);
  }

  valid(node: Node, value: unknown): boolean {
    if (node.bool !== undefined) return node.bool;
    if (node.once && !this.reporting) return this.evaluate(node, value, "", undefined);
    let memo = this.memos[node.id];
    if (memo === undefined) {
      memo = new Map();
      this.memos[node.id] = memo;
    }
    const known = memo.get(value);
    if (known !== undefined) return known;
    const verdict = this.evaluate(node, value, "", undefined);
    memo.set(value, verdict);
    return verdict;
  }

  /** Says why `value` fails `node`, descending only into the parts that fail. */
  report(node: Node, value: unknown, path: string, sink: Sink): void {
    this.reporting = true;
    if (sink.full || this.valid(node, value) || this.reportedBefore(node, value, path)) return;
    if (node.bool === false) sink.add(path, "no value is allowed here");
    else this.evaluate(node, value, path, sink);
  }

  /**
   * Whether `value` at `path` was reported against `node` already (and marks
   * it so). A report depends on these three alone, and stops only once the
   * sink is full: a second one would add nothing. Without this, subschemas
   * shared across levels would be reported once per way of reaching them.
   */
  private reportedBefore(node: Node, value: unknown, path: string): boolean {
    this.reported ??= new Array(this.nodes).fill(undefined);
    let byValue = this.reported[node.id];
    if (byValue === undefined) {
      byValue = new Map();
      this.reported[node.id] = byValue;
    }
    let paths = byValue.get(value);
    if (paths === undefined) {
      paths = new Set();
      byValue.set(value, paths);
    }
    if (paths.has(path)) return true;
    paths.add(path);
    return false;
  }

  /**
   * Checks `value` (at `path`, or its `key` below `path`) against `next`; true
   * to stop. The path is only written out when there is a sink to report to.
   */
  private fails(
    sink: Sink | undefined,
    next: Node,
    value: unknown,
    path: string,
    key?: string | number,
  ): boolean {
    if (this.valid(next, value)) return false;
    if (sink === undefined) return true;
    this.report(
      next,
      value,
      key === undefined ? path : `${path}/${pointerToken(String(key))}`,
      sink,
    );
    return sink.full;
  }

  /**
   * Checks `value` against `node`'s own keywords, cheapest first. Without a
   * sink it stops at the first failure; with one it reports failures (the
   * caller knows the value fails) until the sink is full. Messages are only
   * built when there is a sink.
   */
  private evaluate(node: Node, raw: unknown, path: string, sink: Sink | undefined): boolean {
    const kind = kindOf(raw);
    if (node.typeMask !== 0 && (node.typeMask & kind) === 0) {
      if (sink !== undefined) sink.add(path, `must be of type ${node.types?.join(" or ")}`);
      return false;
    }
    if (node.constant !== undefined && !node.constant.listed.has(raw))
      if (sink === undefined || stop(sink, path, `must be ${JSON.stringify(node.constant.value)}`))
        return false;
    if (node.enumeration !== undefined && !node.enumeration.has(raw))
      if (sink === undefined || stop(sink, path, "must be one of the values listed in enum"))
        return false;
    const groups = node.groups;
    if (groups === 0) return true;
    if (kind === K_STRING) {
      if ((groups & STRING) !== 0 && !this.string(node, raw as string, path, sink)) return false;
    } else if ((kind & K_NUMBER) !== 0) {
      if ((groups & NUMBER) !== 0 && !this.number(node, raw as number, path, sink)) return false;
    } else if (kind === K_ARRAY) {
      if ((groups & ARRAY) !== 0 && !this.array(node, raw as unknown[], path, sink)) return false;
    } else if (kind === K_OBJECT) {
      if ((groups & OBJECT) !== 0 && !this.object(node, raw as Record<string, unknown>, path, sink))
        return false;
    }
    return (groups & APPLICATORS) === 0 || this.applicators(node, raw, path, sink);
  }

  private string(node: Node, raw: string, path: string, sink: Sink | undefined): boolean {
    let sized = true;
    if (node.maxLength !== undefined && tooLong(raw, node.maxLength)) {
      sized = false;
      if (
        sink === undefined ||
        stop(sink, path, `must be at most ${node.maxLength} characters long`)
      )
        return false;
    }
    if (node.minLength !== undefined && tooShort(raw, node.minLength)) {
      sized = false;
      if (
        sink === undefined ||
        stop(sink, path, `must be at least ${node.minLength} characters long`)
      )
        return false;
    }
    if (sized && node.format !== undefined && !node.format.test(raw))
      if (sink === undefined || stop(sink, path, `must be a valid ${node.format.name}`))
        return false;
    return true;
  }

  private number(node: Node, raw: number, path: string, sink: Sink | undefined): boolean {
    if (node.minimum !== undefined && raw < node.minimum)
      if (sink === undefined || stop(sink, path, `must be at least ${node.minimum}`)) return false;
    if (node.maximum !== undefined && raw > node.maximum)
      if (sink === undefined || stop(sink, path, `must be at most ${node.maximum}`)) return false;
    if (node.exclusiveMinimum !== undefined && raw <= node.exclusiveMinimum)
      if (sink === undefined || stop(sink, path, `must be greater than ${node.exclusiveMinimum}`))
        return false;
    if (node.exclusiveMaximum !== undefined && raw >= node.exclusiveMaximum)
      if (sink === undefined || stop(sink, path, `must be less than ${node.exclusiveMaximum}`))
        return false;
    if (node.multipleOf !== undefined && !isMultiple(raw, node.multipleOf))
      if (sink === undefined || stop(sink, path, `must be a multiple of ${node.multipleOf}`))
        return false;
    return true;
  }

  private applicators(node: Node, value: unknown, path: string, sink: Sink | undefined): boolean {
    const allOf = node.allOf;
    for (let i = 0; i < allOf.length; i++)
      if (this.fails(sink, allOf[i] as Node, value, path)) return false;
    if (node.ref !== undefined && this.fails(sink, node.ref, value, path)) return false;
    if (node.anyOf.length > 0 && !this.anyValid(node.anyOf, value))
      if (sink === undefined || stop(sink, path, "must match at least one schema of anyOf"))
        return false;
    const oneOf = node.oneOf;
    if (oneOf.length > 0) {
      let matched = 0;
      for (let i = 0; i < oneOf.length; i++)
        if (this.valid(oneOf[i] as Node, value) && ++matched > 1) break;
      if (matched !== 1) {
        const how = matched === 0 ? "none" : "several";
        if (
          sink === undefined ||
          stop(sink, path, `must match exactly one schema of oneOf, not ${how}`)
        )
          return false;
      }
    }
    if (node.not !== undefined && this.valid(node.not, value))
      if (sink === undefined || stop(sink, path, "must not match the schema under not"))
        return false;
    if (node.condition !== undefined) {
      const branch = this.valid(node.condition, value) ? node.whenTrue : node.whenFalse;
      if (branch !== undefined && this.fails(sink, branch, value, path)) return false;
    }
    return true;
  }

  private anyValid(nodes: readonly Node[], value: unknown): boolean {
    for (let i = 0; i < nodes.length; i++) if (this.valid(nodes[i] as Node, value)) return true;
    return false;
  }

  private array(node: Node, raw: unknown[], path: string, sink: Sink | undefined): boolean {
    const length = raw.length;
    let sized = true;
    if (node.maxItems !== undefined && length > node.maxItems) {
      sized = false;
      if (sink === undefined || stop(sink, path, `must have at most ${node.maxItems} items`))
        return false;
    }
    if (node.minItems !== undefined && length < node.minItems) {
      sized = false;
      if (sink === undefined || stop(sink, path, `must have at least ${node.minItems} items`))
        return false;
    }
    // Past a failed bound the items are not worth checking (nor comparing).
    if (!sized) return true;
    const prefix = node.prefix;
    const rest = node.items;
    if (prefix.length > 0 || rest !== undefined) {
      for (let i = 0; i < length; i++) {
        const next = i < prefix.length ? prefix[i] : rest;
        if (next !== undefined && this.fails(sink, next, raw[i], path, i)) return false;
      }
    }
    if (node.contains !== undefined && !this.contains(node, node.contains, raw, path, sink))
      return false;
    if (node.uniqueItems === true && length > 1) {
      const first = new Map<number, number>();
      for (let i = 0; i < length; i++) {
        const id = this.canonical(raw[i]);
        const earlier = first.get(id);
        if (earlier !== undefined) {
          if (
            sink === undefined ||
            stop(sink, path, `must have unique items (items ${earlier} and ${i} are equal)`)
          )
            return false;
          break;
        }
        first.set(id, i);
      }
    }
    return true;
  }

  private contains(
    node: Node,
    matching: Node,
    raw: unknown[],
    path: string,
    sink: Sink | undefined,
  ): boolean {
    const min = node.minContains ?? 1;
    const max = node.maxContains ?? Number.POSITIVE_INFINITY;
    let count = 0;
    for (let i = 0; i < raw.length && count <= max; i++) {
      if (this.valid(matching, raw[i])) count++;
      if (count >= min && max === Number.POSITIVE_INFINITY) break;
    }
    if (count < min)
      if (sink === undefined || stop(sink, path, `must contain at least ${min} matching item(s)`))
        return false;
    if (count > max)
      if (sink === undefined || stop(sink, path, `must contain at most ${max} matching item(s)`))
        return false;
    return true;
  }

  private object(
    node: Node,
    raw: Record<string, unknown>,
    path: string,
    sink: Sink | undefined,
  ): boolean {
    if (node.maxProperties !== undefined || node.minProperties !== undefined) {
      const count = this.ownKeys(raw).length;
      if (node.maxProperties !== undefined && count > node.maxProperties)
        if (
          sink === undefined ||
          stop(sink, path, `must have at most ${node.maxProperties} properties`)
        )
          return false;
      if (node.minProperties !== undefined && count < node.minProperties)
        if (
          sink === undefined ||
          stop(sink, path, `must have at least ${node.minProperties} properties`)
        )
          return false;
    }
    for (const key of node.required)
      if (!Object.hasOwn(raw, key))
        if (
          sink === undefined ||
          stop(sink, path, `the property ${JSON.stringify(key)} is required`)
        )
          return false;
    for (const [key, needed] of node.dependentRequired) {
      if (!Object.hasOwn(raw, key)) continue;
      for (const other of needed)
        if (!Object.hasOwn(raw, other)) {
          if (sink === undefined) return false;
          const message = `the property ${JSON.stringify(other)} is required with ${JSON.stringify(key)}`;
          if (stop(sink, path, message)) return false;
        }
    }
    if (!this.members(node, raw, path, sink)) return false;
    if (node.propertyNames !== undefined) {
      for (const key of this.ownKeys(raw))
        if (this.fails(sink, node.propertyNames, key, path, key)) return false;
    }
    for (const [key, next] of node.dependentSchemas)
      if (Object.hasOwn(raw, key) && this.fails(sink, next, raw, path)) return false;
    return true;
  }

  /** `properties` and `additionalProperties`. */
  private members(
    node: Node,
    raw: Record<string, unknown>,
    path: string,
    sink: Sink | undefined,
  ): boolean {
    const additional = node.additional;
    if (additional === undefined) {
      // Only the declared properties to look at: no walk over the client's keys.
      const keys = node.propertyKeys;
      for (let i = 0; i < keys.length; i++) {
        const key = keys[i] as string;
        if (
          Object.hasOwn(raw, key) &&
          this.fails(sink, node.propertyNodes[i] as Node, raw[key], path, key)
        )
          return false;
      }
      return true;
    }
    for (const key of this.ownKeys(raw)) {
      const declared = node.properties.get(key);
      const next = declared ?? additional;
      if (declared === undefined && next.bool === false) {
        if (
          sink === undefined ||
          stop(sink, `${path}/${pointerToken(key)}`, "the property is not allowed")
        )
          return false;
      } else if (this.fails(sink, next, raw[key], path, key)) return false;
    }
    return true;
  }

  /** An object's own keys, listed once per validation. */
  private ownKeys(raw: object): string[] {
    this.keys ??= new Map();
    let keys = this.keys.get(raw);
    if (keys === undefined) {
      keys = Object.keys(raw);
      this.keys.set(raw, keys);
    }
    return keys;
  }

  /**
   * A number naming the value's canonical JSON (keys sorted), built from its
   * children's numbers so that each part of the arguments is serialised once.
   */
  private canonical(raw: unknown): number {
    let text: string;
    if (typeof raw === "object" && raw !== null) {
      this.canonicals ??= new Map();
      const known = this.canonicals.get(raw);
      if (known !== undefined) return known;
      if (Array.isArray(raw)) {
        const parts: number[] = [];
        for (let i = 0; i < raw.length; i++) parts.push(this.canonical(raw[i]));
        text = `[${parts.join(",")}]`;
      } else {
        const record = raw as Record<string, unknown>;
        const keys = [...this.ownKeys(record)].sort();
        text = `{${keys.map((key) => `${JSON.stringify(key)}:${this.canonical(record[key])}`).join(",")}}`;
      }
    } else text = typeof raw === "string" ? JSON.stringify(raw) : String(raw);
    let id = this.canonicalIds.get(text);
    if (id === undefined) {
      id = this.canonicalIds.size;
      this.canonicalIds.set(text, id);
    }
    if (typeof raw === "object" && raw !== null) this.canonicals?.set(raw, id);
    return id;
  }
}

/** A failure reported to `sink`: true when the caller should stop (the sink is full). */
function stop(sink: Sink, path: string, message: string): boolean {
  sink.add(path, message);
  return sink.full;
}

const K_NULL = 1;
const K_BOOLEAN = 2;
const K_OBJECT = 4;
const K_ARRAY = 8;
const K_NUMBER = 16;
const K_INTEGER = 32;
const K_STRING = 64;
/** The kinds each `type` admits: an integer is also a number. */
const TYPE_BITS: Readonly<Record<string, number>> = {
  null: K_NULL,
  boolean: K_BOOLEAN,
  object: K_OBJECT,
  array: K_ARRAY,
  number: K_NUMBER,
  integer: K_INTEGER,
  string: K_STRING,
};

/** The JSON kind of a value as one bit (two for an integer: number and integer). */
function kindOf(raw: unknown): number {
  switch (typeof raw) {
    case "string":
      return K_STRING;
    case "number":
      return Number.isInteger(raw) ? K_NUMBER | K_INTEGER : K_NUMBER;
    case "boolean":
      return K_BOOLEAN;
    case "object":
      return raw === null ? K_NULL : Array.isArray(raw) ? K_ARRAY : K_OBJECT;
    default:
      return 0;
  }
}

/** JSON Schema counts code points: a UTF-16 length over twice the bound cannot fit. */
function tooLong(value: string, max: number): boolean {
  if (value.length <= max) return false;
  if (value.length > 2 * max) return true;
  return codePoints(value) > max;
}

function tooShort(value: string, min: number): boolean {
  if (value.length < min) return true;
  if (value.length >= 2 * min) return false;
  return codePoints(value) < min;
}

function codePoints(value: string): number {
  let count = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff || i === 0) count++;
    else {
      const previous = value.charCodeAt(i - 1);
      if (previous < 0xd800 || previous > 0xdbff) count++;
    }
  }
  return count;
}

/**
 * Whether `value` is a multiple of `of` as the decimals they are written as:
 * 0.01 is one hundredth, not its binary neighbour, so 0.07 is a multiple of it
 * and 0.0100000000001 is not. No tolerance.
 */
function isMultiple(value: number, of: number): boolean {
  if (!Number.isFinite(value)) return false;
  if (Number.isInteger(of)) {
    if (!Number.isInteger(value)) return false;
    // Safe integers divide exactly in binary.
    if (Number.isSafeInteger(of) && Number.isSafeInteger(value)) return value % of === 0;
  }
  const a = decimal(value);
  const b = decimal(of);
  const scale = Math.min(a.exponent, b.exponent);
  return (
    (a.digits * 10n ** BigInt(a.exponent - scale)) %
      (b.digits * 10n ** BigInt(b.exponent - scale)) ===
    0n
  );
}

/**
 * A finite number as `digits` × 10^`exponent`, from the shortest decimal that
 * reads back as it ("0.01", "1.5e-7", "1e+21").
 */
function decimal(value: number): { readonly digits: bigint; readonly exponent: number } {
  const text = String(value);
  const e = text.indexOf("e");
  const mantissa = e < 0 ? text : text.slice(0, e);
  let exponent = e < 0 ? 0 : Number(text.slice(e + 1));
  const dot = mantissa.indexOf(".");
  if (dot >= 0) exponent -= mantissa.length - dot - 1;
  return { digits: BigInt(dot < 0 ? mantissa : mantissa.replace(".", "")), exponent };
}

/**
 * `value`'s JSON with object keys sorted, or undefined when it is not JSON
 * data or its text would be longer than `limit` (the walk stops there).
 */
function canonicalJson(value: unknown, limit: number): string | undefined {
  const parts: string[] = [];
  let length = 0;
  const put = (text: string): boolean => {
    parts.push(text);
    length += text.length;
    return length <= limit;
  };
  const walk = (inner: unknown): boolean => {
    switch (typeof inner) {
      case "string":
        // Its JSON is at least two characters longer.
        return inner.length + 2 + length <= limit && put(JSON.stringify(inner));
      case "number":
        return Number.isFinite(inner) && put(JSON.stringify(inner));
      case "boolean":
        return put(inner ? "true" : "false");
      case "object": {
        if (inner === null) return put("null");
        if (Array.isArray(inner)) {
          if (!put("[")) return false;
          for (let i = 0; i < inner.length; i++)
            if ((i > 0 && !put(",")) || !walk(inner[i])) return false;
          return put("]");
        }
        if (!isPlainObject(inner)) return false;
        const keys = Object.keys(inner);
        // Each member takes at least four characters ("":0).
        if (length + 2 + 4 * keys.length > limit || !put("{")) return false;
        keys.sort();
        for (let i = 0; i < keys.length; i++) {
          const key = keys[i] as string;
          if (i > 0 && !put(",")) return false;
          if (key.length + 3 + length > limit || !put(`${JSON.stringify(key)}:`)) return false;
          if (!walk(inner[key])) return false;
        }
        return put("}");
      }
      default:
        return false;
    }
  };
  return walk(value) ? parts.join("") : undefined;
}

function pointerToken(key: string): string {
  return key.replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * What no arguments may hold, whatever their schema: nesting deeper than
 * `MAX_DEPTH`, keys that would reach a handler as something other than data,
 * and numbers JSON cannot write (`1e400` parses as Infinity).
 */
function screen(value: unknown): ArgumentError | undefined {
  // The path is kept as a stack and written out only for the answer.
  const trail: (string | number)[] = [];
  const at = () => trail.map((key) => `/${pointerToken(String(key))}`).join("");
  const walk = (inner: unknown, depth: number): ArgumentError | undefined => {
    if (depth > MAX_DEPTH) return argumentError(at(), `nested deeper than ${MAX_DEPTH} levels`);
    if (typeof inner === "number") {
      if (!Number.isFinite(inner)) return argumentError(at(), "must be a finite number");
    } else if (Array.isArray(inner)) {
      for (let i = 0; i < inner.length; i++) {
        trail.push(i);
        const found = walk(inner[i], depth + 1);
        if (found !== undefined) return found;
        trail.pop();
      }
    } else if (typeof inner === "object" && inner !== null) {
      for (const key of Object.keys(inner)) {
        trail.push(key);
        if (POISONED.has(key)) return argumentError(at(), `the key ${key} is not allowed`);
        const found = walk((inner as Record<string, unknown>)[key], depth + 1);
        if (found !== undefined) return found;
        trail.pop();
      }
    }
    return undefined;
  };
  return walk(value, 0);
}

function inspect(where: string, node: unknown, depth: number): void {
  if (depth > 64) throw new InvalidOptionsError(`${where}: the schema is nested too deeply`);
  if (Array.isArray(node)) {
    for (const item of node) inspect(where, item, depth + 1);
    return;
  }
  if (!isPlainObject(node)) return;
  for (const [key, value] of Object.entries(node)) {
    if (key === "$ref" || key === "$dynamicRef" || key === "$recursiveRef") {
      if (typeof value !== "string" || !value.startsWith("#"))
        throw new InvalidOptionsError(
          `${where}: only local $ref ("#...") can be resolved, not ${JSON.stringify(value)}`,
        );
    }
    if (key === "type") {
      const types = Array.isArray(value) ? value : [value];
      if (types.some((type) => typeof type !== "string" || !TYPES.has(type)))
        throw new InvalidOptionsError(`${where}: unknown type ${JSON.stringify(value)}`);
    }
    inspect(where, value, depth + 1);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
