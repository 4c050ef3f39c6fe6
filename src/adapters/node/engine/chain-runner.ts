import type { IncomingMessage, ServerResponse } from "node:http";
import type { Chain } from "../../../chain/index.ts";
import { FRAMEWORK_TRUSTS_PROXY, PEER_ADDRESS } from "../../../core/client-address.ts";
import {
  bindContext,
  bindValue,
  boundContext,
  contextFrom,
  createContextKey,
} from "../../../core/context.ts";
import { composeLegs, type FetchHandler, type Middleware } from "../../../core/handler.ts";
import { checkAdapterOptions } from "../../../core/options.ts";
import { outboxOf, type ResponseOutbox, whenQueued } from "../../../core/outbox.ts";
import {
  isPassThrough,
  isResponse,
  passThroughResponse,
  toMiddleware,
} from "../../../core/pass-through.ts";
import { RAW_PATH, ROUTED_PATHS } from "../../../core/path.ts";
import { internalErrorResponse, problemResponse } from "../../../core/problem.ts";
import { warnOnce } from "../../../core/warning.ts";
import type { BodyTap } from "./body-tap.ts";
import { buildRequest } from "./request.ts";
import { closeAfterEarlyError, drainOutboxOnHead } from "./response.ts";

/**
 * Options every Node framework adapter takes.
 *
 * @example
 * ```ts
 * import express from "express";
 * import { expressMiddleware } from "portcullis/adapters/express";
 *
 * const app = express();
 * app.use(expressMiddleware(chain, { onError: (error) => logger.error(error) }));
 * ```
 */
export interface AdapterOptions {
  /**
   * Told about anything the chain (or the adapter) throws; the client gets a
   * bare 500 and the framework's handler does not run.
   *
   * @default console.error
   */
  readonly onError?: (error: unknown, request: Request | undefined) => void;
}

/** What the chain decided for one request. */
export type ChainOutcome =
  | {
      /** Every leg called `next`: the framework goes on. */
      readonly passed: true;
      /** Headers the legs added, to copy onto the framework's response. */
      readonly headers: Headers;
      /** The request the innermost leg handed on; its context is bound to the native objects. */
      readonly request: Request;
    }
  | {
      /** A leg answered (a denial, a preflight, the login endpoint, a 500). */
      readonly passed: false;
      /** The answer to write; the framework must not go on. */
      readonly response: Response;
    };

/** Runs the chain for one native request; see `chainRunner`. */
export type ChainRunner = (
  message: IncomingMessage,
  res: ServerResponse,
  target: string,
  bindTo: readonly object[],
  /** The framework believes forwarding proxies (see `FRAMEWORK_TRUSTS_PROXY`). */
  frameworkTrustsProxy?: boolean,
  /** The target the router will route, when middleware before the chain rewrote it. */
  routedTarget?: string,
) => Promise<ChainOutcome>;

/**
 * The engine of the Node adapters. For each request it builds a Fetch
 * `Request` (headers, the raw target's path bound as `RAW_PATH`, the socket
 * peer as `PEER_ADDRESS`, a lazy body) and runs the chain down to an innermost
 * handler that records the pass and answers at once with an empty
 * pass-through response, which the legs decorate.
 *
 * - passed (the innermost handler ran and the legs handed its answer back):
 *   the body bytes the chain read are put back, the context is bound to the
 *   native request and to `bindTo`, late headers (`session.save()` in a route)
 *   are drained when the head is written, and `headers` says what to copy.
 *   The route runs after the copy, so it has the last word on every header.
 * - otherwise: `response` is the chain's answer and the framework must stop.
 *
 * The decision rests on the pass flag and that answer only, never on the
 * native response's status or `headersSent`. A throw anywhere ends in a bare
 * 500 answer, never in the framework going on.
 *
 * A context already bound to `message` (an adapter further out ran the chain)
 * is carried in, so per-route guards see the principal.
 */
export function chainRunner(
  middleware: Middleware | Chain,
  options: AdapterOptions = {},
): ChainRunner {
  const decide = chainDecider(middleware, options);
  return (...args) => {
    try {
      const outcome = decide(...args);
      return outcome instanceof Promise ? outcome : Promise.resolve(outcome);
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

/** `chainRunner`'s decision, within the call when every leg answered within it. */
export type ChainDecider = (
  ...args: Parameters<ChainRunner>
) => ChainOutcome | Promise<ChainOutcome>;

/**
 * The engine behind `chainRunner`, for the library's own adapters: the outcome comes within the
 * call when the chain answered within it (memory stores, no body to read), so a request that
 * passes costs no promise of the adapter's own. It may throw; the adapters answer a 500.
 */
export function chainDecider(
  middleware: Middleware | Chain,
  options: AdapterOptions = {},
): ChainDecider {
  checkAdapterOptions("chainRunner", options);
  // Built once: wrapping every leg per request cost more than several legs' work. The innermost
  // handler records the pass on the request's own exchange, the one object handed down as the
  // runtime's extra argument; a leg that hands on neither it nor the context gets a 500.
  const chain = composeLegs([toMiddleware(middleware)], Exchange.innermost);
  const onError = options.onError;
  const decide: ChainDecider = (
    message,
    res,
    target,
    bindTo,
    frameworkTrustsProxy,
    routedTarget,
  ) => {
    let built: ReturnType<typeof buildRequest>;
    try {
      built = buildRequest(message, target, true, { response: res });
    } catch (error) {
      return failed(onError, message, res, error, undefined);
    }
    if (built === undefined) {
      return refused(
        message,
        res,
        problemResponse(400, { detail: "The request target or host is not acceptable." }),
      );
    }
    const { request, tap } = built;
    if (tap !== undefined && bodyReadBefore(message)) {
      warnOnce(
        "PORTCULLIS_BODY_ALREADY_READ",
        "a body parser read the request body before the chain, so the login and CSRF legs find it empty; mount body parsers (express.json(), express.urlencoded(), koa-bodyparser) after the chain",
      );
    }
    const seed = boundContext(message);
    if (seed !== undefined) {
      bindContext(request, seed);
    } else {
      bindValue(request, RAW_PATH, built.rawPath);
      const peer = message.socket?.remoteAddress;
      if (peer !== undefined) bindValue(request, PEER_ADDRESS, peer);
      if (frameworkTrustsProxy === true) bindValue(request, FRAMEWORK_TRUSTS_PROXY, true);
      if (routedTarget !== undefined) bindValue(request, ROUTED_PATHS, [rawPathOf(routedTarget)]);
    }
    // Made before the chain runs, so a leg that queues a header once the route runs
    // (`session.save()`) finds this one rather than binding a new one nobody drains.
    const outbox = outboxOf(request);
    const exchange = new Exchange(message, res, request, outbox, tap, bindTo, onError);
    bindValue(request, EXCHANGE, exchange);

    let answer: Response | Promise<Response>;
    try {
      answer = chain(request, exchange);
    } catch (error) {
      return exchange.failed(error);
    }
    if (isResponse(answer)) return exchange.conclude(answer);
    return Promise.resolve(answer).then(
      (response) => exchange.conclude(response),
      (error: unknown) => exchange.failed(error),
    );
  };
  return decide;
}

/** An error the chain answered before the body was read closes the connection. */
function refused(message: IncomingMessage, res: ServerResponse, response: Response): ChainOutcome {
  closeAfterEarlyError(message, res, response.status);
  return { passed: false, response };
}

function failed(
  onError: AdapterOptions["onError"],
  message: IncomingMessage,
  res: ServerResponse,
  error: unknown,
  request: Request | undefined,
): ChainOutcome {
  return refused(message, res, internalErrorResponse(onError, error, request));
}

/**
 * One request's run of the chain: the native pair the legs get after the request (as
 * `@hono/node-server` passes it), and what the adapter needs to conclude once the chain answers.
 */
class Exchange {
  // Only `incoming` and `outgoing` are for the legs; the rest is the adapter's own.
  #passedWith: Request | undefined = undefined;
  readonly #request: Request;
  readonly #outbox: ResponseOutbox;
  readonly #tap: BodyTap | undefined;
  readonly #bindTo: readonly object[];
  readonly #onError: AdapterOptions["onError"];

  constructor(
    readonly incoming: IncomingMessage,
    readonly outgoing: ServerResponse,
    request: Request,
    outbox: ResponseOutbox,
    tap: BodyTap | undefined,
    bindTo: readonly object[],
    onError: AdapterOptions["onError"],
  ) {
    this.#request = request;
    this.#outbox = outbox;
    this.#tap = tap;
    this.#bindTo = bindTo;
    this.#onError = onError;
  }

  /**
   * The chain's innermost handler: records the request the legs handed on, and answers the empty
   * pass-through answer for them to decorate. The exchange comes as the extra argument, or
   * through the context when a leg of someone else's dropped that argument.
   */
  static readonly innermost: FetchHandler = (downstream, extra?: unknown) => {
    const exchange = extra instanceof Exchange ? extra : contextFrom(downstream).get(EXCHANGE);
    if (exchange === undefined)
      throw new Error("portcullis: a leg handed on a request that lost its context");
    if (exchange.#passedWith !== undefined) throw new Error("portcullis: next was called twice");
    exchange.#passedWith = downstream;
    return passThroughResponse();
  };

  failed(error: unknown): ChainOutcome {
    this.#tap?.discard();
    return failed(this.#onError, this.incoming, this.outgoing, error, this.#request);
  }

  conclude(response: Response): ChainOutcome {
    const { incoming: message, outgoing: res } = this;
    const outbox = this.#outbox;
    const tap = this.#tap;
    const passedWith = this.#passedWith;
    if (passedWith !== undefined && isPassThrough(response)) {
      try {
        tap?.restore();
      } catch (error) {
        return this.failed(error);
      }
      if (tap?.touched) dumpUnreadBodyOnFinish(message, res);
      const context = contextFrom(passedWith);
      // Also for Express's requests, each with a hidden class of its own (it swaps their
      // prototype), where the field costs a new one: a WeakMap entry instead cost several
      // times that in garbage collection (ephemerons), measured on the Express benchmark.
      bindContext(message, context);
      for (const target of this.#bindTo) bindContext(target, context);
      // Wrapped only once a header is queued: a property added to a response whose prototype a
      // framework swapped (Express) costs a fresh hidden class, about a microsecond.
      whenQueued(outbox, () => {
        if (!res.headersSent) drainOutboxOnHead(res, outbox);
        else
          warnOnce(
            "PORTCULLIS_LATE_HEADER_DROPPED",
            "a leg queued a header (session.save() sets the session cookie) after the response head was written, so it was not sent; save the session before sending the response",
          );
      });
      return { passed: true, headers: response.headers, request: passedWith };
    }

    tap?.discard();
    if (!isResponse(response))
      return this.failed(new TypeError("the chain answered a non-Response"));
    return refused(message, res, outbox.drainIntoResponse(response));
  }
}

const EXCHANGE = createContextKey<Exchange>("portcullis.exchange");

/**
 * Node drains a body nobody read once the response is done, unless someone
 * started reading it; the chain did. Do what Node would have done, so a
 * kept-alive connection is not left stuck behind an unread body.
 */
function dumpUnreadBodyOnFinish(message: IncomingMessage, res: ServerResponse): void {
  res.once("finish", () => {
    if (!message.readableEnded && !message.destroyed && message.readableFlowing === null)
      message.resume();
  });
}

export type { BodyTap };

/** The path part of a request target (`/a/b?x` → `/a/b`). */
function rawPathOf(target: string): string {
  const end = target.search(/[?#]/);
  return end < 0 ? target : target.slice(0, end);
}

/** Whether something read the body before the chain: the stream is spent, or Express's body-parser ran. */
function bodyReadBefore(message: IncomingMessage): boolean {
  return message.readableEnded || (message as { _body?: unknown })._body === true;
}
