import { type Schema, Validator } from "@cfworker/json-schema";
import { InvalidOptionsError } from "../core/errors.ts";

/** A JSON Schema document (draft 2020-12 unless `$schema` names 2019-09, 7 or 4). */
export type JsonSchema = Readonly<Record<string, unknown>> | boolean;

/** Where in the arguments a check failed (a JSON Pointer) and why. */
export interface ArgumentError {
  readonly path: string;
  readonly message: string;
}

export type ArgumentCheck = (value: unknown) => readonly ArgumentError[];

const DRAFTS: Record<string, "2020-12" | "2019-09" | "7" | "4"> = {
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

/**
 * Compiles a schema into a check, interpreting it (no code generation: it runs
 * on Workers too). A schema that cannot be validated (an unknown draft, a
 * remote `$ref`, an unknown type) throws `InvalidOptionsError` here.
 */
export function compileSchema(where: string, schema: unknown): ArgumentCheck {
  if (typeof schema !== "boolean" && !isPlainObject(schema))
    throw new InvalidOptionsError(`${where}: a JSON Schema must be an object or a boolean`);
  let draft: "2020-12" | "2019-09" | "7" | "4" = "2020-12";
  if (typeof schema === "object") {
    const declared = schema.$schema;
    if (declared !== undefined) {
      const known = typeof declared === "string" ? DRAFTS[declared] : undefined;
      if (known === undefined)
        throw new InvalidOptionsError(
          `${where}: $schema ${JSON.stringify(declared)} is not a supported draft`,
        );
      draft = known;
    }
    inspect(where, schema, 0);
  }
  let validator: Validator;
  try {
    // The validator annotates the schema it is given: hand it a copy of its own.
    validator = new Validator(structuredClone(schema) as Schema, draft, false);
    validator.validate({});
  } catch (cause) {
    throw new InvalidOptionsError(`${where}: the schema cannot be validated`, { cause });
  }
  return (value) => {
    const poisoned = findPoisonedKey(value, "", 0);
    if (poisoned !== undefined) return [poisoned];
    const result = validator.validate(value);
    if (result.valid) return [];
    // The innermost errors say what is wrong; the wrappers only repeat "does not match".
    const leaves = result.errors.filter(
      (error) => !["properties", "items", "allOf", "$ref", "false"].includes(error.keyword),
    );
    return (leaves.length > 0 ? leaves : result.errors).slice(0, 20).map((error) => ({
      path: error.instanceLocation.replace(/^#/, ""),
      message: error.error,
    }));
  };
}

/** Arguments without a schema still may not carry prototype keys. */
export function checkPlainArguments(value: unknown): readonly ArgumentError[] {
  const poisoned = findPoisonedKey(value, "", 0);
  return poisoned === undefined ? [] : [poisoned];
}

function findPoisonedKey(value: unknown, path: string, depth: number): ArgumentError | undefined {
  if (depth > MAX_DEPTH) return { path, message: `nested deeper than ${MAX_DEPTH} levels` };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findPoisonedKey(value[i], `${path}/${i}`, depth + 1);
      if (found !== undefined) return found;
    }
  } else if (typeof value === "object" && value !== null) {
    for (const key of Object.keys(value)) {
      const at = `${path}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
      if (POISONED.has(key)) return { path: at, message: `the key ${key} is not allowed` };
      const found = findPoisonedKey((value as Record<string, unknown>)[key], at, depth + 1);
      if (found !== undefined) return found;
    }
  }
  return undefined;
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

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
