import { isResponse } from "./pass-through.ts";

/**
 * The Fetch-API counterpart of Go's `http.Handler`. `rest` carries whatever the
 * runtime passes after the request (Workers' `env, ctx`, Bun's `server`, Deno's
 * `info`) and is handed on untouched.
 */
// biome-ignore lint/suspicious/noExplicitAny: runtimes pass differently typed extras; `unknown` would reject their handlers.
export type Handler = (request: Request, ...rest: any[]) => Promise<Response>;

/** A handler as frameworks write it: it may answer synchronously. */
// biome-ignore lint/suspicious/noExplicitAny: see Handler.
export type FetchHandler = (request: Request, ...rest: any[]) => Response | Promise<Response>;

/** The counterpart of Go's `func(http.Handler) http.Handler`: every chain leg and guard has this shape. */
export type Middleware = (next: Handler) => Handler;

/** Lifts a handler that may answer synchronously into a `Handler`. */
export function toHandler(handler: FetchHandler): Handler {
  return async (request, ...rest) => handler(request, ...rest);
}

/**
 * A leg as the library's own legs are written: its handler answers within the call when the next
 * one does, so a chain of them that reaches a handler answering at once costs no promise per leg.
 */
export type DirectLeg = (next: FetchHandler) => FetchHandler;

const DIRECT = Symbol("portcullis.directLeg");

/**
 * The `Middleware` of a direct leg: alone, its handler returns a promise as every `Handler`
 * does; inside a chain, `composeLegs` calls the direct form and skips the promise.
 */
export function directLeg(leg: DirectLeg): Middleware {
  const middleware: Middleware = (next) => toHandler(leg(next));
  Object.defineProperty(middleware, DIRECT, { value: leg });
  return middleware;
}

/**
 * Wraps `handler` in `legs`, outermost first. Direct legs hand answers on as they come; a leg of
 * someone else's gets a `next` that returns a promise, as the `Handler` contract says.
 */
export function composeLegs(legs: readonly Middleware[], handler: FetchHandler): FetchHandler {
  let next = handler;
  for (let i = legs.length - 1; i >= 0; i--) {
    const leg = legs[i] as Middleware;
    const direct = (leg as { [DIRECT]?: DirectLeg })[DIRECT];
    next = direct !== undefined ? direct(next) : leg(promising(next));
  }
  return next;
}

/** `handler` as a `Handler`: an answer given at once comes in a promise, a throw as a rejection. */
export function promising(handler: FetchHandler): Handler {
  return (request, ...rest) => {
    try {
      const answer = handler(request, ...rest);
      return answer instanceof Promise ? answer : Promise.resolve(answer);
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

/**
 * Calls `then` with the answer: within the call when it came at once, else once it settles;
 * `otherwise` (when given) with a rejection. A throw of `next` itself is the caller's to catch.
 */
export function onAnswer<T>(
  answer: Response | PromiseLike<Response>,
  then: (response: Response) => T | PromiseLike<T>,
  otherwise?: (error: unknown) => T | PromiseLike<T>,
): T | Promise<T> {
  // The answer first: within a chain of direct legs it is one, and the check is the cheaper.
  if (isResponse(answer)) return then(answer) as T | Promise<T>;
  if (answer instanceof Promise) return answer.then(then, otherwise);
  // A thenable of another kind, or not an answer at all: settled as a promise would be.
  return Promise.resolve(answer).then(then, otherwise);
}
