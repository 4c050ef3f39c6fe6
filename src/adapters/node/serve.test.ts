import type { Server } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { InvalidOptionsError } from "../../core/errors.ts";
import { serveFetch } from "./index.ts";

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

async function start(options: Parameters<typeof serveFetch>[1] = {}) {
  const server = await serveFetch(
    async (request) => {
      if (Number(request.headers.get("content-length") ?? 0) > 10)
        return new Response("too large", { status: 413 });
      return new Response(await request.text());
    },
    { port: 0, ...options },
  );
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

/** Opens a raw connection and resolves, with what was received, once the server closes it. */
function rawClient(port: number): {
  socket: Socket;
  closed: Promise<{ after: number; data: string }>;
} {
  const socket = connect(port, "127.0.0.1");
  const started = Date.now();
  let data = "";
  socket.on("data", (chunk) => {
    data += chunk.toString("latin1");
  });
  socket.on("error", () => {});
  const closed = new Promise<{ after: number; data: string }>((resolve) =>
    socket.on("close", () => resolve({ after: Date.now() - started, data })),
  );
  return { socket, closed };
}

function trickle(socket: Socket, text: string, everyMs: number): () => void {
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(text);
  }, everyMs);
  return () => clearInterval(timer);
}

describe("serveFetch server timeouts", () => {
  it("cuts a client that trickles its headers (slowloris) after headersTimeout", async () => {
    const port = await start({ headersTimeout: 1000, requestTimeout: 5000 });
    const { socket, closed } = rawClient(port);
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n");
    const stop = trickle(socket, "X-Slow: 1\r\n", 100);
    const { after, data } = await closed;
    stop();
    // Checked every second: closed between the timeout and the next check or two.
    expect(after).toBeLessThan(4000);
    expect(data).toMatch(/^HTTP\/1\.1 408|^$/);
  }, 15_000);

  it("cuts a client that trickles its body after requestTimeout", async () => {
    const port = await start({ headersTimeout: 1000, requestTimeout: 2000 });
    const { socket, closed } = rawClient(port);
    socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n");
    const stop = trickle(socket, "", 100);
    const { after } = await closed;
    stop();
    expect(after).toBeLessThan(5000);
  }, 15_000);

  it("closes the connection after an error answered before the body was read", async () => {
    const port = await start();
    const { socket, closed } = rawClient(port);
    socket.write("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n");
    const stop = trickle(socket, "x".repeat(1024), 20);
    const { after, data } = await closed;
    stop();
    expect(data).toMatch(/^HTTP\/1\.1 413/);
    expect(data.toLowerCase()).toContain("connection: close");
    expect(after).toBeLessThan(3000);
  }, 15_000);

  it("keeps a well-behaved connection alive for several requests", async () => {
    const port = await start();
    const { socket, closed } = rawClient(port);
    socket.write(
      "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    const { data } = await closed;
    expect(data.match(/HTTP\/1\.1 200/g)).toHaveLength(2);
  });

  it("refuses bad or misspelt timeout options when called", () => {
    const handler = async () => new Response("ok");
    expect(() => serveFetch(handler, { headersTimeout: 0 })).toThrow(InvalidOptionsError);
    expect(() => serveFetch(handler, { headerTimeout: 1000 } as never)).toThrow(/headerTimeout/);
  });
});

describe("serveFetch streamed answers", () => {
  it("cuts the connection and tells onError when the handler's body fails half-way", async () => {
    const reported: unknown[] = [];
    const failure = new Error("the feed broke");
    const server = await serveFetch(
      () => {
        let sent = false;
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent) return controller.error(failure);
            sent = true;
            controller.enqueue(new TextEncoder().encode("first"));
          },
        });
        return new Response(body);
      },
      { port: 0, onError: (error) => reported.push(error) },
    );
    servers.push(server);
    const port = (server.address() as AddressInfo).port;
    const outcome = await fetch(`http://127.0.0.1:${port}/`)
      .then((answer) => answer.text())
      .then(
        () => "whole",
        () => "cut",
      );
    expect(outcome).toBe("cut");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(reported).toEqual([failure]);
  });
});
