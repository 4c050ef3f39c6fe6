import { InvalidOptionsError } from "../core/errors.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { isHttpsOrLoopback } from "../core/url.ts";
import {
  type ArgumentCheck,
  checkPlainArguments,
  checkPublishedSchema,
  compileSchema,
  type JsonSchema,
} from "./schema.ts";
import type { AgentSession } from "./session.ts";

/** Runs a capability: `args` has passed the input schema; `session` says who calls with what grant. */
export type CapabilityHandler = (
  args: Readonly<Record<string, unknown>>,
  session: AgentSession,
  request: Request,
) => unknown | Promise<unknown>;

export interface CapabilityDefinition {
  /** `[a-z0-9_]+`, at most 64 characters. */
  readonly name: string;
  /** What the capability does, for the agent deciding whether to ask for it. */
  readonly description: string;
  /** JSON Schema the `arguments` object must satisfy. */
  readonly input?: JsonSchema;
  /** JSON Schema of the result, published for agents. */
  readonly output?: JsonSchema;
  /** Runs the capability. Exactly one of `handler` and `location`. */
  readonly handler?: CapabilityHandler;
  /**
   * An absolute URL where the capability is served by the integrator (behind
   * `resolveSession`); `executeHandler` never dispatches it.
   */
  readonly location?: string;
}

/** A registered capability, checked and frozen: its definition plus the argument check. */
export interface Capability extends CapabilityDefinition {
  /** Checks arguments against `input` (and for prototype keys). */
  readonly check: ArgumentCheck;
}

/** What `/capability/list` shows of a capability. */
export interface CapabilityListing {
  readonly name: string;
  readonly description: string;
  readonly input?: JsonSchema;
  readonly output?: JsonSchema;
  readonly location?: string;
}

const NAME = /^[a-z0-9_]{1,64}$/;

/** The capabilities a service offers, sorted by name. Built once; throws on anything malformed. */
export class CapabilityRegistry {
  readonly #byName: ReadonlyMap<string, Capability>;
  readonly #sorted: readonly Capability[];

  constructor(definitions: readonly CapabilityDefinition[]) {
    if (!Array.isArray(definitions) || definitions.length === 0)
      throw new InvalidOptionsError("capabilities: give at least one capability");
    const byName = new Map<string, Capability>();
    for (const definition of definitions) {
      const capability = toCapability(definition);
      if (byName.has(capability.name))
        throw new InvalidOptionsError(`capabilities: ${capability.name} is registered twice`);
      byName.set(capability.name, capability);
    }
    this.#byName = byName;
    this.#sorted = Object.freeze([...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1)));
  }

  get(name: string): Capability | undefined {
    return typeof name === "string" ? this.#byName.get(name) : undefined;
  }

  has(name: string): boolean {
    return this.#byName.has(name);
  }

  /** Every capability, sorted by name. */
  all(): readonly Capability[] {
    return this.#sorted;
  }
}

/**
 * Whether a capability runs here (at the execute URL, and as an MCP tool):
 * it has a handler, so it has no `location` of its own.
 */
export function isExecutable(capability: Capability): boolean {
  return capability.handler !== undefined;
}

/** The names of the capabilities that run here, sorted. */
export function toolNames(registry: CapabilityRegistry): readonly string[] {
  return registry
    .all()
    .filter(isExecutable)
    .map((capability) => capability.name);
}

/** Builds a registry; the same as `new CapabilityRegistry(definitions)`. */
export function defineCapabilities(
  definitions: readonly CapabilityDefinition[],
): CapabilityRegistry {
  return new CapabilityRegistry(definitions);
}

export function listingOf(capability: Capability): CapabilityListing {
  return {
    name: capability.name,
    description: capability.description,
    ...(capability.input === undefined ? {} : { input: capability.input }),
    ...(capability.output === undefined ? {} : { output: capability.output }),
    ...(capability.location === undefined ? {} : { location: capability.location }),
  };
}

function toCapability(definition: CapabilityDefinition): Capability {
  const label = `capability ${JSON.stringify(definition?.name)}`;
  rejectUnknownKeys(label, definition, [
    "name",
    "description",
    "input",
    "output",
    "handler",
    "location",
  ]);
  if (typeof definition.name !== "string" || !NAME.test(definition.name))
    throw new InvalidOptionsError(
      `${label}: the name must match [a-z0-9_]+ (at most 64 characters)`,
    );
  if (typeof definition.description !== "string" || definition.description.trim() === "")
    throw new InvalidOptionsError(`${label}: a description is required`);
  const { handler, location } = definition;
  if ((handler === undefined) === (location === undefined))
    throw new InvalidOptionsError(`${label}: give exactly one of handler and location`);
  if (handler !== undefined && typeof handler !== "function")
    throw new InvalidOptionsError(`${label}: handler must be a function`);
  if (location !== undefined && !isLocation(location))
    throw new InvalidOptionsError(
      `${label}: location must be an absolute https URL (http only on loopback)`,
    );
  // Validated from a frozen copy: later changes to the caller's object change nothing.
  const input = frozenCopy(`${label} input`, definition.input);
  const output = frozenCopy(`${label} output`, definition.output);
  const check = input === undefined ? checkPlainArguments : compileSchema(`${label} input`, input);
  if (output !== undefined) checkPublishedSchema(`${label} output`, output);
  return Object.freeze({
    name: definition.name,
    description: definition.description,
    check,
    ...(input === undefined ? {} : { input }),
    ...(output === undefined ? {} : { output }),
    ...(handler === undefined ? {} : { handler }),
    ...(location === undefined ? {} : { location: new URL(location).href }),
  });
}

function isLocation(value: unknown): boolean {
  if (typeof value !== "string" || !URL.canParse(value)) return false;
  const url = new URL(value);
  return isHttpsOrLoopback(url) && url.hash === "";
}

function frozenCopy(where: string, schema: JsonSchema | undefined): JsonSchema | undefined {
  if (schema === undefined) return undefined;
  try {
    return deepFreeze(structuredClone(schema));
  } catch (cause) {
    throw new InvalidOptionsError(`${where}: a JSON Schema must be plain JSON data`, { cause });
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
