import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type Context, Hono } from "hono";
import { mustAuthentication, sessionFrom } from "portcullis";
import { honoMiddleware } from "../../../src/adapters/hono/index.ts";
import { toNodeListener } from "../../../src/adapters/node/index.ts";
import { type Kit, listen, type Served, slowChunks } from "../kit.ts";

function app(kit: Kit, mountChain: boolean): Hono {
  const app = new Hono();
  if (mountChain) app.use("*", honoMiddleware(kit.chain));
  app.use("/literal/*", honoMiddleware(kit.literalGuard));
  app.use("/scoped/*", honoMiddleware(kit.scopedGuard));
  const named = (c: Context) => {
    kit.hit();
    return c.json({ name: mustAuthentication(c).name });
  };
  app.get("/public/hello", (c) => {
    kit.hit();
    return c.text("hello");
  });
  app.get("/public/limited", (c) => {
    kit.hit();
    return c.text("ok");
  });
  app.get("/public/stream", (c) => {
    kit.hit();
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        for await (const chunk of slowChunks(kit)) controller.enqueue(encoder.encode(chunk));
        controller.close();
      },
    });
    return c.body(body, 200, { "content-type": "text/plain" });
  });
  app.get("/public/route-header", (c) => {
    kit.hit();
    c.header("x-frame-options", "DENY");
    c.header("x-leg", "route");
    return c.text("route");
  });
  app.post("/public/session", async (c) => {
    kit.hit();
    const session = sessionFrom(c);
    session?.set("saved", true);
    await session?.save();
    return c.json({ saved: session !== undefined });
  });
  app.get("/me", named);
  app.get("/literal/x", named);
  app.get("/scoped/x", named);
  app.get("/child/x", named);
  app.get("/admin/x", (c) => {
    kit.hit();
    return c.json({ area: "admin", name: mustAuthentication(c).name });
  });
  app.post("/api/echo", async (c) => {
    kit.hit();
    const type = c.req.header("content-type") ?? "";
    const body = type.startsWith("application/json") ? await c.req.json() : await c.req.parseBody();
    return c.json({ name: mustAuthentication(c).name, body });
  });
  app.get("/boom", (c) => {
    kit.hit();
    return c.text("boom");
  });
  return app;
}

/** `app.use("*", honoMiddleware(chain))`, served by @hono/node-server. */
export function startHonoMiddleware(kit: Kit): Promise<Served> {
  const hono = app(kit, true);
  return new Promise((resolve) => {
    const server = serve(
      { fetch: hono.fetch, port: 0, hostname: "127.0.0.1" },
      (info: AddressInfo) => {
        resolve({
          url: `http://127.0.0.1:${info.port}`,
          close: () =>
            new Promise<void>((done) => {
              (server as { closeAllConnections?: () => void }).closeAllConnections?.();
              server.close(() => done());
            }),
        });
      },
    );
  });
}

/** The chain wrapping `app.fetch` (the Fetch-native pattern), served by `toNodeListener`. */
export function startHonoFetch(kit: Kit): Promise<Served> {
  const hono = app(kit, false);
  return listen(createServer(toNodeListener(kit.chain.wrap(hono.fetch))));
}
