import { NextRequest } from "next/server.js";
import { describe, expect, it, vi } from "vitest";
import { routes } from "../../authz/routes.ts";
import { anyRequest, match } from "../../authz/rules.ts";
import { newChain } from "../../chain/new-chain.ts";
import {
  bindAuthentication,
  createAuthentication,
  mustAuthentication,
} from "../../core/authentication.ts";
import type { Middleware } from "../../core/handler.ts";
import { nextMiddleware, withChain } from "./index.ts";

const signIn: Middleware =
  (next) =>
  async (request, ...rest) => {
    if (request.headers.get("authorization") === "Bearer ada")
      bindAuthentication(request, createAuthentication("ada", ["ADMIN"]));
    return next(request, ...rest);
  };
const decorate: Middleware =
  (next) =>
  async (request, ...rest) => {
    const response = await next(request, ...rest);
    const copy = new Response(response.body, response);
    copy.headers.set("x-frame-options", "DENY");
    copy.headers.append("set-cookie", "a=1; Path=/");
    copy.headers.append("set-cookie", "b=2; Path=/");
    return copy;
  };
const chain = newChain({
  headers: decorate,
  authentication: signIn,
  authorization: routes([match("/public/**").permitAll(), anyRequest().hasRole("ADMIN")]),
  onError: () => {},
});

const request = (path: string, headers: Record<string, string> = {}) =>
  new NextRequest(`https://app.example${path}`, { headers });

describe("nextMiddleware", () => {
  it("lets Next go on, carrying the legs' headers and every cookie separately", async () => {
    const response = await nextMiddleware(chain)(request("/public/x"));
    expect(response.headers.get("x-middleware-next")).toBe("1");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.getSetCookie()).toEqual(["a=1; Path=/", "b=2; Path=/"]);
    expect(response.body).toBeNull();
  });

  it("answers a denial itself, with the legs' headers", async () => {
    const response = await nextMiddleware(chain)(request("/admin"));
    expect(response.status).toBe(401);
    expect(response.headers.has("x-middleware-next")).toBe(false);
    expect(response.headers.getSetCookie()).toHaveLength(2);
  });

  it("never lets a leg steer Next through its control headers", async () => {
    const steer: Middleware = (next) => async (req) => {
      const response = await next(req);
      const copy = new Response(response.body, response);
      copy.headers.set("x-middleware-rewrite", "https://evil.example/");
      copy.headers.set("x-middleware-override-headers", "authorization");
      return copy;
    };
    const passed = await nextMiddleware(steer)(request("/x"));
    expect(passed.headers.has("x-middleware-rewrite")).toBe(false);
    expect(passed.headers.has("x-middleware-override-headers")).toBe(false);
    const denied = await nextMiddleware(() => async () => {
      return new Response("no", { status: 403, headers: { "x-middleware-next": "1" } });
    })(request("/x"));
    expect(denied.status).toBe(403);
    expect(denied.headers.has("x-middleware-next")).toBe(false);
  });

  it("does not go on when a leg calls next and then answers on its own", async () => {
    const overrule: Middleware = (next) => async (req) => {
      await next(req);
      return new Response("overruled", { status: 403 });
    };
    const response = await nextMiddleware(overrule)(request("/x"));
    expect(response.status).toBe(403);
    expect(response.headers.has("x-middleware-next")).toBe(false);
  });

  it("answers a bare 500 when a leg throws", async () => {
    const onError = vi.fn();
    const response = await nextMiddleware(
      () => async () => {
        throw new Error("secret");
      },
      { onError },
    )(request("/x"));
    expect(response.status).toBe(500);
    expect(await response.text()).not.toContain("secret");
    expect(onError).toHaveBeenCalledOnce();
  });
});

describe("withChain", () => {
  it("runs the handler only when the chain passes, with the principal on its request", async () => {
    const handler = vi.fn((req: NextRequest, context: { params: Promise<{ id: string }> }) =>
      context.params.then(({ id }) => Response.json({ name: mustAuthentication(req).name, id })),
    );
    const route = withChain(chain, handler);
    const params = { params: Promise.resolve({ id: "7" }) };
    const denied = await route(request("/api/x"), params);
    expect(denied.status).toBe(401);
    expect(handler).not.toHaveBeenCalled();
    const allowed = await route(request("/api/x", { authorization: "Bearer ada" }), params);
    expect(await allowed.json()).toEqual({ name: "ada", id: "7" });
    expect(allowed.headers.getSetCookie()).toHaveLength(2);
  });

  it("trusts no request header for the principal, x-middleware-subrequest included", async () => {
    const handler = vi.fn(() => new Response("ran"));
    const route = withChain(chain, handler);
    const forged = await route(
      request("/api/x", {
        "x-middleware-subrequest": "middleware:middleware:middleware:middleware:middleware",
        "x-middleware-override-headers": "authorization",
        "x-middleware-request-authorization": "Bearer ada",
        "x-user": "ada",
      }),
      {},
    );
    expect(forged.status).toBe(401);
    expect(handler).not.toHaveBeenCalled();
  });

  it("answers a bare 500 when the chain throws outside its own guard", async () => {
    const route = withChain(
      () => async () => {
        throw new Error("secret");
      },
      () => new Response("ran"),
      { onError: () => {} },
    );
    const response = await route(request("/x"), {});
    expect(response.status).toBe(500);
  });
});
