import type { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";

/** How much of a body still arriving is read and discarded before the connection is cut. */
export interface LingerLimits {
  /** Body bytes read once the close was asked for. */
  readonly maxBytes: number;
  /** Milliseconds from the close being asked for. */
  readonly maxMs: number;
}

/**
 * 8 MiB and 10 s: a client that sends a whole 8 MiB body at 1.6 MB/s before it reads still gets
 * its answer, and a client that uploads forever gains nothing.
 */
export const LINGER_LIMITS: LingerLimits = { maxBytes: 8 * 1024 * 1024, maxMs: 10_000 };

const REQUEST = Symbol("portcullis.lingerRequest");
const LIMITS = Symbol("portcullis.lingerLimits");
const LINGERING = Symbol("portcullis.lingering");

type LingeringSocket = Socket & {
  [REQUEST]?: IncomingMessage | undefined;
  [LIMITS]?: LingerLimits | undefined;
  [LINGERING]?: true;
};

const closeSoon = Socket.prototype.destroySoon;

/**
 * Makes the close of `req`'s connection, when it comes while the body is still arriving, a
 * lingering one: the answer and a FIN go out, the rest of the body is read and discarded, and the
 * socket is destroyed once the body is in, the client closes, or a limit passes.
 *
 * Node closes a connection whose answer said `Connection: close` with `destroySoon()` as soon as
 * the answer is written; @hono/node-server does the same half a second after an answer that left
 * the body unread. Destroying a socket with bytes still arriving makes the kernel answer them
 * with a reset, and a reset discards what the client had received but not yet read: the answer.
 * So `destroySoon()` is replaced on this socket; every other close is Node's own.
 */
export function lingerOnClose(
  req: IncomingMessage,
  res: ServerResponse,
  limits?: LingerLimits,
): void {
  const socket = req.socket as LingeringSocket | null;
  // Only a real connection lingers: an injected request's stand-in socket (Fastify's inject,
  // light-my-request) has no kernel buffer to reset, and not every method of a Socket.
  if (!(socket instanceof Socket) || socket.destroyed) return;
  socket[REQUEST] = req;
  if (limits !== undefined) socket[LIMITS] = limits;
  if (socket.destroySoon !== lingeringDestroySoon) socket.destroySoon = lingeringDestroySoon;
  // Ahead of Node's own listener, which would dump a body nobody read: a dumped body's bytes
  // are dropped without a 'data' event, so the lingering close could not count them.
  res.prependListener("finish", keepReading);
}

function keepReading(this: ServerResponse): void {
  const req = this.req;
  if (req.readableFlowing === null && !bodyEnded(req)) req.resume();
}

function lingeringDestroySoon(this: LingeringSocket): void {
  // Already lingering: its own limits end it.
  if (this[LINGERING]) return;
  const req = this[REQUEST];
  this[REQUEST] = undefined;
  if (req === undefined || req.socket !== this || bodyEnded(req)) closeSoon.call(this);
  else linger(this, req, this[LIMITS] ?? LINGER_LIMITS);
}

function bodyEnded(req: IncomingMessage): boolean {
  return req.complete || req.readableEnded || req.destroyed;
}

function linger(socket: LingeringSocket, req: IncomingMessage, limits: LingerLimits): void {
  socket[LINGERING] = true;
  // Half-close: the answer is followed by a FIN, and the socket still reads.
  if (socket.writable) socket.end();
  let read = 0;
  const stop = () => {
    clearTimeout(timer);
    req.removeListener("data", onData);
    req.removeListener("end", onEnd);
    socket.removeListener("close", stop);
  };
  // A limit passed: the client had the answer all this time; what it sends now is refused.
  const cut = () => {
    stop();
    socket.destroy();
  };
  // Nothing left to read: closed once the answer and the FIN are out, without a reset.
  const onEnd = () => {
    stop();
    closeSoon.call(socket);
  };
  const onData = (chunk: Buffer | string) => {
    read += chunk.length;
    if (read > limits.maxBytes) cut();
  };
  const timer = setTimeout(cut, limits.maxMs);
  timer.unref();
  socket.once("close", stop);
  req.on("data", onData);
  req.once("end", onEnd);
  req.resume();
}
