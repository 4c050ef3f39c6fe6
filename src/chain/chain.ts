import { forwardedAnswer, globalAnswersAreOwn, settleAnswer } from "../core/forwarded-answer.ts";
import {
  composeLegs,
  directLeg,
  type FetchHandler,
  type Handler,
  type Middleware,
  onAnswer,
  promising,
} from "../core/handler.ts";

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
    this.#middleware = directLeg((next) => composeLegs(this.#legs, next));
  }

  readonly #middleware: Middleware;

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
    // The legs edit the handler's answer through a forwarded answer, and the edits land on it
    // once, on the way out (see `forwardedAnswer`); unless answers are the library's own already.
    let forwarding: FetchHandler | undefined;
    let direct: FetchHandler | undefined;
    return promising((request, ...rest) => {
      if (globalAnswersAreOwn()) {
        direct ??= composeLegs(this.#legs, handler);
        return direct(request, ...rest);
      }
      forwarding ??= composeLegs(this.#legs, (inner, ...extra) =>
        onAnswer(handler(inner, ...extra), forwardedAnswer),
      );
      return onAnswer(forwarding(request, ...rest), settleAnswer);
    });
  }

  /** The whole chain as one `Middleware`, for adapters and for nesting chains. */
  get middleware(): Middleware {
    return this.#middleware;
  }
}
