import type { IncomingMessage, ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { serveListener, type TestServer } from "../../../../test/support/listen.ts";
import { type LingerLimits, lingerOnClose } from "./lingering-close.ts";

let served: TestServer | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

// Tight limits where a test waits for them; loose ones where the body must come in first, however
// slowly a busy machine sends it.
const TIGHT: LingerLimits = { maxBytes: 256 * 1024, maxMs: 400 };
const LOOSE: LingerLimits = { maxBytes: 8 * 1024 * 1024, maxMs: 5000 };

interface Seen {
  /** When the server's socket closed, in ms from the client's connect. */
  readonly serverClosedAfterMs: number;
  readonly received: string;
  readonly sent: number;
  readonly error: string | undefined;
}

/**
 * A server that answers 401 with `Connection: close` as soon as the head is in, whether or not
 * it read the body first; a half-open client sending `perTick` bytes every 10 ms up to `total`.
 */
async function answerEarly(options: {
  total: number;
  perTick: number;
  readBodyFirst?: boolean;
  limits: LingerLimits;
}): Promise<Seen> {
  let serverClosed: (at: number) => void = () => {};
  const closed = new Promise<number>((resolve) => {
    serverClosed = resolve;
  });
  const answer = (req: IncomingMessage, res: ServerResponse) => {
    req.socket.once("close", () => serverClosed(Date.now()));
    lingerOnClose(req, res, options.limits);
    res.writeHead(401, { connection: "close", "content-length": "6" });
    res.end("denied");
  };
  served = await serveListener((req, res) => {
    if (options.readBodyFirst) {
      req.resume();
      req.once("end", () => answer(req, res));
    } else answer(req, res);
  });
  const port = Number(new URL(served.url).port);
  const started = Date.now();
  const socket: Socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
  let received = "";
  let sent = 0;
  let error: string | undefined;
  socket.on("data", (chunk: Buffer) => {
    received += chunk.toString("latin1");
  });
  socket.on("error", (cause: NodeJS.ErrnoException) => {
    error = cause.code;
  });
  socket.write(`POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${options.total}\r\n\r\n`);
  const chunk = Buffer.alloc(options.perTick, 0x61);
  const timer = setInterval(() => {
    if (socket.destroyed || sent >= options.total) return;
    const part = chunk.subarray(0, Math.min(chunk.length, options.total - sent));
    sent += part.length;
    socket.write(part);
  }, 10);
  const at = await closed;
  clearInterval(timer);
  await new Promise((resolve) => setTimeout(resolve, 50));
  socket.destroy();
  return { serverClosedAfterMs: at - started, received, sent, error };
}

describe("lingerOnClose", () => {
  it("keeps reading after the answer until the body is in, then closes", async () => {
    const seen = await answerEarly({ total: 64 * 1024, perTick: 4096, limits: LOOSE });
    expect(seen.received).toMatch(/^HTTP\/1\.1 401 [\s\S]*\r\n\r\ndenied$/);
    expect(seen.sent).toBe(64 * 1024);
    expect(seen.serverClosedAfterMs).toBeLessThan(LOOSE.maxMs / 2);
    expect(seen.error).toBeUndefined();
  });

  it("closes once the time limit passes", async () => {
    const seen = await answerEarly({ total: 1024 * 1024, perTick: 256, limits: TIGHT });
    expect(seen.received).toMatch(/\r\n\r\ndenied$/);
    expect(seen.serverClosedAfterMs).toBeGreaterThanOrEqual(TIGHT.maxMs);
    expect(seen.serverClosedAfterMs).toBeLessThan(TIGHT.maxMs + 2000);
  });

  it("closes once the byte limit passes", async () => {
    // 64 KiB every 10 ms: the 256 KiB limit passes well before the 5 s one.
    const seen = await answerEarly({
      total: 64 * 1024 * 1024,
      perTick: 64 * 1024,
      limits: { ...LOOSE, maxBytes: TIGHT.maxBytes },
    });
    expect(seen.received).toMatch(/\r\n\r\ndenied$/);
    expect(seen.serverClosedAfterMs).toBeLessThan(LOOSE.maxMs / 2);
    expect(seen.sent).toBeLessThan(16 * 1024 * 1024);
  });

  it("closes at once, as Node does, when the whole body was in before the answer", async () => {
    const seen = await answerEarly({
      total: 4096,
      perTick: 4096,
      readBodyFirst: true,
      limits: LOOSE,
    });
    expect(seen.received).toMatch(/\r\n\r\ndenied$/);
    // Lingering would wait for an end that has come and gone, until the time limit.
    expect(seen.serverClosedAfterMs).toBeLessThan(LOOSE.maxMs / 2);
  });
});
