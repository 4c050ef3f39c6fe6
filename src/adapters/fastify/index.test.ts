import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { decorating } from "../../../test/support/legs.ts";
import { requireAuthenticated, requireRole } from "../../authz/require.ts";
import { Chain } from "../../chain/chain.ts";
import {
  bindAuthentication,
  createAuthentication,
  mustAuthentication,
} from "../../core/authentication.ts";
import type { Middleware } from "../../core/handler.ts";
import { fastifyHook, fastifyPortcullis } from "./index.ts";

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

const signIn: Middleware =
  (next) =>
  async (request, ...rest) => {
    const name = request.headers.get("x-user");
    if (name !== null)
      bindAuthentication(
        request,
        createAuthentication(name, name === "ada" ? ["ADMIN"] : ["USER"]),
      );
    return next(request, ...rest);
  };
const decorate = decorating({ "x-leg": "1" }, ["a=1", "b=2"]);

describe("fastifyPortcullis", () => {
  it("covers routes of plugins registered later and Fastify's own 404", async () => {
    let ran = 0;
    app = Fastify();
    await app.register(fastifyPortcullis, {
      chain: new Chain(decorate, signIn, requireAuthenticated()),
    });
    await app.register(async (child) => {
      child.get("/child", async (request) => {
        ran++;
        return { name: mustAuthentication(request).name };
      });
    });
    const denied = await app.inject({ url: "/child" });
    expect(denied.statusCode).toBe(401);
    expect(ran).toBe(0);
    const allowed = await app.inject({ url: "/child", headers: { "x-user": "uma" } });
    expect(allowed.json()).toEqual({ name: "uma" });
    const missing = await app.inject({ url: "/nothing", headers: { "x-user": "uma" } });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers["x-leg"]).toBe("1");
    expect(missing.headers["set-cookie"]).toEqual(["a=1", "b=2"]);
  });

  it("refuses to register without a chain", async () => {
    app = Fastify();
    await expect(app.register(fastifyPortcullis, {} as never).ready()).rejects.toThrow(/chain/);
  });
});

describe("fastifyHook", () => {
  it("guards one route through its onRequest option, literally", async () => {
    app = Fastify();
    await app.register(fastifyPortcullis, { chain: signIn });
    app.get("/staff", { onRequest: fastifyHook(requireRole("STAFF")) }, async () => "staff");
    app.get("/open", async () => "open");
    expect((await app.inject({ url: "/staff", headers: { "x-user": "ada" } })).statusCode).toBe(
      403,
    );
    expect((await app.inject({ url: "/open", headers: { "x-user": "ada" } })).body).toBe("open");
  });

  it("puts back a body the chain read, for Fastify's own parser, also under inject", async () => {
    const peek: Middleware =
      (next) =>
      async (request, ...rest) => {
        const text = await request.clone().text();
        return text.includes("forbidden")
          ? new Response("no", { status: 403 })
          : next(request, ...rest);
      };
    app = Fastify();
    await app.register(fastifyPortcullis, { chain: peek });
    app.post("/echo", async (request) => request.body);
    const ok = await app.inject({ method: "POST", url: "/echo", payload: { a: [1, 2] } });
    expect(ok.json()).toEqual({ a: [1, 2] });
    const denied = await app.inject({ method: "POST", url: "/echo", payload: { a: "forbidden" } });
    expect(denied.statusCode).toBe(403);
  });

  it("denies injected uploads without touching what the stand-in socket lacks", async () => {
    // Only a real connection lingers after an early answer; inject's socket is a stand-in.
    app = Fastify();
    await app.register(fastifyPortcullis, { chain: requireAuthenticated() });
    app.post("/x", async () => "x");
    for (let i = 0; i < 50; i++) {
      const denied = await app.inject({
        method: "POST",
        url: "/x",
        payload: { a: "x".repeat(100_000) },
      });
      expect(denied.statusCode).toBe(401);
    }
    // A wrong close would throw from the stand-in's events once its body ends.
    await new Promise((resolve) => setTimeout(resolve, 100));
  });

  it("answers a denied HEAD without a body", async () => {
    app = Fastify();
    await app.register(fastifyPortcullis, { chain: requireAuthenticated() });
    app.get("/x", async () => "x");
    const response = await app.inject({ method: "HEAD", url: "/x" });
    expect(response.statusCode).toBe(401);
    expect(response.body).toBe("");
  });
});
