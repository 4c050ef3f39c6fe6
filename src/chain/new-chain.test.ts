import { describe, expect, it, vi } from "vitest";
import { decorating } from "../../test/support/legs.ts";
import { routes } from "../authz/routes.ts";
import { anyRequest, match } from "../authz/rules.ts";
import { ANONYMOUS, authenticationFrom } from "../core/authentication.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { FetchHandler, Handler, Middleware } from "../core/handler.ts";
import { csrf } from "../csrf/csrf.ts";
import { passwordCredentials } from "../login/credentials.ts";
import { LoginEndpoint } from "../login/endpoint.ts";
import { login } from "../login/login.ts";
import { sessionFrom } from "../session/session.ts";
import { MemorySessionStore } from "../session/session-store.ts";
import { sessions } from "../session/sessions.ts";
import { Chain } from "./chain.ts";
import { newChain, newHandler, type SecurityOptions } from "./new-chain.ts";

const permitAll = routes([anyRequest().permitAll()]);
const ok: FetchHandler = () => new Response("ok");

function recording(name: string, log: string[]): Middleware {
  return (next) =>
    async (request, ...rest) => {
      log.push(name);
      return next(request, ...rest);
    };
}

function throwing(error: unknown): Middleware {
  return () => async () => {
    throw error;
  };
}

/** Sets a marker header on whatever the rest of the chain answers. */
const markerHeaders = decorating({ "x-marker": "headers-leg" });

async function expectBare500(response: Response, ...secrets: string[]): Promise<void> {
  expect(response.status).toBe(500);
  expect(response.headers.get("content-type")).toBe("application/problem+json");
  const text = await response.text();
  expect(JSON.parse(text)).toEqual({
    type: "about:blank",
    title: "Internal Server Error",
    status: 500,
  });
  expect(text).not.toMatch(/at |\.ts|stack/);
  for (const secret of secrets) expect(text).not.toContain(secret);
}

describe("newChain / newHandler: options", () => {
  it("throws InvalidOptionsError without an authorization leg", () => {
    expect(() => newChain({} as SecurityOptions)).toThrow(InvalidOptionsError);
    expect(() => newHandler(ok, {} as SecurityOptions)).toThrow(InvalidOptionsError);
    expect(() =>
      newChain({ headers: (next: Handler) => next } as unknown as SecurityOptions),
    ).toThrow(InvalidOptionsError);
  });

  it("throws InvalidOptionsError without an options object", () => {
    expect(() => newChain(undefined as unknown as SecurityOptions)).toThrow(InvalidOptionsError);
    expect(() => newChain(null as unknown as SecurityOptions)).toThrow(InvalidOptionsError);
  });

  it.each(["headers", "cors", "rateLimit", "session", "csrf", "login", "authorization"])(
    "throws InvalidOptionsError when the %s leg is not a function",
    (name) => {
      const options = {
        authorization: permitAll,
        session: (next: Handler) => next,
        [name]: "not a middleware",
      } as unknown as SecurityOptions;
      expect(() => newChain(options)).toThrow(InvalidOptionsError);
    },
  );

  it("throws InvalidOptionsError for an authorization leg of null", () => {
    expect(() => newChain({ authorization: null as unknown as Middleware })).toThrow(
      InvalidOptionsError,
    );
  });

  it.each([1, {}, true])(
    "throws InvalidOptionsError when authentication is neither a middleware nor a list (%j)",
    (value) => {
      expect(() =>
        newChain({ authorization: permitAll, authentication: value as unknown as Middleware }),
      ).toThrow(InvalidOptionsError);
    },
  );

  it("throws InvalidOptionsError when an authenticator in the list is not a function", () => {
    expect(() =>
      newChain({
        authorization: permitAll,
        authentication: [(next) => next, undefined as unknown as Middleware],
      }),
    ).toThrow(InvalidOptionsError);
  });

  it("throws InvalidOptionsError for a login leg without the session or CSRF leg", () => {
    const endpoint = login({ credentials: passwordCredentials({ findUser: () => undefined }) });
    expect(() => newChain({ authorization: permitAll, session: false, login: endpoint })).toThrow(
      InvalidOptionsError,
    );
    expect(() => newChain({ authorization: permitAll, csrf: false, login: endpoint })).toThrow(
      InvalidOptionsError,
    );
    expect(newChain({ authorization: permitAll, login: endpoint })).toBeInstanceOf(Chain);
  });

  it("takes only what login() built in the login slot, and login() is no middleware", () => {
    const endpoint = login({ credentials: passwordCredentials({ findUser: () => undefined }) });
    expect(typeof endpoint).toBe("object");
    expect(() => new Chain(endpoint as unknown as Middleware)).toThrow(TypeError);
    const middleware: Middleware = (next) => next;
    const forged = Object.create(LoginEndpoint.prototype) as LoginEndpoint;
    for (const value of [middleware, forged, {}]) {
      expect(() =>
        newChain({ authorization: permitAll, login: value as unknown as LoginEndpoint }),
      ).toThrow(InvalidOptionsError);
    }
  });

  it("leaves GET /csrf to the application when there is no session leg, never a 500", async () => {
    const handler = newHandler(() => new Response("the app's own /csrf"), {
      authorization: permitAll,
      session: false,
    });
    const response = await handler(new Request("https://h/csrf"));
    expect(response.status).toBe(200);
    await expect(response.text()).resolves.toBe("the app's own /csrf");
  });

  it("keeps the CSRF leg without sessions: cross-site browser posts are still refused", async () => {
    const handler = newHandler(ok, { authorization: permitAll, session: false });
    const forged = await handler(
      new Request("https://h/transfer", {
        method: "POST",
        headers: { "sec-fetch-site": "cross-site", origin: "https://evil.example" },
      }),
    );
    expect(forged.status).toBe(403);
    const trusted = newHandler(ok, {
      authorization: permitAll,
      session: false,
      csrf: csrf({ trustedOrigins: ["https://app.example"] }),
    });
    const allowed = await trusted(
      new Request("https://h/transfer", {
        method: "POST",
        headers: { "sec-fetch-site": "cross-site", origin: "https://app.example" },
      }),
    );
    expect(allowed.status).toBe(200);
  });

  it("throws InvalidOptionsError when newHandler gets no handler function", () => {
    expect(() =>
      newHandler(undefined as unknown as FetchHandler, { authorization: permitAll }),
    ).toThrow(InvalidOptionsError);
  });

  it("returns a Chain that is not a thenable", async () => {
    const chain = newChain({ authorization: permitAll });
    expect(chain).toBeInstanceOf(Chain);
    expect(await chain).toBe(chain);
  });
});

describe("newChain / newHandler: legs on by default", () => {
  it("sends the security headers, binds a session and checks CSRF with only authorization given", async () => {
    let session: unknown;
    const handler = newHandler(
      (request) => {
        session = sessionFrom(request);
        return new Response("ok");
      },
      { authorization: permitAll },
    );
    const response = await handler(new Request("https://h/"));
    expect(response.status).toBe(200);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(session).toBeDefined();
    // A cross-site form post is refused before the handler.
    const forged = await handler(
      new Request("https://h/transfer", {
        method: "POST",
        headers: { "sec-fetch-site": "cross-site", origin: "https://evil.example" },
      }),
    );
    expect(forged.status).toBe(403);
    // So is a request that rides on a session cookie without a token.
    const store = new MemorySessionStore();
    const withStore = newHandler(ok, { authorization: permitAll, session: sessions({ store }) });
    const id = "a".repeat(43);
    await store.create(id, { data: {}, createdAt: Date.now(), lastAccessAt: Date.now() }, 60_000);
    const riding = await withStore(
      new Request("https://h/transfer", {
        method: "POST",
        headers: { cookie: `__Host-portcullis-session=${id}` },
      }),
    );
    expect(riding.status).toBe(403);
  });

  it("leaves out the legs turned off with false", async () => {
    let session: unknown = "unset";
    const handler = newHandler(
      (request) => {
        session = sessionFrom(request);
        return new Response("ok");
      },
      { authorization: permitAll, headers: false, session: false, csrf: false },
    );
    const response = await handler(new Request("https://h/"));
    expect(response.headers.get("x-content-type-options")).toBeNull();
    expect(session).toBeUndefined();
    const post = await handler(
      new Request("https://h/transfer", {
        method: "POST",
        headers: { "sec-fetch-site": "cross-site", origin: "https://evil.example" },
      }),
    );
    expect(post.status).toBe(200);
  });
});

describe("newChain / newHandler: order", () => {
  it("runs the legs as headers, cors, rateLimit, session, authentication, csrf, login, authorization", async () => {
    const log: string[] = [];
    const handler = newHandler(
      () => {
        log.push("handler");
        return new Response("ok");
      },
      {
        // Given in a different order on purpose: the chain, not the object, fixes the order.
        authorization: recording("authorization", log),
        login: new LoginEndpoint(recording("login", log)),
        csrf: recording("csrf", log),
        authentication: [recording("authentication-1", log), recording("authentication-2", log)],
        session: recording("session", log),
        rateLimit: recording("rateLimit", log),
        cors: recording("cors", log),
        headers: recording("headers", log),
      },
    );
    const response = await handler(new Request("http://h/"));
    expect(response.status).toBe(200);
    expect(log).toEqual([
      "headers",
      "cors",
      "rateLimit",
      "session",
      "authentication-1",
      "authentication-2",
      "csrf",
      "login",
      "authorization",
      "handler",
    ]);
  });

  it("accepts a single authenticator as well as a list", async () => {
    const log: string[] = [];
    const handler = newHandler(ok, {
      authentication: recording("only", log),
      authorization: permitAll,
    });
    await handler(new Request("http://h/"));
    expect(log).toEqual(["only"]);
  });

  it("offers the same order through newChain().wrap and newChain().middleware", async () => {
    const log: string[] = [];
    const options: SecurityOptions = {
      headers: recording("headers", log),
      session: recording("session", log),
      authorization: recording("authorization", log),
    };
    await newChain(options).wrap(ok)(new Request("http://h/"));
    await newChain(options).middleware(async () => new Response(""))(new Request("http://h/"));
    expect(log).toEqual([
      "headers",
      "session",
      "authorization",
      "headers",
      "session",
      "authorization",
    ]);
  });

  it("binds the anonymous principal before the first leg after headers and CORS runs", async () => {
    const seen: unknown[] = [];
    const handler = newHandler(ok, {
      rateLimit:
        (next) =>
        async (request, ...rest) => {
          seen.push(authenticationFrom(request));
          return next(request, ...rest);
        },
      authorization: permitAll,
    });
    await handler(new Request("http://h/"));
    expect(seen).toEqual([ANONYMOUS]);
  });

  it("passes extra runtime arguments to every leg and to the handler", async () => {
    const env = { name: "env" };
    const seen: unknown[] = [];
    const spy: Middleware =
      (next) =>
      async (request, ...rest) => {
        seen.push(rest[0]);
        return next(request, ...rest);
      };
    const handler = newHandler(
      (_request, ...rest) => {
        seen.push(rest[0]);
        return new Response("ok");
      },
      { headers: spy, session: spy, authorization: permitAll },
    );
    await handler(new Request("http://h/"), env);
    expect(seen).toEqual([env, env, env]);
  });

  it("lets a denying authorization leg stop the request before the handler", async () => {
    const downstream = vi.fn(ok);
    const handler = newHandler(downstream, {
      authorization: routes([match("/public/**").permitAll()]),
    });
    const response = await handler(new Request("http://h/private"));
    expect(response.status).toBe(401);
    expect(downstream).not.toHaveBeenCalled();
  });
});

describe("newChain / newHandler: refused paths", () => {
  it("answers 400 before any leg after headers and CORS runs, and the 400 carries their headers", async () => {
    const log: string[] = [];
    const downstream = vi.fn(ok);
    const handler = newHandler(downstream, {
      headers: markerHeaders,
      cors: recording("cors", log),
      rateLimit: recording("rateLimit", log),
      session: recording("session", log),
      authorization: recording("authorization", log),
    });
    const request = new Request("http://h/admin%2fx");
    const response = await handler(request);
    expect(response.status).toBe(400);
    expect(response.headers.get("x-marker")).toBe("headers-leg");
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(log).toEqual(["cors"]);
    expect(downstream).not.toHaveBeenCalled();
  });

  it("answers 400 even when the authorization leg would permit everything", async () => {
    const handler = newHandler(ok, { authorization: permitAll });
    expect((await handler(new Request("http://h/a/%2e%2e%2fb"))).status).toBe(400);
  });
});

describe("newChain / newHandler: errors", () => {
  it("answers a bare 500 when the handler throws, and hands the error to onError", async () => {
    const boom = new Error("database password is hunter2");
    const onError = vi.fn();
    const handler = newHandler(
      () => {
        throw boom;
      },
      { authorization: permitAll, onError },
    );
    const request = new Request("http://h/");
    const response = await handler(request);
    await expectBare500(response, "hunter2", "database");
    expect(onError).toHaveBeenCalledTimes(1);
    expect(onError).toHaveBeenCalledWith(boom, request);
  });

  it("answers a bare 500 when the handler rejects asynchronously", async () => {
    const onError = vi.fn();
    const handler = newHandler(
      async () => {
        await Promise.resolve();
        throw new Error("async secret");
      },
      { authorization: permitAll, onError },
    );
    await expectBare500(await handler(new Request("http://h/")), "async secret");
    expect(onError).toHaveBeenCalledTimes(1);
  });

  it.each(["cors", "rateLimit", "session", "csrf", "login", "authorization"] as const)(
    "answers a bare 500 when the %s leg throws, and hands the error to onError",
    async (name) => {
      const boom = new Error(`leg ${name} leaked secret`);
      const onError = vi.fn();
      const downstream = vi.fn(ok);
      const leg = throwing(boom);
      const handler = newHandler(downstream, {
        authorization: permitAll,
        session: (next) => next,
        [name]: name === "login" ? new LoginEndpoint(leg) : leg,
        onError,
      });
      await expectBare500(await handler(new Request("http://h/")), "leaked secret");
      expect(onError).toHaveBeenCalledWith(boom, expect.any(Request));
      expect(downstream).not.toHaveBeenCalled();
    },
  );

  it("answers a bare 500 when a leg throws synchronously", async () => {
    const onError = vi.fn();
    const sync: Middleware = () => () => {
      throw new Error("sync secret");
    };
    const handler = newHandler(ok, { authorization: permitAll, cors: sync, onError });
    await expectBare500(await handler(new Request("http://h/")), "sync secret");
    expect(onError).toHaveBeenCalledTimes(1);
  });

  it("answers a bare 500 when an authenticator throws", async () => {
    const onError = vi.fn();
    const handler = newHandler(ok, {
      authorization: permitAll,
      authentication: throwing(new Error("authenticator secret")),
      onError,
    });
    await expectBare500(await handler(new Request("http://h/")), "authenticator secret");
    expect(onError).toHaveBeenCalledTimes(1);
  });

  it("answers a bare 500 for a thrown non-Error value", async () => {
    const onError = vi.fn();
    const handler = newHandler(
      () => {
        throw "raw string secret";
      },
      { authorization: permitAll, onError },
    );
    await expectBare500(await handler(new Request("http://h/")), "raw string secret");
    expect(onError).toHaveBeenCalledWith("raw string secret", expect.any(Request));
  });

  it("still answers 500 when onError itself throws", async () => {
    const handler = newHandler(
      () => {
        throw new Error("first");
      },
      {
        authorization: permitAll,
        onError: () => {
          throw new Error("logger down");
        },
      },
    );
    await expectBare500(await handler(new Request("http://h/")), "first", "logger down");
  });

  it("lets the 500 pass through the headers leg", async () => {
    const handler = newHandler(
      () => {
        throw new Error("x");
      },
      { authorization: permitAll, headers: markerHeaders, onError: () => {} },
    );
    const response = await handler(new Request("http://h/"));
    expect(response.status).toBe(500);
    expect(response.headers.get("x-marker")).toBe("headers-leg");
  });

  it("answers a bare 500 when the headers leg throws, and hands the error to onError", async () => {
    const boom = new Error("headers leg secret");
    const onError = vi.fn();
    const handler = newHandler(ok, { authorization: permitAll, headers: throwing(boom), onError });
    const response = await handler(new Request("http://h/")).catch((error: unknown) => error);
    expect(response).toBeInstanceOf(Response);
    await expectBare500(response as Response, "headers leg secret");
    expect(onError).toHaveBeenCalledWith(boom, expect.any(Request));
  });

  it("calls console.error by default", async () => {
    const spy = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const boom = new Error("default logger");
      const handler = newHandler(
        () => {
          throw boom;
        },
        { authorization: permitAll },
      );
      expect((await handler(new Request("http://h/"))).status).toBe(500);
      expect(spy).toHaveBeenCalledWith(expect.any(String), boom);
    } finally {
      spy.mockRestore();
    }
  });
});
