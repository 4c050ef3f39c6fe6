import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { honoMiddleware } from "../../src/adapters/hono/index.ts";
import { authz, newChain, nodeServerClientAddress } from "../../src/index.ts";

/** One raw request; answers the status line. */
function statusLine(port: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () =>
      socket.write(`GET /hello HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
    );
    let data = "";
    socket.on("data", (chunk) => {
      data += chunk;
    });
    socket.on("end", () => resolve(data.split("\r\n")[0] ?? ""));
    socket.on("error", reject);
  });
}

describe("the Hono adapter on @hono/node-server", () => {
  it("answers a GET whose Host the URL parser refuses as the app alone would, reporting nothing", async () => {
    const reported: unknown[] = [];
    const app = new Hono();
    app.use(
      "*",
      honoMiddleware(
        newChain({
          authorization: authz.routes([authz.anyRequest().permitAll()]),
          clientAddress: nodeServerClientAddress,
          onError: (error) => reported.push(error),
        }),
      ),
    );
    app.get("/hello", (c) => c.text("hi"));
    let close = () => {};
    const port = await new Promise<number>((resolve) => {
      const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
        resolve((info as AddressInfo).port),
      );
      close = () => server.close();
    });
    try {
      // A GET has no body to read for overrides: the chain never makes node-server build its Request.
      for (const host of ["999.1.1.1", "xn--a"])
        expect(await statusLine(port, host), host).toBe("HTTP/1.1 200 OK");
      expect(reported).toEqual([]);
    } finally {
      close();
    }
  });
});
