/**
 * Node's own HTTP server: `nodeListener` runs a chain before a `node:http` listener,
 * `serveFetch` serves a Fetch handler with bounded timeouts, and `toNodeListener` mounts one in a
 * server of yours. `nodeClientMetadataTransport` resolves and fetches client
 * metadata documents for `portcullis/oauth2`, connecting only to the address
 * its guard checked.
 *
 * Needs no peer: Node's own `node:http`.
 *
 * @module portcullis/adapters/node
 */
import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from "node:http";
import type { Chain } from "../../chain/index.ts";
import { PEER_ADDRESS } from "../../core/client-address.ts";
import { bindValue } from "../../core/context.ts";
import { InvalidOptionsError } from "../../core/errors.ts";
import type { FetchHandler, Middleware } from "../../core/handler.ts";
import { checkAdapterOptions } from "../../core/options.ts";
import { isResponse } from "../../core/pass-through.ts";
import { problemResponse, reportError, unreadableBodyResponse } from "../../core/problem.ts";
import { isRequestBodyFailure } from "./engine/body-failure.ts";
import { type AdapterOptions, type ChainOutcome, chainDecider } from "./engine/chain-runner.ts";
import { installLightResponses } from "./engine/light-response.ts";
import { buildRequest } from "./engine/request.ts";
import {
  applyHeaders,
  closeAfterEarlyError,
  writeResponse,
  writeResponseNow,
} from "./engine/response.ts";

export {
  type NodeClientMetadataTransport,
  type NodeClientMetadataTransportOptions,
  nodeClientMetadataTransport,
} from "./client-metadata-transport.ts";
export { BodyUnavailableError } from "./engine/body-tap.ts";
export {
  type AdapterOptions,
  type ChainOutcome,
  type ChainRunner,
  chainRunner,
} from "./engine/chain-runner.ts";
export { applyHeaders, writeResponse } from "./engine/response.ts";
export { createLingeringServer } from "./lingering-server.ts";

/** A `node:http` request listener, sync or async. */
export type NodeListener = (req: IncomingMessage, res: ServerResponse) => unknown;

/**
 * Wraps any `node:http` request listener (a hand-written one, or an app object
 * such as Express's) in a Portcullis chain. The chain runs first for every
 * request; when it answers, `listener` never runs. When it passes, the legs'
 * headers are on `res`, the context is bound to `req` (`mustAuthentication(req)`
 * works), the body is untouched for the listener, and `listener` runs once.
 */
export function nodeListener(
  chain: Middleware | Chain,
  listener: NodeListener,
  options: AdapterOptions = {},
): RequestListener {
  if (typeof listener !== "function") throw new TypeError("nodeListener needs a request listener");
  checkAdapterOptions("nodeListener", options);
  const decide = chainDecider(chain, options);
  const onError = (error: unknown, request: Request | undefined) =>
    reportError(options.onError, error, request);
  const fail = (res: ServerResponse, error: unknown) => {
    onError(error, undefined);
    failResponse(res);
  };
  // The listener runs within the same call when the chain answered within it: no promise of
  // the adapter's own for a request that passes.
  const proceed = (req: IncomingMessage, res: ServerResponse, outcome: ChainOutcome): void => {
    if (!outcome.passed) {
      writeResponse(res, outcome.response, req.method).catch((error) => fail(res, error));
      return;
    }
    applyHeaders(res, outcome.headers);
    let ran: unknown;
    try {
      ran = listener(req, res);
    } catch (error) {
      listenerFailed(req, res, error);
      return;
    }
    if (typeof (ran as PromiseLike<unknown> | undefined)?.then === "function")
      Promise.resolve(ran).catch((error) => listenerFailed(req, res, error));
  };
  const listenerFailed = (req: IncomingMessage, res: ServerResponse, error: unknown) => {
    if (isRequestBodyFailure(req, error)) unreadableBody(req, res);
    else fail(res, error);
  };
  return (req, res) => {
    let outcome: ChainOutcome | Promise<ChainOutcome>;
    try {
      outcome = decide(req, res, req.url ?? "", NO_TARGETS);
      if (!(outcome instanceof Promise)) {
        proceed(req, res, outcome);
        return;
      }
    } catch (error) {
      fail(res, error);
      return;
    }
    outcome.then(
      (decided) => {
        try {
          proceed(req, res, decided);
        } catch (error) {
          fail(res, error);
        }
      },
      (error) => fail(res, error),
    );
  };
}

const NO_TARGETS: readonly object[] = [];

/**
 * The client broke off or garbled the body the app was reading: a 400 when
 * someone is left to read it, else a quiet close; nothing to report.
 */
function unreadableBody(req: IncomingMessage, res: ServerResponse): void {
  if (res.headersSent || res.destroyed || req.socket?.destroyed !== false) {
    res.destroy();
    return;
  }
  closeAfterEarlyError(req, res, 400);
  writeResponse(res, unreadableBodyResponse(), req.method).catch(() => res.destroy());
}

/** A bare 500, or a cut connection when the head is already out. */
function failResponse(res: ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  writeResponse(res, problemResponse(500), undefined).catch(() => res.destroy());
}

/**
 * Serves a Fetch handler (`newHandler(app.fetch, …)`, a Hono app's `fetch`)
 * on `node:http`: the Fetch `Request` gets the headers, the method, a lazy
 * body and `scheme://host` plus the request target as its URL; the socket
 * peer is bound as `PEER_ADDRESS`. The handler routes on `request.url`, so the
 * raw path is not bound: the chain decides on the URL the handler routes on.
 * The response body is streamed with backpressure. The handler also receives
 * `{ incoming, outgoing }`, as with `@hono/node-server`.
 */
export function toNodeListener(
  handler: FetchHandler,
  options: FetchListenerOptions = {},
): RequestListener {
  if (typeof handler !== "function") throw new TypeError("toNodeListener needs a Fetch handler");
  checkAdapterOptions("toNodeListener", options, ["lightResponses"]);
  if (options.lightResponses !== undefined && typeof options.lightResponses !== "boolean")
    throw new InvalidOptionsError("toNodeListener: lightResponses must be true or false");
  if (options.lightResponses === true) installLightResponses();
  const onError = (error: unknown, request: Request | undefined) =>
    reportError(options.onError, error, request);
  return (req, res) => {
    const built = buildRequest(req, req.url ?? "", false, { response: res });
    if (built === undefined) {
      writeResponse(
        res,
        problemResponse(400, { detail: "The request target or host is not acceptable." }),
        req.method,
      ).catch(() => res.destroy());
      return;
    }
    const peer = req.socket?.remoteAddress;
    if (peer !== undefined) bindValue(built.request, PEER_ADDRESS, peer);
    // Called at once, and a Response answered at once is written at once: no promise in between.
    let result: Response | Promise<Response>;
    try {
      result = handler(built.request, { incoming: req, outgoing: res });
    } catch (error) {
      failed(req, res, built, error, onError);
      return;
    }
    if (isResponse(result)) answered(req, res, built, result, onError);
    else
      Promise.resolve(result).then(
        (response) => answered(req, res, built, response, onError),
        (error) => failed(req, res, built, error, onError),
      );
  };
}

type Built = NonNullable<ReturnType<typeof buildRequest>>;
type OnError = (error: unknown, request: Request | undefined) => void;

/** Writes the handler's answer; the body tap is let go once it is out. */
function answered(
  req: IncomingMessage,
  res: ServerResponse,
  built: Built,
  response: Response,
  onError: OnError,
): void {
  if (!isResponse(response)) {
    failed(req, res, built, new TypeError("the handler answered a non-Response"), onError);
    return;
  }
  try {
    closeAfterEarlyError(req, res, response.status);
    settle(res, built, writeResponseNow(res, response, req.method), (error) =>
      onError(error, built.request),
    );
  } catch {
    res.destroy();
    built.tap?.discard();
  }
}

/** Answers a handler's throw: 400 for a body the client broke off, else a reported 500. */
function failed(
  req: IncomingMessage,
  res: ServerResponse,
  built: Built,
  error: unknown,
  onError: OnError,
): void {
  if (isRequestBodyFailure(req, error)) {
    // The client broke off or garbled its body: nothing to report.
    closeAfterEarlyError(req, res, 400);
    settle(res, built, writeResponse(res, unreadableBodyResponse(), req.method));
    return;
  }
  onError(error, built.request);
  failResponse(res);
  built.tap?.discard();
}

function settle(
  res: ServerResponse,
  built: Built,
  written: Promise<void> | undefined,
  report?: (error: unknown) => void,
): void {
  if (written === undefined) built.tap?.discard();
  else
    written
      .finally(() => built.tap?.discard())
      .catch((error) => {
        res.destroy();
        report?.(error); // the handler's body failed half-way: its operator should hear why
      });
}

/**
 * Options of `toNodeListener` (and of `serveFetch`).
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { toNodeListener } from "portcullis/adapters/node";
 *
 * createServer(toNodeListener(handler, { lightResponses: true })).listen(8080);
 * ```
 */
export interface FetchListenerOptions extends Pick<AdapterOptions, "onError"> {
  /**
   * Makes `globalThis.Response` a light constructor for the whole process, as
   * `@hono/node-server` does by default: an answer with a string, bytes or no
   * body is then a plain object until something needs its stream, instead of
   * the runtime's byte stream built for every body (on Node 20 that costs
   * about as much as a whole bare request). `instanceof Response`, `clone()`,
   * the body methods and `new Response(r.body, r)` keep working; answers of
   * `fetch()` and `Response.json()` stay the runtime's own. It cannot be
   * undone while the process runs, and it does nothing on a runtime whose
   * `Response` keeps its state in private fields.
   *
   * @default false
   */
  readonly lightResponses?: boolean;
}

/**
 * Options of `serveFetch`.
 *
 * @example
 * ```ts
 * import { newHandler } from "portcullis";
 * import { serveFetch } from "portcullis/adapters/node";
 *
 * const server = await serveFetch(newHandler(app.fetch, security), {
 *   port: 8080,
 *   hostname: "0.0.0.0", // reachable from other machines: put it behind your proxy
 *   requestTimeout: 15_000,
 * });
 * ```
 */
export interface ServeOptions extends FetchListenerOptions {
  /**
   * As for `toNodeListener`, but on by default: `serveFetch` owns the
   * process's server, as `@hono/node-server`'s `serve()` does, which makes the
   * same choice. Pass `false` when something else in the process must see the
   * runtime's own `Response` constructor.
   *
   * @default true
   */
  readonly lightResponses?: boolean;
  /**
   * The port to listen on; `0` picks a free one.
   *
   * @default 3000
   */
  readonly port?: number;
  /**
   * The address to listen on.
   *
   * @default "127.0.0.1" (reachable from this machine only)
   */
  readonly hostname?: string;
  /**
   * Longest wait for a request's complete headers, in ms (slowloris).
   *
   * @default 10_000
   */
  readonly headersTimeout?: number;
  /**
   * Longest wait for a whole request, body included, in ms (slow bodies).
   *
   * @default 30_000
   */
  readonly requestTimeout?: number;
  /**
   * How long an idle kept-alive connection stays open, in ms.
   *
   * @default 5_000
   */
  readonly keepAliveTimeout?: number;
}

const SERVE_DEFAULTS = {
  port: 3000,
  hostname: "127.0.0.1",
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 5_000,
} as const;

/**
 * Starts a `node:http` server for a Fetch handler; resolves once it listens.
 * The server cuts slow headers, slow bodies and idle connections (see
 * `ServeOptions`), checking every second rather than Node's default 30 s.
 */
export function serveFetch(handler: FetchHandler, options: ServeOptions = {}): Promise<Server> {
  checkAdapterOptions("serveFetch", options, ["lightResponses", ...Object.keys(SERVE_DEFAULTS)]);
  const settings = { ...SERVE_DEFAULTS, ...options };
  for (const name of ["headersTimeout", "requestTimeout", "keepAliveTimeout"] as const) {
    if (!Number.isSafeInteger(settings[name]) || settings[name] < 1)
      throw new InvalidOptionsError(`serveFetch: ${name} must be a positive number of ms`);
  }
  if (settings.headersTimeout > settings.requestTimeout)
    throw new InvalidOptionsError("serveFetch: headersTimeout cannot exceed requestTimeout");
  const server = createServer(
    {
      headersTimeout: settings.headersTimeout,
      requestTimeout: settings.requestTimeout,
      keepAliveTimeout: settings.keepAliveTimeout,
      connectionsCheckingInterval: Math.min(1000, settings.headersTimeout),
    },
    toNodeListener(handler, {
      ...(options.onError === undefined ? {} : { onError: options.onError }),
      lightResponses: options.lightResponses ?? true,
    }),
  );
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(settings.port, settings.hostname, () => {
      server.removeListener("error", reject);
      resolve(server);
    });
  });
}
