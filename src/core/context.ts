/**
 * A typed key. Two keys made with the same name are still different keys, so
 * modules cannot read or overwrite each other's values by accident.
 */
export interface ContextKey<T> {
  readonly name: string;
  /** Type carrier only; never set. */
  readonly __type?: T;
}

/** Creates a key under which a middleware stores one typed value. */
export function createContextKey<T>(name: string): ContextKey<T> {
  return Object.freeze({ name });
}

/**
 * An immutable bag of per-request values, the counterpart of Go's
 * `context.Context`. `with` returns a new context; the old one is unchanged, so
 * a context handed to other code cannot be altered behind its back.
 */
export class Context {
  static readonly empty: Context = new Context(undefined, undefined, undefined);

  readonly #parent: Context | undefined;
  readonly #key: ContextKey<unknown> | undefined;
  readonly #value: unknown;

  private constructor(
    parent: Context | undefined,
    key: ContextKey<unknown> | undefined,
    value: unknown,
  ) {
    this.#parent = parent;
    this.#key = key;
    this.#value = value;
  }

  /** A new context holding `value` under `key`, shadowing any earlier value. */
  with<T>(key: ContextKey<T>, value: T): Context {
    return new Context(this, key as ContextKey<unknown>, value);
  }

  get<T>(key: ContextKey<T>): T | undefined {
    // A short linked list: a request carries a handful of values.
    for (let node: Context | undefined = this; node; node = node.#parent) {
      if (node.#key === key) return node.#value as T;
    }
    return undefined;
  }

  has(key: ContextKey<unknown>): boolean {
    for (let node: Context | undefined = this; node; node = node.#parent) {
      if (node.#key === key) return true;
    }
    return false;
  }
}

/** Anything a context can be read from: a `Request`, a `Context`, or a framework object an adapter bound. */
export type ContextSource = Request | Context | object;

// Keyed weakly: a context lives exactly as long as the request object it belongs to.
// Each target gets one mutable slot, so rebinding (several times per request) is a
// property write rather than another WeakMap insertion.
const bindings = new WeakMap<object, { context: Context }>();

/** Binds `context` to `target` (a `Request`, or an adapter's native request object). */
export function bindContext(target: object, context: Context): void {
  const slot = bindings.get(target);
  if (slot === undefined) bindings.set(target, { context });
  else slot.context = context;
}

/**
 * The context bound to `source`, or `undefined` when nothing was bound. A Hono
 * `Context` (`c`) is read through its raw request, so `mustAuthentication(c)`
 * works behind `newHandler(app.fetch)` without an adapter.
 */
export function boundContext(source: ContextSource): Context | undefined {
  if (source instanceof Context) return source;
  const bound = bindings.get(source);
  if (bound !== undefined) return bound.context;
  const raw = (source as { req?: { raw?: unknown } }).req?.raw;
  return typeof raw === "object" && raw !== null ? bindings.get(raw)?.context : undefined;
}

/** The context bound to `source`, or the empty context. */
export function contextFrom(source: ContextSource): Context {
  return boundContext(source) ?? Context.empty;
}

/** Binds `contextFrom(request).with(key, value)` to `request` and returns the new context. */
export function bindValue<T>(request: object, key: ContextKey<T>, value: T): Context {
  const slot = bindings.get(request);
  const next = (slot?.context ?? Context.empty).with(key, value);
  if (slot === undefined) bindings.set(request, { context: next });
  else slot.context = next;
  return next;
}
