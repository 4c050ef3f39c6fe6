import Koa from "koa";
import { afterEach, describe, expect, it } from "vitest";
import { decorating } from "../../../test/support/legs.ts";
import { serveListener, type TestServer } from "../../../test/support/listen.ts";
import type { Middleware } from "../../core/handler.ts";
import { koaMiddleware } from "./index.ts";

let served: TestServer | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

const decorate = decorating({ "x-frame-options": "DENY" }, ["a=1", "b=2"]);

function app(...middleware: Koa.Middleware[]): Koa {
  const koa = new Koa();
  koa.silent = true;
  for (const mw of middleware) koa.use(mw);
  return koa;
}

describe("koaMiddleware", () => {
  it("keeps the legs' headers on Koa's error answer when the downstream throws", async () => {
    served = await serveListener(
      app(koaMiddleware(decorate), () => {
        throw new Error("route failed");
      }).callback(),
    );
    const response = await fetch(served.url);
    expect(response.status).toBe(500);
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
  });

  it("leaves a shared thrown error as it was, so no request's headers reach another", async () => {
    const notFound = Object.assign(new Error("not found"), { status: 404, expose: true });
    const perRequest: Middleware =
      (next) =>
      async (request, ...rest) => {
        const response = await next(request, ...rest);
        response.headers.set("access-control-allow-origin", request.headers.get("origin") ?? "");
        return response;
      };
    served = await serveListener(
      app(koaMiddleware(perRequest), () => {
        throw notFound;
      }).callback(),
    );
    for (const origin of ["https://a.example", "https://b.example"]) {
      const response = await fetch(served.url, { headers: { origin } });
      expect(response.status).toBe(404);
      expect(response.headers.get("access-control-allow-origin")).toBe(origin);
    }
    expect((notFound as { headers?: unknown }).headers).toBeUndefined();
  });

  it("keeps a bodiless answer's status (Koa would turn a null body into 204)", async () => {
    const redirect: Middleware = () => async () =>
      new Response(null, { status: 303, headers: { location: "/next" } });
    served = await serveListener(app(koaMiddleware(redirect)).callback());
    const response = await fetch(served.url, { redirect: "manual" });
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/next");
  });

  it("writes the chain's streamed answer with its own content type and never calls next", async () => {
    let ran = 0;
    const answer: Middleware = () => async () =>
      new Response(new Blob(["streamed"]).stream(), {
        status: 429,
        headers: { "content-type": "application/problem+json", "retry-after": "5" },
      });
    served = await serveListener(
      app(koaMiddleware(answer), (ctx) => {
        ran++;
        ctx.body = "ran";
      }).callback(),
    );
    const response = await fetch(served.url);
    expect(response.status).toBe(429);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(await response.text()).toBe("streamed");
    expect(ran).toBe(0);
  });
});
