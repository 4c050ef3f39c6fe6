/**
 * An error the chain answers before the body was read (a 401, a 403, a 413 for a declared length
 * over the limit) reaches the client on every Node entry point, even while the client is still
 * uploading and whenever it reads: the server half-closes after the answer, goes on reading and
 * discarding the body (bounded in bytes and time), and closes once the body is in, the client
 * closes, or a bound passes. Closing at once resets the connection while body bytes arrive, and
 * the reset discards the answer from a client that had not read it yet: a busy client, or one
 * that sends its whole body before it reads.
 */
import { createServer, type RequestListener, type Server } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { serve } from "@hono/node-server";
import express from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import Koa from "koa";
import { afterAll, describe, expect, it } from "vitest";
import { expressMiddleware } from "../src/adapters/express/index.ts";
import { fastifyPortcullis } from "../src/adapters/fastify/index.ts";
import { honoMiddleware } from "../src/adapters/hono/index.ts";
import { koaMiddleware } from "../src/adapters/koa/index.ts";
import { LINGER_LIMITS } from "../src/adapters/node/engine/lingering-close.ts";
import { createLingeringServer, nodeListener, serveFetch } from "../src/adapters/node/index.ts";
import {
  authz,
  type Handler,
  login,
  newChain,
  newHandler,
  passwordCredentials,
  type SecurityOptions,
  sessions,
} from "../src/index.ts";
import { plainTextEncoder } from "./support/plain-text-encoder.ts";

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
});

function security(): SecurityOptions {
  return {
    session: sessions({ secure: false }),
    login: login({
      credentials: passwordCredentials({
        findUser: () => undefined,
        passwordEncoder: plainTextEncoder(),
      }),
    }),
    authorization: authz.routes([
      authz.match("GET", "/csrf").permitAll(),
      authz.anyRequest().authenticated(),
    ]),
  };
}

const chain = () => newChain(security());
const handler = () => newHandler(() => new Response("app"), security());

interface Started {
  readonly port: number;
  readonly server: Server;
}

/** Listens on a free loopback port, or waits for `@hono/node-server`'s `serve` to. */
async function started(server: Server, listenHere = true): Promise<Started> {
  if (!server.listening) {
    const listening = new Promise<void>((resolve) => server.once("listening", resolve));
    if (listenHere) server.listen(0, "127.0.0.1");
    await listening;
  }
  closers.push(() => {
    server.closeAllConnections();
    return new Promise<void>((done) => server.close(() => done()));
  });
  return { port: (server.address() as AddressInfo).port, server };
}

function honoServe(fetch: Handler | Hono["fetch"]): Promise<Started> {
  const server = serve({
    fetch,
    port: 0,
    hostname: "127.0.0.1",
    createServer: createLingeringServer,
  }) as Server;
  return started(server, false);
}

interface Host {
  readonly name: string;
  readonly start: () => Promise<Started>;
  /** The library writes the answer itself (with `Connection: close`), not the host. */
  readonly answersItself: boolean;
}

/** Every Node entry point, each serving the same chain. */
const hosts: Host[] = [
  {
    name: "nodeListener",
    answersItself: true,
    start: () => started(createServer(nodeListener(chain(), (_req, res) => res.end("app")))),
  },
  {
    name: "expressMiddleware",
    answersItself: true,
    start: () => {
      const application = express();
      application.use(expressMiddleware(chain()));
      application.use((_req, res) => res.end("app"));
      return started(createServer(application as unknown as RequestListener));
    },
  },
  {
    name: "fastifyPortcullis",
    answersItself: true,
    start: async () => {
      const application = Fastify();
      await application.register(fastifyPortcullis, { chain: chain() });
      application.all("/*", async () => "app");
      await application.listen({ port: 0, host: "127.0.0.1" });
      closers.push(() => {
        application.server.closeAllConnections();
        return application.close();
      });
      const server = application.server;
      return { port: (server.address() as AddressInfo).port, server };
    },
  },
  {
    name: "koaMiddleware",
    answersItself: true,
    start: () => {
      const application = new Koa();
      application.use(koaMiddleware(chain()));
      application.use((ctx) => {
        ctx.body = "app";
      });
      return started(createServer(application.callback()));
    },
  },
  {
    name: "serveFetch",
    answersItself: true,
    start: async () => started(await serveFetch(handler(), { port: 0 })),
  },
  {
    name: "@hono/node-server with newHandler, on createLingeringServer",
    answersItself: false,
    start: () => honoServe(handler()),
  },
  {
    name: "@hono/node-server with honoMiddleware, on createLingeringServer",
    answersItself: false,
    start: () => {
      const application = new Hono();
      application.use(honoMiddleware(chain()));
      application.all("*", (c) => c.text("app"));
      return honoServe(application.fetch);
    },
  },
];

const MiB = 1024 * 1024;

interface Upload {
  readonly path: string;
  readonly contentType: string;
  /** The body the head announces; the client sends it 16 KiB every 10 ms. */
  readonly bytes: number;
  /** The client reads nothing until then (a busy client, or one that sends its whole body first). */
  readonly readAfterMs?: number;
  /** The client reads nothing until its whole body is sent (as Python's http.client does). */
  readonly readWhenSent?: boolean;
  /** Send as fast as the connection takes it, rather than 16 KiB every 10 ms. */
  readonly flood?: boolean;
  /** Bytes sent every 10 ms. @default 16 KiB */
  readonly chunkBytes?: number;
  /** The client goes on sending after the server's FIN. */
  readonly allowHalfOpen?: boolean;
}

interface Outcome {
  readonly received: string;
  readonly sent: number;
  readonly error: string | undefined;
  readonly closedAfterMs: number;
}

/** A raw client uploading a body over a socket of its own, recording what comes back. */
function upload(port: number, options: Upload): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket: Socket = connect({
      port,
      host: "127.0.0.1",
      allowHalfOpen: options.allowHalfOpen === true,
    });
    const started = Date.now();
    let received = "";
    let sent = 0;
    let error: string | undefined;
    let timer: NodeJS.Timeout | undefined;
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1");
    });
    socket.on("error", (cause: NodeJS.ErrnoException) => {
      error = cause.code ?? cause.message;
    });
    if (options.readAfterMs !== undefined) {
      socket.pause();
      setTimeout(() => socket.resume(), options.readAfterMs);
    }
    if (options.readWhenSent) socket.pause();
    const giveUp = setTimeout(() => socket.destroy(), 30_000);
    socket.on("close", () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ received, sent, error, closedAfterMs: Date.now() - started });
    });
    socket.write(
      `POST ${options.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${options.contentType}\r\nContent-Length: ${options.bytes}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(options.chunkBytes ?? 16 * 1024, 0x61);
    const more = () => !socket.destroyed && socket.writable && sent < options.bytes;
    if (options.flood) {
      const pump = () => {
        while (more()) {
          const part = chunk.subarray(0, Math.min(chunk.length, options.bytes - sent));
          sent += part.length;
          if (!socket.write(part)) return;
        }
      };
      socket.on("drain", pump);
      pump();
      return;
    }
    // Paced by the clock, not by the timer's ticks, which a busy test process delays.
    timer = setInterval(() => {
      const due = (Math.floor((Date.now() - started) / 10) + 1) * chunk.length;
      while (more() && sent < due) {
        const part = chunk.subarray(0, Math.min(chunk.length, options.bytes - sent));
        sent += part.length;
        socket.write(part);
      }
      if (!more()) {
        clearInterval(timer);
        if (options.readWhenSent) socket.resume();
      }
    }, 10);
  });
}

interface Answer {
  readonly status: number;
  readonly headers: Map<string, string>;
  readonly body: string;
  readonly complete: boolean;
}

function parseAnswer(received: string): Answer | undefined {
  const end = received.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const [statusLine = "", ...lines] = received.slice(0, end).split("\r\n");
  const status = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1];
  if (status === undefined) return undefined;
  const headers = new Map<string, string>();
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const rest = received.slice(end + 4);
  if (headers.get("transfer-encoding") === "chunked") {
    // Chunk by chunk, up to the last (empty) one.
    let body = "";
    let at = 0;
    for (;;) {
      const line = rest.indexOf("\r\n", at);
      if (line < 0) return { status: Number(status), headers, body, complete: false };
      const size = Number.parseInt(rest.slice(at, line), 16);
      if (size === 0) return { status: Number(status), headers, body, complete: true };
      body += rest.slice(line + 2, line + 2 + size);
      at = line + 2 + size + 2;
    }
  }
  const length = Number(headers.get("content-length"));
  return { status: Number(status), headers, body: rest, complete: rest.length === length };
}

// An anonymous 8 MiB upload, 16 KiB every 10 ms: 401 where a sign-in is needed, 403 at the
// login endpoint without a CSRF token (a form body, which the chain may start reading).
const cases: [string, Upload, number][] = [
  [
    "an anonymous upload",
    { path: "/upload", contentType: "application/octet-stream", bytes: 8 * MiB },
    401,
  ],
  [
    "a form to the login endpoint without a CSRF token",
    { path: "/login", contentType: "application/x-www-form-urlencoded", bytes: 8 * MiB },
    403,
  ],
];

const TRIES = 40;

async function tries(port: number, options: Upload): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  // Twenty at a time: the tries overlap as a busy server's requests do.
  for (let i = 0; i < TRIES; i += 20)
    outcomes.push(...(await Promise.all(Array.from({ length: 20 }, () => upload(port, options)))));
  return outcomes;
}

function expectAnswered(outcomes: Outcome[], status: number): void {
  const missed = outcomes.filter((outcome) => {
    const answer = parseAnswer(outcome.received);
    return answer?.status !== status || !answer.complete;
  });
  expect(
    missed.map((outcome) => ({ ...outcome, received: outcome.received.slice(0, 40) })),
  ).toEqual([]);
}

describe.each(hosts)("$name: an early answer to a client still uploading", (host) => {
  let port: Promise<number> | undefined;
  const portOf = () => {
    port ??= host.start().then((server) => server.port);
    return port;
  };

  it.each(cases)(
    "reaches it, for %s, when the client reads as it sends",
    async (_case, options, status) => {
      expectAnswered(await tries(await portOf(), options), status);
    },
    60_000,
  );

  it.each(cases)(
    "reaches it, for %s, when the client reads a second late",
    async (_case, options, status) => {
      const outcomes = await tries(await portOf(), { ...options, readAfterMs: 1000 });
      expectAnswered(outcomes, status);
      // @hono/node-server answers keep-alive and closes when its own drain gives up.
      if (host.answersItself)
        for (const outcome of outcomes)
          expect(parseAnswer(outcome.received)?.headers.get("connection")).toBe("close");
    },
    60_000,
  );
});

describe.each(hosts.filter((host) => host.answersItself))(
  "$name: a 413 answered before the body was read",
  (host) => {
    it("closes the connection once the answer is out", async () => {
      // Node's defaults: the request timeout is 300 s.
      const { port } = await host.start();
      const issued = await fetch(`http://127.0.0.1:${port}/csrf`);
      const cookie = (issued.headers.getSetCookie()[0] ?? "").split(";")[0] as string;
      const { token } = (await issued.json()) as { token: string };

      const socket = connect(port, "127.0.0.1");
      const started = Date.now();
      let data = "";
      socket.on("data", (chunk) => {
        data += chunk.toString("latin1");
      });
      socket.on("error", () => {});
      const closed = new Promise<number>((resolve) =>
        socket.on("close", () => resolve(Date.now() - started)),
      );
      socket.write(
        `POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\nX-CSRF-Token: ${token}\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{"username":`,
      );
      const after = await Promise.race([
        closed,
        new Promise<number>((resolve) => setTimeout(() => resolve(Number.POSITIVE_INFINITY), 5000)),
      ]);
      socket.destroy();
      expect(data).toMatch(/^HTTP\/1\.1 413/);
      expect(data.toLowerCase()).toContain("connection: close");
      expect(after).toBeLessThan(5000);
    }, 15_000);
  },
);

/** The two ways a connection comes to linger: an adapter's early answer, and the server's own. */
const lingering = [hosts[0], hosts[5]] as Host[];

const anonymous = { path: "/upload", contentType: "application/octet-stream" };

describe("the lingering close is bounded", () => {
  // Each on a server of its own, all at once: the slowest waits out the 10 s limit.
  it.concurrent.each(lingering)(
    "$name: a client sending its whole 8 MiB before it reads gets its answer",
    async (host) => {
      const { port } = await host.start();
      const outcomes = await Promise.all(
        Array.from({ length: 10 }, () =>
          upload(port, { ...anonymous, bytes: 8 * MiB, readWhenSent: true }),
        ),
      );
      expectAnswered(outcomes, 401);
      for (const outcome of outcomes) expect(outcome.sent).toBe(8 * MiB);
    },
    30_000,
  );

  it.concurrent.each(lingering)(
    "$name: a client that goes on sending fast is cut once it sent the byte limit",
    async (host) => {
      const { port } = await host.start();
      const outcome = await upload(port, {
        ...anonymous,
        bytes: 1024 * MiB,
        flood: true,
        allowHalfOpen: true,
      });
      expectAnswered([outcome], 401);
      expect(outcome.closedAfterMs).toBeLessThan(LINGER_LIMITS.maxMs);
      // The limit, what the kernels' buffers hold, and @hono/node-server's own 64 MiB drain.
      expect(outcome.sent).toBeLessThan(LINGER_LIMITS.maxBytes + 64 * MiB + 32 * MiB);
    },
    30_000,
  );

  it.concurrent.each(lingering)(
    "$name: a client that goes on sending slowly is cut once the time limit passed",
    async (host) => {
      const { port } = await host.start();
      const outcome = await upload(port, {
        ...anonymous,
        bytes: 1024 * MiB,
        chunkBytes: 1024,
        allowHalfOpen: true,
      });
      expectAnswered([outcome], 401);
      expect(outcome.closedAfterMs).toBeGreaterThanOrEqual(LINGER_LIMITS.maxMs);
      expect(outcome.closedAfterMs).toBeLessThan(LINGER_LIMITS.maxMs + 5000);
    },
    30_000,
  );

  it.concurrent.each(lingering)(
    "$name: the connection closes, without a reset, as soon as the body is in",
    async (host) => {
      const { port, server } = await host.start();
      const serverClosed = new Promise<number>((resolve) =>
        server.once("connection", (socket: Socket) =>
          socket.once("close", () => resolve(Date.now())),
        ),
      );
      // 2 MiB in 1.3 s: still arriving when @hono/node-server's own half-second drain gives up.
      const bytes = 2 * MiB;
      const started = Date.now();
      const socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
      let received = "";
      let error: string | undefined;
      socket.on("data", (chunk: Buffer) => {
        received += chunk.toString("latin1");
      });
      socket.on("error", (cause: NodeJS.ErrnoException) => {
        error = cause.code;
      });
      socket.write(
        `POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: ${bytes}\r\n\r\n`,
      );
      let sent = 0;
      let sentAllAt = Number.POSITIVE_INFINITY;
      const timer = setInterval(() => {
        const due = Math.min(bytes, (Math.floor((Date.now() - started) / 10) + 1) * 16 * 1024);
        for (; sent < due; sent += 16 * 1024) socket.write(Buffer.alloc(16 * 1024, 0x61));
        if (sent >= bytes) {
          clearInterval(timer);
          sentAllAt = Date.now();
        }
      }, 10);
      const closedAt = await serverClosed;
      // The client keeps its side open: only the server's close ends it, once the body is in.
      await new Promise((resolve) => setTimeout(resolve, 200));
      socket.destroy();
      expect(sent).toBe(bytes);
      expect(closedAt - sentAllAt).toBeLessThan(1000);
      expect(closedAt - started).toBeLessThan(LINGER_LIMITS.maxMs);
      expect(error).toBeUndefined();
      expect(parseAnswer(received)).toMatchObject({ status: 401, complete: true });
    },
    30_000,
  );
});
