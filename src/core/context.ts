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

// Each target gets one mutable slot, so rebinding (several times per request) is
// a field write. The slot is a private field stamped onto the target (a base class
// constructor that returns the target lets a subclass add its fields to it): no code
// can see, copy, replace or forge it, it is never inherited, and adding it costs a
// field store where `Object.defineProperty` costs a runtime call. A WeakMap insertion
// per request costs more in garbage collection (ephemeron tables) under load, so the
// WeakMap is kept for targets that cannot take the field.
const fallback = new WeakMap<object, ContextSlot>();

class ContextSlot {
  #context: Context;

  constructor(context: Context) {
    this.#context = context;
  }

  get context(): Context {
    return this.#context;
  }

  set context(context: Context) {
    this.#context = context;
  }

  static of(target: object): ContextSlot | undefined {
    return Holder.slotOf(target) ?? fallback.get(target);
  }

  static attach(target: object, context: Context): void {
    const slot = new ContextSlot(context);
    if (!Holder.hold(target, slot)) fallback.set(target, slot);
  }
}

/** Lets `Holder`'s constructor stamp its private field onto any object. */
class Stamp {
  constructor(target: object) {
    // biome-ignore lint/correctness/noConstructorReturn: returning the target is what stamps it.
    return target;
  }
}

class Holder extends Stamp {
  readonly #slot: ContextSlot;

  private constructor(target: object, slot: ContextSlot) {
    super(target);
    this.#slot = slot;
  }

  static slotOf(target: object): ContextSlot | undefined {
    if ((typeof target !== "object" || target === null) && typeof target !== "function")
      return undefined;
    return #slot in target ? (target as Holder).#slot : undefined;
  }

  /** Stamps `slot` onto `target`; false when the runtime refuses (a non-extensible object, say). */
  static hold(target: object, slot: ContextSlot): boolean {
    try {
      new Holder(target, slot);
      return true;
    } catch {
      return false;
    }
  }
}

/** Binds `context` to `target` (a `Request`, or an adapter's native request object). */
export function bindContext(target: object, context: Context): void {
  const slot = ContextSlot.of(target);
  if (slot === undefined) ContextSlot.attach(target, context);
  else slot.context = context;
}

/**
 * The context bound to `source`, or `undefined` when nothing was bound. A Hono
 * `Context` (`c`) is read through its raw request, so `mustAuthentication(c)`
 * works behind `newHandler(app.fetch)` without an adapter.
 */
export function boundContext(source: ContextSource): Context | undefined {
  if (source instanceof Context) return source;
  const bound = ContextSlot.of(source);
  if (bound !== undefined) return bound.context;
  const raw = (source as { req?: { raw?: unknown } }).req?.raw;
  return typeof raw === "object" && raw !== null ? ContextSlot.of(raw)?.context : undefined;
}

/** The context bound to `source`, or the empty context. */
export function contextFrom(source: ContextSource): Context {
  return boundContext(source) ?? Context.empty;
}

/** Binds `contextFrom(request).with(key, value)` to `request` and returns the new context. */
export function bindValue<T>(request: object, key: ContextKey<T>, value: T): Context {
  const slot = ContextSlot.of(request);
  const next = (slot?.context ?? Context.empty).with(key, value);
  if (slot === undefined) ContextSlot.attach(request, next);
  else slot.context = next;
  return next;
}
