import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { serveListener, type TestServer } from "../../../test/support/listen.ts";
import { routes } from "../../authz/routes.ts";
import { anyRequest, match } from "../../authz/rules.ts";
import { newChain } from "../../chain/new-chain.ts";
import {
  bindAuthentication,
  createAuthentication,
  mustAuthentication,
} from "../../core/authentication.ts";
import type { Middleware } from "../../core/handler.ts";
import { expressMiddleware } from "./index.ts";

let served: TestServer | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

const signIn: Middleware =
  (next) =>
  async (request, ...rest) => {
    if (request.headers.get("x-user") === "uma")
      bindAuthentication(request, createAuthentication("uma", ["USER"]));
    return next(request, ...rest);
  };

describe("expressMiddleware", () => {
  it("decides on req.originalUrl when mounted under a path", async () => {
    const chain = newChain({
      authentication: signIn,
      authorization: routes([match("/api/admin/**").denyAll(), anyRequest().permitAll()]),
    });
    const app = express();
    // Mounted at /api, Express strips the prefix from req.url; the chain must still see /api/admin.
    app.use("/api", expressMiddleware(chain));
    app.get("/api/admin/x", (_req, res) => res.send("admin"));
    served = await serveListener(app);
    expect((await fetch(`${served.url}/api/admin/x`)).status).toBe(401);
  });

  it("calls next exactly once and lets later middleware see the principal", async () => {
    const seen: string[] = [];
    const app = express();
    app.use(expressMiddleware(signIn));
    app.use((req, _res, next) => {
      seen.push(mustAuthentication(req).name);
      next();
    });
    app.get("/", (_req, res) => res.send("ok"));
    served = await serveListener(app);
    await fetch(served.url, { headers: { "x-user": "uma" } });
    expect(seen).toEqual(["uma"]);
  });

  it("stays up, and never runs the route, when something else answered while the chain ran", async () => {
    let ran = 0;
    const slow: Middleware =
      (next) =>
      async (request, ...rest) => {
        await new Promise((resolve) => setTimeout(resolve, 120));
        const response = await next(request, ...rest);
        response.headers.set("x-frame-options", "DENY");
        return response;
      };
    const app = express();
    // What a request-timeout middleware does: answer first, and let the rest run on.
    app.use((_req, res, next) => {
      setTimeout(() => {
        if (!res.headersSent) res.status(503).send("timed out");
      }, 30);
      next();
    });
    app.use(expressMiddleware(slow));
    app.get("/", (_req, res) => {
      ran++;
      res.send("ok");
    });
    served = await serveListener(app);
    expect((await fetch(served.url)).status).toBe(503);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Still serving: the late pass neither threw out of the process nor ran the route.
    expect((await fetch(served.url)).status).toBe(503);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(ran).toBe(0);
  });

  it("answers a denied HEAD without a body and never calls next", async () => {
    let ran = 0;
    const deny: Middleware = () => async () => new Response("no", { status: 403 });
    const app = express();
    app.use(expressMiddleware(deny));
    app.use((_req, res) => {
      ran++;
      res.send("ran");
    });
    served = await serveListener(app);
    const response = await fetch(served.url, { method: "HEAD" });
    expect(response.status).toBe(403);
    expect(await response.text()).toBe("");
    expect(ran).toBe(0);
  });
});
