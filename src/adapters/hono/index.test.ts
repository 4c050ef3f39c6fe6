import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { decorating } from "../../../test/support/legs.ts";
import { requireAuthenticated, requireRole } from "../../authz/require.ts";
import { routes } from "../../authz/routes.ts";
import { anyRequest } from "../../authz/rules.ts";
import { Chain } from "../../chain/chain.ts";
import { newChain, newHandler } from "../../chain/new-chain.ts";
import {
  type Authentication,
  bindAuthentication,
  createAuthentication,
  mustAuthentication,
} from "../../core/authentication.ts";
import type { Middleware } from "../../core/handler.ts";
import { honoMiddleware } from "./index.ts";

const PRINCIPALS: Record<string, Authentication> = {
  uma: createAuthentication("uma", ["USER"]),
  ada: createAuthentication("ada", ["ADMIN"]),
};

/** A test authenticator: the `x-user` header names the principal. */
const fromHeader: Middleware =
  (next) =>
  async (request, ...rest) => {
    const principal = PRINCIPALS[request.headers.get("x-user") ?? ""];
    if (principal !== undefined) bindAuthentication(request, principal);
    return next(request, ...rest);
  };

const get = (path: string, user?: string) =>
  new Request(`http://h${path}`, { headers: user === undefined ? {} : { "x-user": user } });

describe("honoMiddleware", () => {
  it("stops Hono's chain when the middleware answers", async () => {
    let ran = 0;
    const app = new Hono();
    app.use("*", honoMiddleware(requireAuthenticated()));
    app.get("/x", (c) => {
      ran++;
      return c.text("secret");
    });
    const response = await app.fetch(get("/x"));
    expect(response.status).toBe(401);
    expect(await response.text()).not.toContain("secret");
    expect(ran).toBe(0);
  });

  it("binds the context to c when the middleware passes, so mustAuthentication(c) works", async () => {
    const app = new Hono();
    app.use("*", honoMiddleware(new Chain(fromHeader, requireAuthenticated())));
    app.get("/me", (c) => c.text(mustAuthentication(c).name));
    const response = await app.fetch(get("/me", "uma"));
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("uma");
  });

  it("resumes Hono exactly once", async () => {
    let ran = 0;
    const app = new Hono();
    app.use("*", honoMiddleware(new Chain(fromHeader, requireAuthenticated())));
    app.get("/x", (c) => {
      ran++;
      return c.text("ok");
    });
    expect((await app.fetch(get("/x", "uma"))).status).toBe(200);
    expect(ran).toBe(1);
  });

  it("refuses to resume Hono a second time", async () => {
    let ran = 0;
    const twice: Middleware =
      (next) =>
      async (request, ...rest) => {
        await next(request, ...rest);
        return next(request, ...rest);
      };
    const errors: unknown[] = [];
    const app = new Hono();
    app.onError((error, c) => {
      errors.push(error);
      return c.text("failed", 500);
    });
    app.use("*", honoMiddleware(twice));
    app.get("/x", (c) => {
      ran++;
      return c.text("ok");
    });
    const response = await app.fetch(get("/x"));
    expect(response.status).toBe(500);
    expect(ran).toBe(1);
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toMatch(/next was called twice/);
  });

  it("keeps headers a leg adds to the downstream response", async () => {
    const decorate = decorating({ "x-frame-options": "DENY" });
    const app = new Hono();
    app.use("*", honoMiddleware(decorate));
    app.get("/x", (c) => c.text("ok"));
    const response = await app.fetch(get("/x"));
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(await response.text()).toBe("ok");
  });

  it("sends a decorated copy when a leg replaces the downstream response", async () => {
    const replace: Middleware =
      (next) =>
      async (request, ...rest) => {
        const response = await next(request, ...rest);
        const copy = new Response(response.body, response);
        copy.headers.set("x-copied", "yes");
        return copy;
      };
    const app = new Hono();
    app.use("*", honoMiddleware(replace));
    app.get("/x", (c) => c.text("body"));
    const response = await app.fetch(get("/x"));
    expect(response.headers.get("x-copied")).toBe("yes");
    expect(await response.text()).toBe("body");
  });

  it("keeps a leg's cookies when it replaces a response that already sets cookies", async () => {
    const replace: Middleware =
      (next) =>
      async (request, ...rest) => {
        const response = await next(request, ...rest);
        const copy = new Response(response.body, response);
        copy.headers.append("set-cookie", "leg=1");
        return copy;
      };
    const app = new Hono();
    app.use("*", honoMiddleware(replace));
    app.get("/x", (c) => {
      c.header("set-cookie", "route=1", { append: true });
      return c.text("ok");
    });
    const response = await app.fetch(get("/x"));
    expect(response.headers.getSetCookie()).toEqual(["route=1", "leg=1"]);
  });

  it("hands Hono's env to the middleware", async () => {
    const env = { DB: "binding" };
    const seen: unknown[] = [];
    const app = new Hono();
    app.use("*", honoMiddleware(recordingArgument(0, seen)));
    app.get("/x", (c) => c.text("ok"));
    await app.fetch(get("/x"), env);
    expect(seen).toEqual([env]);
    expect(seen[0]).toBe(env);
  });

  it("hands the execution context on when the runtime passes one, and costs no stack when not", async () => {
    const seen: unknown[] = [];
    const app = new Hono();
    app.use("*", honoMiddleware(recordingArgument(1, seen)));
    app.get("/x", (c) => c.text("ok"));
    const executionCtx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
    const limit = Error.stackTraceLimit;
    await app.fetch(get("/x"), {}, executionCtx);
    await app.fetch(get("/x"), {});
    expect(seen).toEqual([executionCtx, undefined]);
    expect(Error.stackTraceLimit).toBe(limit);
  });

  it("accepts a whole security chain", async () => {
    let ran = 0;
    const app = new Hono();
    app.use(
      "*",
      honoMiddleware(
        newChain({
          authentication: fromHeader,
          authorization: routes([anyRequest().authenticated()]),
        }),
      ),
    );
    app.get("/x", (c) => {
      ran++;
      return c.text(mustAuthentication(c).name);
    });
    expect((await app.fetch(get("/x"))).status).toBe(401);
    expect(ran).toBe(0);
    const response = await app.fetch(get("/x", "ada"));
    expect(await response.text()).toBe("ada");
  });

  it("puts the chain's fields on what the route answers, its own fields first, immutable or not", async () => {
    const app = new Hono();
    app.use("*", honoMiddleware(newChain({ authorization: routes([anyRequest().permitAll()]) })));
    app.get("/own", (c) => {
      c.header("x-frame-options", "DENY");
      c.header("set-cookie", "route=1", { append: true });
      return c.text("ok");
    });
    app.get("/away", () => Response.redirect("https://example.test/next", 303));
    const own = await app.fetch(get("/own"));
    expect(own.headers.get("x-frame-options")).toBe("DENY");
    expect(own.headers.get("x-content-type-options")).toBe("nosniff");
    expect(own.headers.getSetCookie()).toEqual(["route=1"]);
    expect(await own.text()).toBe("ok");
    const away = await app.fetch(get("/away"));
    expect(away.status).toBe(303);
    expect(away.headers.get("location")).toBe("https://example.test/next");
    expect(away.headers.get("x-content-type-options")).toBe("nosniff");
  });
});

describe("route-group guards behind newHandler(app.fetch)", () => {
  function build() {
    const app = new Hono();
    const literal = new Hono();
    literal.use("*", honoMiddleware(requireRole("STAFF")));
    literal.get("/x", (c) => c.text(`literal ${mustAuthentication(c).name}`));
    app.route("/literal", literal);

    const scoped = new Hono();
    scoped.use(
      "*",
      honoMiddleware(
        routes([anyRequest().hasRole("STAFF")], { hierarchy: "ADMIN > STAFF > USER" }),
      ),
    );
    scoped.get("/x", (c) => c.text(`scoped ${mustAuthentication(c).name}`));
    app.route("/scoped", scoped);

    app.get("/me", (c) => c.text(mustAuthentication(c).name));
    return newHandler(app.fetch, {
      authentication: fromHeader,
      authorization: routes([anyRequest().authenticated()]),
    });
  }

  it("reads the chain's principal from c without an adapter", async () => {
    const response = await build()(get("/me", "uma"));
    expect(await response.text()).toBe("uma");
  });

  it("keeps requireRole literal: an ADMIN is denied by requireRole('STAFF')", async () => {
    expect((await build()(get("/literal/x", "ada"))).status).toBe(403);
  });

  it("applies the hierarchy in a scoped rule set: an ADMIN passes hasRole('STAFF')", async () => {
    const handler = build();
    const response = await handler(get("/scoped/x", "ada"));
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("scoped ada");
    expect((await handler(get("/scoped/x", "uma"))).status).toBe(403);
  });
});

/** Middleware that records the runtime argument at `index` after the request, then passes. */
function recordingArgument(index: number, into: unknown[]): Middleware {
  return (next) =>
    async (request, ...rest) => {
      into.push(rest[index]);
      return next(request, ...rest);
    };
}
