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
