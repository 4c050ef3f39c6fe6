import { createServer, type IncomingMessage, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { text } from "node:stream/consumers";
import { serve } from "@hono/node-server";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { nodeListener, serveFetch } from "../src/adapters/node/index.ts";
import { authz, login, newChain, passwordCredentials, sessions } from "../src/index.ts";
import { plainTextEncoder } from "./support/plain-text-encoder.ts";

const servers: Server[] = [];
afterAll(() => {
  for (const server of servers) server.close();
});
afterEach(() => vi.restoreAllMocks());

function chain(onError: (error: unknown) => void) {
  return newChain({
    session: sessions({ secure: false }),
    login: login({
      credentials: passwordCredentials({
        findUser: () => undefined,
        passwordEncoder: plainTextEncoder(),
      }),
    }),
    authorization: authz.routes([authz.anyRequest().permitAll()]),
    onError,
  });
}

async function viaNodeListener(onError: (error: unknown) => void): Promise<number> {
  const server = createServer(
    nodeListener(chain(onError), (_req, res) => res.end("ok"), { onError }),
  );
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

async function viaServeFetch(onError: (error: unknown) => void): Promise<number> {
  const handler = chain(onError).wrap(async (request) => new Response(await request.text()));
  const server = await serveFetch(handler, { port: 0, onError });
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

/** As `npm start` serves the example: `@hono/node-server` in front of the chain's Fetch handler. */
async function viaHonoNodeServer(onError: (error: unknown) => void): Promise<number> {
  const handler = chain(onError).wrap(async (request) => new Response(await request.text()));
  const server = await new Promise<Server>((resolve) => {
    const started = serve({ fetch: handler, port: 0, hostname: "127.0.0.1" }, () =>
      resolve(started as Server),
    );
  });
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

async function token(port: number): Promise<{ cookie: string; token: string }> {
  const response = await fetch(`http://127.0.0.1:${port}/csrf`);
  const cookie = (response.headers.getSetCookie()[0] ?? "").split(";")[0] as string;
  return { cookie, token: ((await response.json()) as { token: string }).token };
}

/** Sends `head` and part of a body, then `finish(socket)`; resolves with what came back. */
function send(port: number, head: string, finish: "abort" | "garble"): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let data = "";
    socket.on("data", (chunk) => {
      data += chunk.toString("latin1");
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve(data));
    socket.write(head);
    if (finish === "abort") {
      socket.write("username=a&pass");
      setTimeout(() => socket.destroy(), 100);
    } else {
      socket.write("5\r\nusern\r\nZZZ-not-a-chunk-size\r\n\r\n");
    }
  });
}

describe.each([
  ["nodeListener", viaNodeListener],
  ["serveFetch", viaServeFetch],
  ["@hono/node-server", viaHonoNodeServer],
])("%s: a body the client breaks off or garbles while a leg reads it", (_name, start) => {
  it("is no 500 and no logged failure, and the server keeps serving", async () => {
    const onError = vi.fn();
    const consoleError = vi.spyOn(console, "error").mockImplementation(() => {});
    const port = await start(onError);
    const { cookie, token: csrfToken } = await token(port);
    const head = (framing: string) =>
      `POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\nX-CSRF-Token: ${csrfToken}\r\nContent-Type: application/x-www-form-urlencoded\r\n${framing}\r\n`;

    const aborted = await send(port, head("Content-Length: 200\r\n"), "abort");
    const garbled = await send(port, head("Transfer-Encoding: chunked\r\n"), "garble");
    await new Promise((resolve) => setTimeout(resolve, 100));

    for (const answer of [aborted, garbled]) expect(answer).not.toMatch(/^HTTP\/1\.1 500/);
    expect(garbled).toMatch(/^HTTP\/1\.1 400/);
    expect(onError).not.toHaveBeenCalled();
    expect(consoleError).not.toHaveBeenCalled();
    expect((await fetch(`http://127.0.0.1:${port}/csrf`)).status).toBe(200);
  });
});

describe("nodeListener: a body the client breaks off or garbles while the app reads it", () => {
  async function start(read: (req: IncomingMessage) => Promise<string>) {
    const onError = vi.fn();
    const consoleError = vi.spyOn(console, "error").mockImplementation(() => {});
    const app = newChain({
      session: sessions({ secure: false }),
      authorization: authz.routes([authz.anyRequest().permitAll()]),
      onError,
    });
    const server = createServer(
      nodeListener(app, async (req, res) => res.end(await read(req)), { onError }),
    );
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return { port: (server.address() as AddressInfo).port, onError, consoleError };
  }

  const readers: [string, (req: IncomingMessage) => Promise<string>][] = [
    [
      "for await",
      async (req) => {
        let body = "";
        for await (const chunk of req) body += chunk;
        return body;
      },
    ],
    ["stream/consumers", (req) => text(req)],
    [
      "'data' and 'error' events",
      (req) =>
        new Promise((resolve, reject) => {
          let body = "";
          req.on("data", (chunk) => {
            body += chunk;
          });
          req.on("end", () => resolve(body));
          req.on("error", reject);
        }),
    ],
  ];

  it.each(readers)("reading with %s: no 500, nothing reported", async (_name, read) => {
    const { port, onError, consoleError } = await start(read);
    const head = (framing: string) =>
      `POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\n${framing}\r\n`;
    const aborted = await send(port, head("Content-Length: 200\r\n"), "abort");
    const garbled = await send(port, head("Transfer-Encoding: chunked\r\n"), "garble");
    await new Promise((resolve) => setTimeout(resolve, 100));

    expect(aborted).toBe("");
    expect(garbled).toMatch(/^HTTP\/1\.1 400/);
    expect(onError).not.toHaveBeenCalled();
    expect(consoleError).not.toHaveBeenCalled();
    const whole = await fetch(`http://127.0.0.1:${port}/upload`, { method: "POST", body: "all" });
    expect(await whole.text()).toBe("all");
  });
});

describe("nodeListener: the app's own failures stay reported", () => {
  it("a connection reset of the app's upstream, after the body arrived whole, is a reported 500", async () => {
    const onError = vi.fn();
    const app = newChain({
      session: sessions({ secure: false }),
      authorization: authz.routes([authz.anyRequest().permitAll()]),
      onError,
    });
    const server = createServer(
      nodeListener(
        app,
        async (req) => {
          await text(req);
          throw Object.assign(new Error("upstream reset"), { code: "ECONNRESET" });
        },
        { onError },
      ),
    );
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body: "whole" });
    expect(response.status).toBe(500);
    expect(onError).toHaveBeenCalledTimes(1);
  });
});
