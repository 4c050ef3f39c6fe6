/**
 * Seeded random input schemas and arguments for the differential test of the
 * schema interpreter: the same seed gives the same cases on every machine, so
 * the verdicts recorded once in test/fixtures/schema-verdicts.json pin its
 * behaviour.
 */

/** A small deterministic generator (mulberry32). */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const KEYS = ["a", "b", "c", "d"];
const STRINGS = [
  "",
  "a",
  "ab",
  "abc",
  "1",
  "true",
  "x@y.io",
  "http://e.com/",
  "2024-01-02",
  "é😀",
  "a b",
];
const FORMATS = ["email", "uri", "url", "date", "hostname", "uuid", "ipv4"];
const TYPES = ["null", "boolean", "object", "array", "number", "integer", "string"];

export interface Case {
  readonly schema: Record<string, unknown>;
  readonly values: readonly unknown[];
}

/** Case `index` of the differential test: a schema (with shared `$defs`) and values to check. */
export function generateCase(index: number): Case {
  const next = random(index * 7919 + 1);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const int = (max: number) => Math.floor(next() * (max + 1));
  const chance = (p: number) => next() < p;
  const defs = ["d0", "d1", "d2"];

  const value = (depth: number): unknown => {
    const kind = depth > 3 ? int(3) : int(6);
    switch (kind) {
      case 0:
        return pick([null, true, false]);
      case 1:
        return pick([0, 1, 2, -1, 2.5, 10, 100, 0.1, -0]);
      case 2:
      case 3:
        return pick(STRINGS);
      case 4:
      case 5:
        return Array.from({ length: int(4) }, () => value(depth + 1));
      default: {
        const out: Record<string, unknown> = {};
        for (const key of KEYS) if (chance(0.45)) out[key] = value(depth + 1);
        return out;
      }
    }
  };

  const schema = (depth: number): unknown => {
    if (depth > 3 || chance(0.15)) {
      if (chance(0.3)) return chance(0.8);
      if (chance(0.5)) return { $ref: `#/$defs/${pick(defs)}` };
      return { type: pick(TYPES) };
    }
    const out: Record<string, unknown> = {};
    const keywords = int(3) + 1;
    for (let i = 0; i < keywords; i++) {
      switch (int(22)) {
        case 0:
          out.type = chance(0.7) ? pick(TYPES) : [pick(TYPES), pick(TYPES)];
          break;
        case 1:
          out.enum = Array.from({ length: int(2) + 1 }, () => value(3));
          break;
        case 2:
          out.const = value(2);
          break;
        case 3:
          out.minLength = int(3);
          out.maxLength = int(4);
          break;
        case 4:
          out.format = pick(FORMATS);
          break;
        case 5:
          out[pick(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"])] = int(4) - 1;
          break;
        case 6:
          out.multipleOf = pick([1, 2, 0.5, 0.1]);
          break;
        case 7:
          out[pick(["minItems", "maxItems"])] = int(3);
          break;
        case 8:
          out.uniqueItems = chance(0.8);
          break;
        case 9:
          out.items = schema(depth + 1);
          break;
        case 10:
          out.prefixItems = Array.from({ length: int(1) + 1 }, () => schema(depth + 1));
          break;
        case 11:
          out.contains = schema(depth + 1);
          if (chance(0.5)) out.minContains = int(2);
          if (chance(0.3)) out.maxContains = int(2) + 1;
          break;
        case 12: {
          const properties: Record<string, unknown> = {};
          for (const key of KEYS) if (chance(0.4)) properties[key] = schema(depth + 1);
          out.properties = properties;
          break;
        }
        case 13:
          out.required = KEYS.filter(() => chance(0.3));
          break;
        case 14:
          out.additionalProperties = schema(depth + 1);
          break;
        case 15:
          out.propertyNames = chance(0.5) ? { maxLength: 1 } : schema(depth + 1);
          break;
        case 16:
          out.dependentRequired = { [pick(KEYS)]: [pick(KEYS)] };
          break;
        case 17:
          out.dependentSchemas = { [pick(KEYS)]: schema(depth + 1) };
          break;
        case 18:
        case 19:
          out[pick(["allOf", "anyOf", "oneOf"])] = Array.from({ length: int(2) + 1 }, () =>
            schema(depth + 1),
          );
          break;
        case 20:
          out.not = schema(depth + 1);
          break;
        case 21:
          out.if = schema(depth + 1);
          // biome-ignore lint/suspicious/noThenProperty: the JSON Schema keyword
          if (chance(0.8)) out.then = schema(depth + 1);
          if (chance(0.6)) out.else = schema(depth + 1);
          break;
        default:
          out[pick(["minProperties", "maxProperties"])] = int(3);
      }
    }
    return out;
  };

  const root = schema(0) as Record<string, unknown> | boolean;
  const $defs: Record<string, unknown> = {};
  // Definitions descend before referring to each other, so that most loops are legal.
  for (const name of defs)
    $defs[name] = chance(0.5)
      ? { type: "array", items: schema(2) }
      : { properties: { [pick(KEYS)]: schema(2) } };
  const values = Array.from({ length: 6 }, () => value(0));
  return {
    schema: typeof root === "boolean" ? { allOf: [root], $defs } : { ...root, $defs },
    values,
  };
}

/** A short digest of a verdict (FNV-1a), so that the recorded file stays small. */
export function digest(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}
