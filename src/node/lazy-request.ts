import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import type { BodyTap } from "./body-tap.ts";

/**
 * What a lazy request answers from Node's own data, and what it needs to
 * become a real `Request` when something else is asked of it.
 */
export interface LazySource {
  readonly url: string;
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  /** The body, read only when pulled; `undefined` for a request without one. */
  readonly tap: BodyTap | undefined;
  /** Aborts the request's `signal` when this response closes before it finished. */
  readonly response: ServerResponse | undefined;
}

interface LazyState {
  readonly source: LazySource;
  headers: Headers | undefined;
  real: Request | undefined;
}

const STATE = Symbol("portcullis.lazyRequest");

type Lazy = Request & { [STATE]: LazyState };

/** Header values as Fetch takes them: Node joins duplicates already, except `set-cookie`. */
export function fetchHeaders(headers: IncomingHttpHeaders): HeadersInit {
  for (const name in headers) {
    if (typeof headers[name] !== "string" || name.charCodeAt(0) === 0x3a)
      return headerPairs(headers);
  }
  return headers as Record<string, string>;
}

function headerPairs(headers: IncomingHttpHeaders): [string, string][] {
  const pairs: [string, string][] = [];
  for (const name in headers) {
    if (name.charCodeAt(0) === 0x3a) continue; // HTTP/2 pseudo-headers
    const value = headers[name];
    if (typeof value === "string") pairs.push([name, value]);
    else if (Array.isArray(value)) for (const item of value) pairs.push([name, item]);
  }
  return pairs;
}

/** The `RequestInit` of the real request; a body stream is made only here, once. */
export function requestInit(
  source: LazySource,
  headers: HeadersInit,
): RequestInit & { duplex?: "half" } {
  const init: RequestInit & { duplex?: "half" } = { method: source.method, headers };
  if (source.tap !== undefined) {
    init.body = source.tap.stream();
    init.duplex = "half";
  }
  const response = source.response;
  if (response !== undefined) {
    const controller = new AbortController();
    response.once("close", () => {
      if (!response.writableFinished) controller.abort(new Error("the client went away"));
    });
    init.signal = controller.signal;
  }
  return init;
}

function stateOf(request: Lazy): LazyState {
  return request[STATE];
}

/** Builds the real request once; from then on every slot reads from it. */
function materialize(request: Lazy): Request {
  const state = stateOf(request);
  if (state.real === undefined) {
    const headers = state.headers ?? fetchHeaders(state.source.headers);
    state.real = new Request(state.source.url, requestInit(state.source, headers));
  }
  return state.real;
}

// The runtime's Request keeps its state in symbol-keyed slots (undici 6, Node 20 and 22): a
// lazy request forwards those slots to its real one, so every inherited getter and method,
// `new Request(lazy)` and `fetch(lazy)` see a whole request. Where the state is in private
// fields (undici 7), a foreign object cannot pass for a Request, and requests are built eagerly.
const SLOTS = Object.getOwnPropertySymbols(new Request("http://localhost/"));

const LAZY_PROTOTYPE: object = Object.create(Request.prototype, {
  method: {
    get(this: Lazy) {
      return stateOf(this).source.method;
    },
  },
  url: {
    get(this: Lazy) {
      return stateOf(this).source.url;
    },
  },
  headers: {
    // One Headers object for the request's life: the real request is built from it.
    get(this: Lazy) {
      const state = stateOf(this);
      if (state.headers === undefined)
        state.headers = state.real?.headers ?? new Headers(fetchHeaders(state.source.headers));
      return state.headers;
    },
  },
  ...Object.fromEntries(
    SLOTS.map((slot) => [
      slot,
      {
        get(this: Lazy) {
          return (materialize(this) as unknown as Record<symbol, unknown>)[slot];
        },
      },
    ]),
  ),
});

/**
 * A `Request` that answers `method`, `url` and `headers` from Node's own data
 * and builds the real one only when anything else is touched (the body, the
 * signal, `clone()`, `new Request(r)`, `fetch(r)`). `instanceof Request` holds.
 */
export function lazyRequest(source: LazySource): Request {
  const request = Object.create(LAZY_PROTOTYPE) as Lazy;
  Object.defineProperty(request, STATE, { value: { source, headers: undefined, real: undefined } });
  return request;
}

/** True when this runtime's `Request` lets a lazy request stand in for a real one. */
export const LAZY_REQUESTS: boolean = probe();

function probe(): boolean {
  if (SLOTS.length === 0) return false;
  try {
    const lazy = lazyRequest({
      url: "http://localhost/probe?x=1",
      method: "PUT",
      headers: { "x-probe": "1" },
      tap: undefined,
      response: undefined,
    });
    const copy = new Request(lazy);
    const clone = lazy.clone();
    return (
      copy.url === lazy.url &&
      copy.method === "PUT" &&
      copy.headers.get("x-probe") === "1" &&
      clone.url === lazy.url &&
      lazy.signal instanceof AbortSignal &&
      lazy.bodyUsed === false
    );
  } catch {
    return false;
  }
}
