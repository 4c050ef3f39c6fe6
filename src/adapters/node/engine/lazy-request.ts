import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { FieldList } from "../../../core/field-list.ts";
import { URL_AS_SENT } from "../../../core/url-as-sent.ts";
import type { BodyTap } from "./body-tap.ts";

/**
 * What a lazy request answers from Node's own data, and what it needs to
 * become a real `Request` when something else is asked of it.
 */
export interface LazySource {
  /** The URL as sent; serialized as Fetch would on first read. */
  readonly target: string;
  readonly method: string;
  /** The header fields as Node parsed them. */
  readonly headers: IncomingHttpHeaders;
  /** The body, read only when pulled; `undefined` for a request without one. */
  readonly tap: BodyTap | undefined;
  /** Aborts the request's `signal` when this response closes before it finished. */
  readonly response: ServerResponse | undefined;
}

interface LazyState {
  readonly source: LazySource;
  url: string | undefined;
  fields: FieldList | undefined;
  real: Request | undefined;
}

const STATE = Symbol("portcullis.lazyRequest");

type Lazy = Request & { [STATE]?: LazyState };

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
  const state = request[STATE];
  if (state === undefined) throw new TypeError("Illegal invocation");
  return state;
}

function urlOf(state: LazyState): string {
  state.url ??= new URL(state.source.target).href;
  return state.url;
}

/** One Headers object for the request's life: the real request is built from it. */
function fieldsOf(state: LazyState): FieldList {
  state.fields ??= FieldList.parsed(state.source.headers);
  return state.fields;
}

/** Builds the real request once; from then on every slot reads from it. */
function materialize(request: Lazy): Request {
  const state = stateOf(request);
  if (state.real === undefined) {
    state.real = new Request(urlOf(state), requestInit(state.source, fieldsOf(state)));
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
      return urlOf(stateOf(this));
    },
  },
  headers: {
    get(this: Lazy) {
      return fieldsOf(stateOf(this));
    },
  },
  [URL_AS_SENT]: {
    get(this: Lazy) {
      const state = stateOf(this);
      return state.url ?? state.source.target;
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
  return new LazyRequest(source) as unknown as Request;
}

// A class, so that V8 gives every lazy request one shape and builds it fast.
class LazyRequest {
  readonly [STATE]: LazyState;
  constructor(source: LazySource) {
    this[STATE] = { source, url: undefined, fields: undefined, real: undefined };
  }
}
Object.setPrototypeOf(LazyRequest.prototype, LAZY_PROTOTYPE);

/** True when this runtime's `Request` lets a lazy request stand in for a real one. */
export const LAZY_REQUESTS: boolean = probe();

function probe(): boolean {
  if (SLOTS.length === 0) return false;
  try {
    const lazy = lazyRequest({
      target: "http://localhost/probe?x=1",
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
