import type { IncomingMessage } from "node:http";
import { BodyReadError } from "../../../core/errors.ts";

/**
 * Thrown into the chain's body stream when the request ends early (the client
 * went away, or sent a malformed body) or the body was handed back: a
 * `BodyReadError`, so it answers 400 and is not reported as a failure.
 */
export class BodyUnavailableError extends BodyReadError {}

/**
 * A lazy view of a Node request body for the chain. Nothing is read until the
 * chain pulls from `stream`; every byte read is kept, so that `restore()` can
 * put it back with `unshift` and the framework's body parser still gets the
 * whole body.
 *
 * The end of the body is detected from `message.complete` with an empty buffer,
 * never by reading past it: reading past it would emit `'end'`, after which
 * Node refuses `unshift`. The native stream stays a plain `IncomingMessage`, so
 * `pipeline`, `finished` and `for await` keep working on it.
 */
export class BodyTap {
  readonly #message: IncomingMessage;
  readonly #record: boolean;
  readonly #chunks: (Buffer | string)[] = [];
  #touched = false;
  #released = false;
  #wake: ((error?: unknown) => void) | undefined;
  #listening = false;

  constructor(message: IncomingMessage, record = true) {
    this.#message = message;
    this.#record = record;
  }

  /** A `ReadableStream` that reads the native body only when pulled. */
  stream(): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          const chunk = await this.#next();
          if (chunk === null) controller.close();
          else controller.enqueue(chunk);
        },
        cancel: () => {
          // The chain lost interest; what it read is still recorded for restore().
        },
      },
      // Zero: no read ahead of what the chain asks for.
      { highWaterMark: 0 },
    );
  }

  /** True once the chain pulled from the native stream. */
  get touched(): boolean {
    return this.#touched;
  }

  /** The number of bytes read so far (for tests and diagnostics). */
  get bytesRead(): number {
    let total = 0;
    for (const chunk of this.#chunks) total += chunk.length;
    return total;
  }

  /**
   * Hands the body to the framework: stops reading and puts every byte the
   * chain read back at the front of the native stream.
   */
  restore(): void {
    if (this.#released) return;
    this.#release();
    if (this.#chunks.length === 0) return;
    const message = this.#message;
    if (message.destroyed) return;
    if (message.readableEnded) {
      // Cannot happen through this class (see above); refuse rather than hand on a truncated body.
      throw new BodyUnavailableError("the request body was consumed and cannot be restored");
    }
    const encoding = message.readableEncoding;
    if (encoding !== null) message.unshift(this.#chunks.join(""), encoding);
    else message.unshift(Buffer.concat(this.#chunks as Buffer[]));
    this.#chunks.length = 0;
  }

  /**
   * Stops reading for good (the chain answered). A body the chain started to
   * read is drained, so a kept-alive connection can carry the next request.
   */
  discard(): void {
    if (this.#released) return;
    this.#release();
    this.#chunks.length = 0;
    const message = this.#message;
    if (this.#touched && !message.readableEnded && !message.destroyed) message.resume();
  }

  #release(): void {
    this.#released = true;
    this.#stopListening();
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.(new BodyUnavailableError("the request body was handed back to the server"));
  }

  async #next(): Promise<Uint8Array | null> {
    const message = this.#message;
    for (;;) {
      if (this.#released) {
        throw new BodyUnavailableError("the request body was handed back to the server");
      }
      const length = message.readableLength;
      if (length > 0) {
        this.#touched = true;
        // Exactly the buffered length: read() with no size would emit 'end' after the last chunk.
        const chunk = message.read(length) as Buffer | string | null;
        if (chunk !== null) {
          if (this.#record) this.#chunks.push(chunk);
          return typeof chunk === "string"
            ? new Uint8Array(Buffer.from(chunk, message.readableEncoding ?? "utf8"))
            : new Uint8Array(chunk);
        }
      }
      // A parser further out may have read the whole body already: then there is none left.
      if (sourceEnded(message)) return null;
      if (message.destroyed || message.errored) {
        throw new BodyUnavailableError("the request was aborted", { cause: message.errored });
      }
      this.#touched = true;
      await new Promise<void>((resolve, reject) => {
        this.#wake = (error) => (error === undefined ? resolve() : reject(error));
        this.#startListening();
      });
    }
  }

  readonly #onReadable = (): void => this.#signal();
  readonly #onError = (error: unknown): void =>
    this.#signal(new BodyUnavailableError("the request failed", { cause: error }));
  readonly #onClose = (): void => {
    if (!this.#message.complete) this.#signal(new BodyUnavailableError("the request was aborted"));
    else this.#signal();
  };

  #signal(error?: unknown): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.(error);
  }

  #startListening(): void {
    if (this.#listening) return;
    this.#listening = true;
    const message = this.#message;
    message.on("readable", this.#onReadable);
    message.on("error", this.#onError);
    message.on("close", this.#onClose);
  }

  #stopListening(): void {
    if (!this.#listening) return;
    this.#listening = false;
    const message = this.#message;
    // Removing the last 'readable' listener returns the stream to its initial mode (neither
    // flowing nor paused), so a parser that attaches 'data' later starts it as usual.
    message.removeListener("readable", this.#onReadable);
    message.removeListener("error", this.#onError);
    message.removeListener("close", this.#onClose);
  }
}

/**
 * True once the source has delivered its last byte into the buffer. Node's
 * requests say so with `complete`; request objects of other origins (Fastify's
 * `inject`) only through the stream state, which Node has kept since v10.
 */
function sourceEnded(message: IncomingMessage): boolean {
  if (message.complete || message.readableEnded) return true;
  return (message as { _readableState?: { ended?: boolean } })._readableState?.ended === true;
}
