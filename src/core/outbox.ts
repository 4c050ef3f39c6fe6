import { bindValue, contextFrom, createContextKey } from "./context.ts";
import { withHeaders } from "./response.ts";

/**
 * Runs `hook` once, when something is first queued in `outbox` (at once if it
 * holds something already). For adapters: most requests queue nothing, and
 * watching for late headers then costs nothing on the native response.
 */
export let whenQueued: (outbox: ResponseOutbox, hook: () => void) => void;

/**
 * Response headers a leg decided on while the request was being handled, such
 * as the cookie `session.save()` sets. The leg that owns the outbox writes them
 * onto the response; an adapter whose framework writes later drains it then.
 */
export class ResponseOutbox {
  readonly #cookies: string[] = [];
  #noStore = false;
  #onQueued: (() => void) | undefined;

  static {
    whenQueued = (outbox, hook) => {
      if (outbox.empty) outbox.#onQueued = hook;
      else hook();
    };
  }

  setCookie(value: string): void {
    this.#cookies.push(value);
    // A response that sets a session cookie must never be cached and replayed to someone else.
    this.#noStore = true;
    const hook = this.#onQueued;
    if (hook !== undefined) {
      this.#onQueued = undefined;
      hook();
    }
  }

  get empty(): boolean {
    return this.#cookies.length === 0 && !this.#noStore;
  }

  /** Moves everything queued onto `headers`, leaving the outbox empty. */
  drainInto(headers: Headers): void {
    const cookies = this.#cookies.splice(0);
    const noStore = this.#noStore;
    this.#noStore = false;
    apply(headers, cookies, noStore);
  }

  /** `response` with the queued headers; a copy (same body stream) when its headers are immutable. */
  drainIntoResponse(response: Response): Response {
    if (this.empty) return response;
    const cookies = this.#cookies.splice(0);
    const noStore = this.#noStore;
    this.#noStore = false;
    return withHeaders(response, (headers) => apply(headers, cookies, noStore));
  }
}

function apply(headers: Headers, cookies: readonly string[], noStore: boolean): void {
  for (const cookie of cookies) headers.append("set-cookie", cookie);
  if (noStore) headers.set("cache-control", "no-store");
}

const OUTBOX = createContextKey<ResponseOutbox>("portcullis.outbox");

/** The request's outbox, created on first use. */
export function outboxOf(request: object): ResponseOutbox {
  let outbox = contextFrom(request).get(OUTBOX);
  if (outbox === undefined) {
    outbox = new ResponseOutbox();
    bindValue(request, OUTBOX, outbox);
  }
  return outbox;
}

/** The request's outbox if any leg created one. */
export function existingOutbox(request: object): ResponseOutbox | undefined {
  return contextFrom(request).get(OUTBOX);
}
