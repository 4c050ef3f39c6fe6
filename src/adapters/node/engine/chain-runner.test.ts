import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { describe, expect, it, vi } from "vitest";
import { decorating } from "../../../../test/support/legs.ts";
import { requireRole } from "../../../authz/require.ts";
import { routes } from "../../../authz/routes.ts";
import { anyRequest } from "../../../authz/rules.ts";
import { Chain } from "../../../chain/chain.ts";
import { newChain } from "../../../chain/new-chain.ts";
import {
  authenticationFrom,
  bindAuthentication,
  createAuthentication,
} from "../../../core/authentication.ts";
import { PEER_ADDRESS } from "../../../core/client-address.ts";
import { bindContext, contextFrom } from "../../../core/context.ts";
import type { Middleware } from "../../../core/handler.ts";
import { outboxOf } from "../../../core/outbox.ts";
import { RAW_PATH } from "../../../core/path.ts";
import { onWarning, resetWarnings } from "../../../core/warning.ts";
import { chainRunner } from "./chain-runner.ts";

function pair(url = "/x", headers: Record<string, string> = {}) {
  const socket = new Socket();
  Object.defineProperty(socket, "remoteAddress", { value: "203.0.113.9" });
  const req = new IncomingMessage(socket);
  req.method = "GET";
  req.url = url;
  req.headers = { host: "app.example", ...headers };
  return { req, res: new ServerResponse(req) };
}

const decorate = decorating({ "x-leg": "1" }, ["a=1", "b=2"]);

const admin = createAuthentication("ada", ["ADMIN"]);
const signIn: Middleware =
  (next) =>
  async (request, ...rest) => {
    bindAuthentication(request, admin);
    return next(request, ...rest);
  };

describe("chainRunner", () => {
  it("passes with the legs' headers and binds the context to every native object", async () => {
    const { req, res } = pair("/a/b?q=1");
    const framework = {};
    const outcome = await chainRunner(new Chain(decorate, signIn))(req, res, "/a/b?q=1", [
      framework,
    ]);
    expect(outcome.passed).toBe(true);
    if (!outcome.passed) return;
    expect(outcome.headers.get("x-leg")).toBe("1");
    expect(outcome.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(authenticationFrom(req)).toBe(admin);
    expect(authenticationFrom(framework)).toBe(admin);
    expect(contextFrom(req).get(RAW_PATH)).toBe("/a/b");
    expect(contextFrom(req).get(PEER_ADDRESS)).toBe("203.0.113.9");
  });

  it("still passes when a leg answers with a copy of the pass-through response", async () => {
    const copy: Middleware = (next) => async (request) => {
      const response = await next(request);
      const copied = new Response(response.body, response);
      copied.headers.set("x-copied", "1");
      return copied;
    };
    const { req, res } = pair();
    const outcome = await chainRunner(copy)(req, res, "/x", []);
    expect(outcome.passed && outcome.headers.get("x-copied")).toBe("1");
  });

  it("does not go on when a leg calls next and then answers on its own", async () => {
    const overrule: Middleware = (next) => async (request) => {
      const response = await next(request);
      return new Response("overruled", { status: 403, headers: response.headers });
    };
    const { req, res } = pair();
    const outcome = await chainRunner(overrule)(req, res, "/x", []);
    expect(outcome.passed).toBe(false);
    if (outcome.passed) return;
    expect(outcome.response.status).toBe(403);
    expect(authenticationFrom(req)).toBeUndefined();
  });

  it("answers a bare 500 and reports when a leg throws, calls next twice or answers a non-Response", async () => {
    const legs: Middleware[] = [
      () => async () => {
        throw new Error("secret detail");
      },
      (next) => async (request) => {
        await next(request);
        return next(request);
      },
      () => async () => "not a response" as unknown as Response,
    ];
    for (const leg of legs) {
      const onError = vi.fn();
      const { req, res } = pair();
      const outcome = await chainRunner(leg, { onError })(req, res, "/x", []);
      expect(outcome.passed).toBe(false);
      if (outcome.passed) continue;
      expect(outcome.response.status).toBe(500);
      expect(await outcome.response.text()).not.toContain("secret");
      expect(onError).toHaveBeenCalledOnce();
    }
  });

  it("passes a leg that hands the request on without the runtime's argument; refuses one whose request lost its context", async () => {
    const { req, res } = pair();
    const dropsExtra: Middleware = (next) => async (request) => next(request);
    const passed = await chainRunner(dropsExtra)(req, res, "/x", []);
    expect(passed.passed).toBe(true);

    const onError = vi.fn();
    const other = pair();
    const fresh: Middleware = (next) => async (request) => next(new Request(request.url));
    const refused = await chainRunner(fresh, { onError })(other.req, other.res, "/x", []);
    expect(refused.passed).toBe(false);
    if (!refused.passed) expect(refused.response.status).toBe(500);
    expect(onError).toHaveBeenCalledOnce();
  });

  it("still answers 500 when the error reporter throws", async () => {
    const { req, res } = pair();
    const boom: Middleware = () => async () => {
      throw new Error("boom");
    };
    const outcome = await chainRunner(boom, {
      onError: () => {
        throw new Error("logger down");
      },
    })(req, res, "/x", []);
    expect(!outcome.passed && outcome.response.status).toBe(500);
  });

  it("answers 400 for a target or Host it cannot use safely", async () => {
    const run = chainRunner(signIn);
    const absolute = pair();
    const outcome = await run(absolute.req, absolute.res, "http://evil.example/x", []);
    expect(!outcome.passed && outcome.response.status).toBe(400);
    const host = pair("/x", { host: "evil.example/x" });
    const hosted = await run(host.req, host.res, "/x", []);
    expect(!hosted.passed && hosted.response.status).toBe(400);
  });

  it("carries a context an outer adapter bound into a guard's run", async () => {
    const guard = chainRunner(requireRole("ADMIN"));
    const outer = pair();
    const anonymous = await guard(outer.req, outer.res, "/x", []);
    expect(!anonymous.passed && anonymous.response.status).toBe(401);

    const inner = pair();
    bindContext(inner.req, contextFrom(await signedInRequest()));
    expect((await guard(inner.req, inner.res, "/x", [])).passed).toBe(true);
  });

  it("gives the whole chain's denials their own answer", async () => {
    const chain = newChain({
      authorization: routes([anyRequest().authenticated()]),
      onError: () => {},
    });
    const { req, res } = pair("/secret");
    const outcome = await chainRunner(chain)(req, res, "/secret", []);
    expect(!outcome.passed && outcome.response.status).toBe(401);
  });

  it("leaves the native response alone until a header is queued after the pass", async () => {
    const { req, res } = pair("/x");
    const own = () => [...Object.getOwnPropertyNames(res), ...Object.getOwnPropertySymbols(res)];
    const before = own();
    const outcome = await chainRunner(new Chain(decorate))(req, res, "/x", []);
    expect(outcome.passed).toBe(true);
    if (!outcome.passed) return;
    expect(own()).toEqual(before);
    expect(Object.hasOwn(res, "writeHead")).toBe(false);

    // A route saving a session queues its cookie now; the head written later carries it.
    outboxOf(outcome.request).setCookie("late=1");
    expect(Object.hasOwn(res, "writeHead")).toBe(true);
    outboxOf(outcome.request).setCookie("later=2");
    res.writeHead(200);
    expect(res.getHeader("set-cookie")).toEqual(["late=1", "later=2"]);
    expect(res.getHeader("cache-control")).toBe("no-store");
  });

  it("warns when a header is queued after the head was written", async () => {
    const { req, res } = pair("/x");
    const outcome = await chainRunner(new Chain(decorate))(req, res, "/x", []);
    if (!outcome.passed) throw new Error("expected a pass");
    const warnings: string[] = [];
    const previous = onWarning((warning) => warnings.push(warning.code));
    try {
      resetWarnings();
      res.writeHead(200);
      outboxOf(outcome.request).setCookie("late=1");
      expect(warnings).toEqual(["PORTCULLIS_LATE_HEADER_DROPPED"]);
      expect(Object.hasOwn(res, "writeHead")).toBe(false);
    } finally {
      onWarning(previous);
    }
  });
});

async function signedInRequest(): Promise<Request> {
  const request = new Request("http://app.example/x");
  bindAuthentication(request, admin);
  return request;
}
