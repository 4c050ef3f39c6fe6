/**
 * An error the chain answers before the body was read (413 for a declared
 * length over the limit): the connection closes once the answer is out, on
 * every Node entry point, so a client cannot hold it open until the server's
 * request timeout or keep streaming a body nobody reads.
 */
import { createServer, type RequestListener, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import express from "express";
import Koa from "koa";
import { afterAll, describe, expect, it } from "vitest";
import { expressMiddleware } from "../src/adapters/express/index.ts";
import { koaMiddleware } from "../src/adapters/koa/index.ts";
import { nodeListener } from "../src/adapters/node/index.ts";
import { authz, login, newChain, passwordCredentials, sessions } from "../src/index.ts";
import { plainTextEncoder } from "./support/plain-text-encoder.ts";

const servers: Server[] = [];
afterAll(() => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
});

function chain() {
  return newChain({
    session: sessions({ secure: false }),
    login: login({
      credentials: passwordCredentials({
        findUser: () => undefined,
        passwordEncoder: plainTextEncoder(),
      }),
    }),
    authorization: authz.routes([authz.anyRequest().permitAll()]),
  });
}

const entryPoints: [string, () => RequestListener][] = [
  ["nodeListener", () => nodeListener(chain(), (_req, res) => res.end("app"))],
  [
    "expressMiddleware",
    () => {
      const app = express();
      app.use(expressMiddleware(chain()));
      app.use((_req, res) => res.end("app"));
      return app as unknown as RequestListener;
    },
  ],
  [
    "koaMiddleware",
    () => {
      const app = new Koa();
      app.use(koaMiddleware(chain()));
      app.use((ctx) => {
        ctx.body = "app";
      });
      return app.callback();
    },
  ],
];

describe.each(entryPoints)("%s: a 413 answered before the body was read", (_name, make) => {
  it("closes the connection once the answer is out", async () => {
    // Node's defaults: the request timeout is 300 s.
    const server = createServer(make());
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
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
});
