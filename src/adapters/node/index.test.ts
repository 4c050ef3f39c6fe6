import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { serveListener, type TestServer } from "../../../test/support/listen.ts";
import { requireAuthenticated } from "../../authz/require.ts";
import { Chain } from "../../chain/chain.ts";
import {
  bindAuthentication,
  createAuthentication,
  mustAuthentication,
} from "../../core/authentication.ts";
import { PEER_ADDRESS } from "../../core/client-address.ts";
import { contextFrom } from "../../core/context.ts";
import type { Middleware } from "../../core/handler.ts";
import { nodeListener, serveFetch, toNodeListener } from "./index.ts";

let served: TestServer | undefined;
let server: Server | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

const signIn: Middleware =
  (next) =>
  async (request, ...rest) => {
    if (request.headers.get("x-user") === "ada")
      bindAuthentication(request, createAuthentication("ada", ["ADMIN"]));
    return next(request, ...rest);
  };

describe("nodeListener", () => {
  it("runs the listener once, after the chain, with the principal bound to req", async () => {
    const listener = vi.fn((req, res) => res.end(mustAuthentication(req).name));
    served = await serveListener(nodeListener(new Chain(signIn, requireAuthenticated()), listener));
    const denied = await fetch(served.url);
    expect(denied.status).toBe(401);
    expect(listener).not.toHaveBeenCalled();
    const allowed = await fetch(served.url, { headers: { "x-user": "ada" } });
    expect(await allowed.text()).toBe("ada");
    expect(listener).toHaveBeenCalledOnce();
  });

  it("answers 500 when an async listener rejects before writing", async () => {
    const onError = vi.fn();
    served = await serveListener(
      nodeListener(
        signIn,
        async () => {
          throw new Error("route failed");
        },
        { onError },
      ),
    );
    const response = await fetch(served.url);
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain("route failed");
    expect(onError).toHaveBeenCalledOnce();
  });
});

describe("toNodeListener and serveFetch", () => {
  it("serves a Fetch handler with the request body, the peer address and a streamed answer", async () => {
    let peer: string | undefined;
    served = await serveListener(
      toNodeListener(async (request) => {
        peer = contextFrom(request).get(PEER_ADDRESS);
        const text = await request.text();
        return new Response(`${request.method} ${new URL(request.url).pathname} ${text}`, {
          headers: [
            ["set-cookie", "a=1"],
            ["set-cookie", "b=2"],
          ],
        });
      }),
    );
    const response = await fetch(`${served.url}/p?q=1`, { method: "POST", body: "hello" });
    expect(await response.text()).toBe("POST /p hello");
    expect(response.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(peer).toBe("127.0.0.1");
  });

  it("answers 500 without details when the handler throws", async () => {
    served = await serveListener(
      toNodeListener(
        async () => {
          throw new Error("secret");
        },
        { onError: () => {} },
      ),
    );
    const response = await fetch(served.url);
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain("secret");
  });

  it("listens on a free loopback port", async () => {
    server = await serveFetch(async () => new Response("up"), { port: 0 });
    const { port, address } = server.address() as AddressInfo;
    expect(address).toBe("127.0.0.1");
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe("up");
  });
});
