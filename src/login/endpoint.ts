import type { Middleware } from "../core/handler.ts";

let middlewareOf: (value: unknown) => Middleware | undefined;

/**
 * The login and logout endpoints as `login()` builds them. Deliberately not a
 * middleware: the only place it can be mounted is the chain's `login` option,
 * behind the session and CSRF legs, so a sign-in can never be forged from
 * another site by mounting it somewhere unguarded.
 */
export class LoginEndpoint {
  readonly #middleware: Middleware;

  /** @internal made by `login()` */
  constructor(middleware: Middleware) {
    this.#middleware = middleware;
    Object.freeze(this);
  }

  static {
    // The private field is the brand: an object merely given this prototype has none.
    middlewareOf = (value) =>
      typeof value === "object" && value !== null && #middleware in value
        ? (value as LoginEndpoint).#middleware
        : undefined;
  }
}

/** The endpoint's middleware, for the chain; `undefined` for anything `login()` did not build. */
export function loginMiddleware(value: unknown): Middleware | undefined {
  return middlewareOf(value);
}
