import { FieldList } from "./field-list.ts";
import { ANSWER_FIELDS, isResponse } from "./pass-through.ts";
import { withHeaders } from "./response.ts";

/**
 * The downstream's answer as the legs see it, where one host owns both ends of the chain
 * (`Chain.wrap`, `newHandler`, `honoMiddleware`): status, body and the body methods are the
 * real answer's, and its header fields are a `FieldList` the legs read and edit at map cost.
 * The runtime's `Headers` costs over a thousand instructions per `has` or `set` on Node, and a
 * chain asks a dozen of each. `settleAnswer` writes the edits onto the real answer (a copy
 * sharing its body when its headers are immutable) before it leaves the chain. Anything else
 * (an answer of the library's own, a value that is no answer) is handed back as it is.
 */
export function forwardedAnswer(real: Response): Response {
  // The library's own answers (serveFetch's light ones, the pass-through) edit at map cost already.
  if (typeof real !== "object" || real === null || ANSWER_FIELDS in real || !isResponse(real))
    return real;
  return new ForwardedAnswer(real) as unknown as Response;
}

/** The answer to hand on: a forwarded answer's real one with the legs' edits, anything else as is. */
export function settleAnswer(answer: Response): Response {
  return ForwardedAnswer.is(answer) ? answer.settle() : answer;
}

/**
 * Whether answers made with the global `Response` are the library's own (serveFetch puts its
 * light answers there): forwarding them would cost a promise for nothing.
 */
export function globalAnswersAreOwn(): boolean {
  return ANSWER_FIELDS in globalThis.Response.prototype;
}

const RuntimeResponse = globalThis.Response;

// The real answer behind a forwarded one, for the prototype's forwarding members below.
let realOf: (answer: ForwardedAnswer) => Response;

class ForwardedAnswer {
  readonly #real: Response;
  // Made on first read: a chain whose legs touch no header costs no copy.
  #fields: FieldList | undefined = undefined;
  // The real answer's fields when they were copied (`set-cookie` apart), to find the edits.
  #seed: Map<string, string> | undefined = undefined;
  #seedCookies: readonly string[] = [];

  constructor(real: Response) {
    this.#real = real;
  }

  static {
    realOf = (answer) => answer.#real;
  }

  // A brand check: `instanceof` walks every other answer's prototype chain.
  static is(value: unknown): value is ForwardedAnswer {
    return typeof value === "object" && value !== null && #real in value;
  }

  get headers(): Headers {
    if (this.#fields !== undefined) return this.#fields;
    const own = this.#real.headers;
    const fields = new FieldList();
    const seed = new Map<string, string>();
    for (const [name, value] of own) {
      if (name === "set-cookie") continue;
      seed.set(name, value);
      fields.set(name, value);
    }
    const cookies = own.getSetCookie();
    for (const cookie of cookies) fields.append("set-cookie", cookie);
    this.#seed = seed;
    this.#seedCookies = cookies;
    this.#fields = fields;
    return fields;
  }

  get [ANSWER_FIELDS](): Headers {
    return this.headers;
  }

  clone(): Response {
    return new RuntimeResponse(this.#real.clone().body, {
      status: this.#real.status,
      statusText: this.#real.statusText,
      headers: this.headers,
    });
  }

  /** The real answer carrying the legs' edits. */
  settle(): Response {
    const fields = this.#fields;
    const seed = this.#seed;
    if (fields === undefined || seed === undefined) return this.#real;
    const seedCookies = this.#seedCookies;
    const cookies = fields.cookies();
    const changed: [string, string][] = [];
    fields.forEachField((name, value) => {
      if (seed.get(name) !== value) changed.push([name, value]);
    });
    const removed: string[] = [];
    if (seed.size > 0) for (const name of seed.keys()) if (!fields.has(name)) removed.push(name);
    // Cookies are only ever added, as a rule: then only the new ones are appended.
    const kept =
      cookies.length >= seedCookies.length &&
      seedCookies.every((cookie, i) => cookies[i] === cookie);
    if (
      changed.length === 0 &&
      removed.length === 0 &&
      kept &&
      cookies.length === seedCookies.length
    )
      return this.#real;
    return withHeaders(this.#real, (headers) => {
      for (const [name, value] of changed) headers.set(name, value);
      for (const name of removed) headers.delete(name);
      if (!kept) headers.delete("set-cookie");
      for (let i = kept ? seedCookies.length : 0; i < cookies.length; i++)
        headers.append("set-cookie", cookies[i] as string);
    });
  }
}

// Everything else a Response answers comes from the real one, bound to it.
for (const name of Object.getOwnPropertyNames(RuntimeResponse.prototype)) {
  if (name === "constructor" || name === "headers" || name === "clone") continue;
  const descriptor = Object.getOwnPropertyDescriptor(RuntimeResponse.prototype, name);
  if (descriptor === undefined) continue;
  const forward: PropertyDescriptor = { configurable: true };
  if (descriptor.get !== undefined) {
    forward.get = function (this: ForwardedAnswer) {
      return (realOf(this) as unknown as Record<string, unknown>)[name];
    };
  } else if (typeof descriptor.value === "function") {
    forward.value = function (this: ForwardedAnswer, ...args: unknown[]) {
      const real = realOf(this) as unknown as Record<string, (...a: unknown[]) => unknown>;
      return real[name]?.(...args);
    };
    forward.writable = true;
  } else continue;
  Object.defineProperty(ForwardedAnswer.prototype, name, forward);
}
Object.setPrototypeOf(ForwardedAnswer.prototype, RuntimeResponse.prototype);
