import { checkedName, checkedValue, FieldList } from "../../../core/field-list.ts";
import { ANSWER_FIELDS } from "../../../core/pass-through.ts";

/**
 * A `Response` for the common answer, a status with a string, bytes or no
 * body, that costs a plain object: the runtime's constructor builds a byte
 * stream for every body, which on Node 20 costs about as much as the whole of
 * a bare `node:http` request. Status, status text, `ok` and `headers` are
 * answered from what the constructor was given; anything else (the body
 * stream, `clone()`, `text()`, `new Response(r.body, r)`) builds the real one
 * on first need. Every other body is handed to the runtime's constructor.
 */
const NativeResponse = globalThis.Response;

const STATE = Symbol("portcullis.lightResponse");

interface LightState {
  readonly body: string | Uint8Array | null;
  readonly status: number;
  readonly statusText: string;
  /** Made on first read; until then the checked fields are in `pairs`. */
  headers: FieldList | undefined;
  /** Checked names (lower-case) and values, alternating, when `headers` is not made yet. */
  readonly pairs: readonly string[];
  real: Response | undefined;
}

type Light = Response & { [STATE]?: LightState };

// Status codes whose answers carry no body.
const NULL_BODY = new Set([101, 103, 204, 205, 304]);
const REASON_PHRASE = /^[\t\x20-\x7e\x80-\xff]*$/;

function realOf(state: LightState): Response {
  if (state.real === undefined) {
    state.real = new NativeResponse(state.body as BodyInit | null, {
      status: state.status,
      statusText: state.statusText,
      headers: headersOf(state),
    });
  }
  return state.real;
}

function headersOf(state: LightState): FieldList {
  if (state.headers === undefined) {
    const list = new FieldList();
    const { pairs } = state;
    for (let i = 0; i < pairs.length; i += 2)
      list.append(pairs[i] as string, pairs[i + 1] as string);
    state.headers = list;
  }
  return state.headers;
}

function stateOf(response: Light): LightState {
  const state = response[STATE];
  if (state === undefined) throw new TypeError("Illegal invocation");
  return state;
}

/**
 * The light state of `response`, when it is a light response nobody made real
 * yet: its fields are `headers` when someone read them, else `pairs` (checked
 * lower-case names and values, alternating, no `Set-Cookie` among them).
 */
export function lightState(response: Response):
  | {
      body: string | Uint8Array | null;
      // Typed as Headers: the declarations must compile with Node's types alone, no DOM lib.
      headers: Headers | undefined;
      pairs: readonly string[];
      status: number;
      statusText: string;
    }
  | undefined {
  const state = (response as Light)[STATE];
  return state === undefined || state.real !== undefined ? undefined : state;
}

/** The headers a light response answers with (its own list, also once it was made real). */
export function lightHeaders(response: Response): Headers | undefined {
  const state = (response as Light)[STATE];
  return state === undefined ? undefined : headersOf(state);
}

function LightResponse(this: unknown, body?: BodyInit | null, init?: ResponseInit): Response {
  if (new.target === undefined) throw new TypeError("Response constructor: 'new' is required");
  const light =
    body === undefined || body === null || typeof body === "string" || body instanceof Uint8Array;
  if (!light) return new NativeResponse(body, init);
  const status = init?.status ?? 200;
  if (!Number.isInteger(status) || status < 200 || status > 599)
    throw new RangeError(`Response constructor: invalid status ${String(status)}`);
  const statusText = init?.statusText === undefined ? "" : String(init.statusText);
  if (!REASON_PHRASE.test(statusText))
    throw new TypeError("Response constructor: invalid statusText");
  const content = body ?? null;
  if (content !== null && NULL_BODY.has(status))
    throw new TypeError("Response constructor: a null body status cannot carry a body");
  // A record, the usual init, is checked into plain pairs; the list is made when read.
  let pairs = checkedPairs(init?.headers);
  let headers: FieldList | undefined;
  if (pairs === undefined) {
    headers = new FieldList(headerPairs(init?.headers));
    if (typeof content === "string" && !headers.has("content-type"))
      headers.set("content-type", "text/plain;charset=UTF-8");
    pairs = [];
  } else if (typeof content === "string" && !namesField(pairs, "content-type")) {
    pairs.push("content-type", "text/plain;charset=UTF-8");
  }
  // `new` made `this` from `new.target.prototype` already.
  (this as Light)[STATE] = {
    // Bytes are copied, as the runtime's constructor copies them.
    body: content instanceof Uint8Array ? content.slice() : content,
    status,
    statusText,
    headers,
    pairs,
    real: undefined,
  };
  return this as Light;
}

/**
 * The fields of a record init (or of none), names checked and lower-cased and
 * values checked as `Headers` would: alternating in one array, every name once.
 * `undefined` for any other init, or one naming a field twice or `Set-Cookie`.
 */
function checkedPairs(init: HeadersInit | undefined): string[] | undefined {
  if (init === undefined) return [];
  if (typeof init !== "object" || init === null || Object.getPrototypeOf(init) !== Object.prototype)
    return undefined;
  const pairs: string[] = [];
  for (const name in init) {
    if (!Object.hasOwn(init, name)) continue;
    const key = checkedName(name);
    if (key === "set-cookie" || namesField(pairs, key)) return undefined;
    pairs.push(key, checkedValue((init as Record<string, string>)[name] as string));
  }
  return pairs;
}

/** Whether alternating `pairs` name `key` (values are never compared). */
function namesField(pairs: readonly string[], key: string): boolean {
  for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === key) return true;
  return false;
}

function headerPairs(init: HeadersInit | undefined): Iterable<readonly [string, string]> {
  if (init === undefined) return [];
  if (init instanceof Headers) return init;
  if (Array.isArray(init) || Symbol.iterator in (init as object)) {
    const pairs: [string, string][] = [];
    for (const pair of init as Iterable<readonly string[]>) {
      if (pair.length !== 2) throw new TypeError("Headers constructor: expected name/value pairs");
      pairs.push([pair[0] as string, pair[1] as string]);
    }
    return pairs;
  }
  return Object.entries(init as Record<string, string>);
}

const SLOTS = Object.getOwnPropertySymbols(new NativeResponse(null));

LightResponse.prototype = Object.create(NativeResponse.prototype, {
  constructor: { value: LightResponse, writable: true, configurable: true },
  status: {
    get(this: Light) {
      const state = stateOf(this);
      return state.status;
    },
  },
  statusText: {
    get(this: Light) {
      return stateOf(this).statusText;
    },
  },
  ok: {
    get(this: Light) {
      const { status } = stateOf(this);
      return status >= 200 && status < 300;
    },
  },
  headers: {
    get(this: Light) {
      return headersOf(stateOf(this));
    },
  },
  // Marks an answer of the library's own: legs recognise it without the runtime's `instanceof`,
  // and edit its fields in place.
  [ANSWER_FIELDS]: {
    get(this: Light) {
      return headersOf(stateOf(this));
    },
  },
  ...Object.fromEntries(
    SLOTS.map((slot) => [
      slot,
      {
        get(this: Light) {
          return (realOf(stateOf(this)) as unknown as Record<symbol, unknown>)[slot];
        },
      },
    ]),
  ),
}) as object;
Object.setPrototypeOf(LightResponse, NativeResponse);
// Answers from the runtime's own constructor (`fetch()`, `Response.json()`) are Responses too.
Object.defineProperty(LightResponse, Symbol.hasInstance, {
  value: (value: unknown) => value instanceof NativeResponse,
});

/** The light `Response` constructor, shaped as the runtime's. */
export const LightResponseClass = LightResponse as unknown as typeof Response;

/** True when this runtime lets a light response stand in for a real one (its state is in symbol slots). */
export const LIGHT_RESPONSES: boolean = probe();

function probe(): boolean {
  if (SLOTS.length === 0) return false;
  try {
    const light = new LightResponseClass("probe", { status: 201, headers: { "x-probe": "1" } });
    const copy = new NativeResponse(light.body, light);
    return (
      light instanceof NativeResponse &&
      copy.status === 201 &&
      copy.headers.get("x-probe") === "1" &&
      light.clone().status === 201 &&
      light.bodyUsed === false
    );
  } catch {
    return false;
  }
}

let installed = false;

/**
 * Makes `globalThis.Response` the light constructor, for the whole process and
 * for good (responses made before or after stay usable either way). Does
 * nothing where the runtime does not allow it; answers whether it is installed.
 */
export function installLightResponses(): boolean {
  if (installed) return true;
  if (!LIGHT_RESPONSES || globalThis.Response !== NativeResponse) return false;
  globalThis.Response = LightResponseClass;
  installed = true;
  return true;
}
