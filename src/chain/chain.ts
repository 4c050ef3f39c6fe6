import { type FetchHandler, type Handler, type Middleware, toHandler } from "../core/handler.ts";

/**
 * An ordered list of middleware, outermost first: the counterpart of Go's
 * `middleware.Chain`. Immutable; `append` returns a new chain.
 */
export class Chain {
  readonly #legs: readonly Middleware[];

  constructor(...legs: Middleware[]) {
    for (const leg of legs) {
      if (typeof leg !== "function")
        throw new TypeError("every chain leg must be a middleware function");
    }
    this.#legs = Object.freeze([...legs]);
  }

  get legs(): readonly Middleware[] {
    return this.#legs;
  }

  append(...legs: Middleware[]): Chain {
    return new Chain(...this.#legs, ...legs);
  }

  /**
   * Wraps `handler` in every leg (Go's `Chain.Then`); the result is an ordinary
   * `Handler`. Not named `then`: a class with a `then` method is a thenable, and
   * `await`ing a chain (from an async factory, say) would never settle.
   */
  wrap(handler: FetchHandler): Handler {
    let next = toHandler(handler);
    for (let i = this.#legs.length - 1; i >= 0; i--) next = (this.#legs[i] as Middleware)(next);
    return next;
  }

  /** The whole chain as one `Middleware`, for adapters and for nesting chains. */
  get middleware(): Middleware {
    return (next) => this.wrap(next);
  }
}
