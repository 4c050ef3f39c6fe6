import { describe, expect, it, vi } from "vitest";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { CORS_DEFAULTS, type CorsOptions, cors } from "./index.ts";

const APP = "https://app.example.com";

function setup(options: CorsOptions, handler?: Handler) {
  const downstream = vi.fn<Handler>(handler ?? (async () => new Response("ok")));
  const leg = cors(options)(downstream);
  return { leg, downstream };
}

function request(
  headers: Record<string, string>,
  method = "GET",
  url = "https://api.example.com/things",
): Request {
  return new Request(url, { method, headers });
}

function preflight(origin: string, method = "PUT", requestHeaders?: string): Request {
  const headers: Record<string, string> = { origin, "access-control-request-method": method };
  if (requestHeaders !== undefined) headers["access-control-request-headers"] = requestHeaders;
  return request(headers, "OPTIONS");
}

const CORS_HEADERS = [
  "access-control-allow-origin",
  "access-control-allow-credentials",
  "access-control-allow-methods",
  "access-control-allow-headers",
  "access-control-expose-headers",
  "access-control-max-age",
];

function expectNoCorsHeaders(res: Response): void {
  for (const name of CORS_HEADERS) expect(res.headers.has(name), name).toBe(false);
}

const LOOKALIKES = [
  "https://app.example.com.evil.net",
  "https://evil-app.example.com",
  "https://evilapp.example.com",
  "https://sub.app.example.com",
  "https://app.example.co",
  "https://app.example.com:8443",
  "https://app.example.com:443",
  "http://app.example.com",
  "null",
  "NULL",
  "",
  "https://app.example.com/",
  "https://app.example.com/path",
  "https://user@app.example.com",
  "https://app.example.com, https://evil.net",
  "https://app.example.com%2eevil.net",
  "app.example.com",
  "*",
];

describe("cors: options validated at build time", () => {
  const bad: [string, unknown][] = [
    ["no options", undefined],
    ["no origin", {}],
    ['"*" with credentials', { origin: "*", credentials: true }],
    ['"*" inside a list', { origin: ["*"] }],
    ["an empty list", { origin: [] }],
    ["a path", { origin: "https://app.example.com/app" }],
    ["a query", { origin: "https://app.example.com?x" }],
    ["the default port", { origin: "https://app.example.com:443" }],
    ["userinfo", { origin: "https://u@app.example.com" }],
    ["null", { origin: "null" }],
    ["no scheme", { origin: "app.example.com" }],
    ["a non-http scheme", { origin: "ftp://app.example.com" }],
    ["a file URL", { origin: "file:///etc" }],
    ["a wildcard subdomain", { origin: "https://*.example.com" }],
    ["a host with odd characters", { origin: "https://a!b.example" }],
    ["an IDN host not in punycode", { origin: "https://bücher.example" }],
    ["a non-string origin", { origin: [42] }],
    ["an origin with CRLF", { origin: "https://a.test\r\nx: y" }],
    ["a credentials string", { origin: APP, credentials: "true" }],
    ["allowedHeaders * with credentials", { origin: APP, credentials: true, allowedHeaders: "*" }],
    ["exposedHeaders * with credentials", { origin: APP, credentials: true, exposedHeaders: "*" }],
    ["a bad header name", { origin: APP, allowedHeaders: ["x-ok", "bad header"] }],
    ["a CRLF header name", { origin: APP, exposedHeaders: ["x\r\ny"] }],
    ["no methods", { origin: APP, methods: [] }],
    ["a bad method", { origin: APP, methods: ["GET POST"] }],
    ["TRACE", { origin: APP, methods: ["trace"] }],
    ["CONNECT", { origin: APP, methods: ["CONNECT"] }],
    ["a negative maxAge", { origin: APP, maxAge: -1 }],
    ["a fractional maxAge", { origin: APP, maxAge: 1.5 }],
    ["an unknown option", { origin: APP, allowCredentials: true }],
  ];

  it.each(bad)("throws InvalidOptionsError: %s", (_label, options) => {
    expect(() => cors(options as CorsOptions)).toThrow(InvalidOptionsError);
  });

  it("accepts IP literals, ports and punycode hosts", () => {
    expect(() =>
      cors({
        origin: ["http://127.0.0.1:8080", "http://[::1]:5173", "https://xn--bcher-kva.example"],
      }),
    ).not.toThrow();
  });

  it("accepts a function with credentials, and exports its defaults", () => {
    expect(() => cors({ origin: () => false, credentials: true })).not.toThrow();
    expect(CORS_DEFAULTS).toEqual({
      credentials: false,
      methods: ["GET", "HEAD", "PUT", "PATCH", "POST", "DELETE"],
      allowedHeaders: ["Content-Type", "Authorization", "X-CSRF-Token"],
      exposedHeaders: [],
      maxAge: 600,
    });
  });
});

describe("cors: actual requests", () => {
  it("gives an allowed origin its exact origin, credentials and exposed headers", async () => {
    const { leg, downstream } = setup({
      origin: ["https://other.example", APP],
      credentials: true,
      exposedHeaders: ["X-Request-Id", "RateLimit"],
    });
    const res = await leg(request({ origin: APP }));
    expect(downstream).toHaveBeenCalledOnce();
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    expect(res.headers.get("access-control-allow-credentials")).toBe("true");
    expect(res.headers.get("access-control-expose-headers")).toBe("X-Request-Id, RateLimit");
    expect(res.headers.get("vary")).toBe("Origin");
    expect(res.headers.has("access-control-allow-methods")).toBe(false);
    expect(await res.text()).toBe("ok");
  });

  it("sends no credentials header when credentials are off", async () => {
    const { leg } = setup({ origin: APP });
    const res = await leg(request({ origin: APP }));
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    expect(res.headers.has("access-control-allow-credentials")).toBe(false);
    expect(res.headers.has("access-control-expose-headers")).toBe(false);
  });

  it("compares scheme and host ignoring case, answering the canonical origin", async () => {
    const { leg } = setup({ origin: "https://App.Example.com", credentials: true });
    const res = await leg(request({ origin: "HTTPS://APP.EXAMPLE.COM" }));
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
  });

  it("matches a non-default port only when configured with it", async () => {
    const { leg } = setup({ origin: "http://localhost:5173" });
    const ok = await leg(request({ origin: "http://localhost:5173" }));
    expect(ok.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
    const other = await leg(request({ origin: "http://localhost:3000" }));
    expect(other.headers.has("access-control-allow-origin")).toBe(false);
  });

  it.each(LOOKALIKES)(
    "refuses lookalike origin %j but lets the request continue",
    async (origin) => {
      const { leg, downstream } = setup({ origin: APP, credentials: true });
      const res = await leg(request({ origin }));
      expect(downstream).toHaveBeenCalledOnce(); // CORS is not authorization
      expectNoCorsHeaders(res);
      expect(res.headers.get("vary")).toBe("Origin");
      expect(res.status).toBe(200);
    },
  );

  it("adds Vary: Origin to requests without Origin", async () => {
    const { leg } = setup({ origin: APP, credentials: true });
    const res = await leg(request({}));
    expectNoCorsHeaders(res);
    expect(res.headers.get("vary")).toBe("Origin");
  });

  it.each([
    ["Accept-Encoding", "Accept-Encoding, Origin"],
    ["accept-encoding, origin", "accept-encoding, origin"],
    ["Cookie,ORIGIN", "Cookie,ORIGIN"],
    ["*", "*"],
    ["", "Origin"],
  ])("appends to an existing Vary %j without duplicating", async (existing, expected) => {
    const { leg } = setup(
      { origin: APP },
      async () => new Response("x", { headers: { vary: existing } }),
    );
    for (const headers of [{ origin: APP }, { origin: "https://evil.net" }, {}] as Record<
      string,
      string
    >[]) {
      const res = await leg(request(headers));
      expect(res.headers.get("vary")).toBe(expected);
    }
  });

  it("leaves CORS headers the downstream set alone", async () => {
    const { leg } = setup(
      { origin: APP, credentials: true, exposedHeaders: ["x-a"] },
      async () =>
        new Response("x", {
          headers: {
            "access-control-allow-origin": "https://partner.example",
            "access-control-expose-headers": "x-b",
          },
        }),
    );
    const res = await leg(request({ origin: APP }));
    expect(res.headers.get("access-control-allow-origin")).toBe("https://partner.example");
    expect(res.headers.get("access-control-expose-headers")).toBe("x-b");
    expect(res.headers.get("access-control-allow-credentials")).toBe("true");
  });

  it("decorates an immutable downstream response", async () => {
    const redirect = Response.redirect("https://api.example.com/elsewhere", 307);
    const { leg } = setup({ origin: APP, credentials: true }, async () => redirect);
    const res = await leg(request({ origin: APP }));
    expect(res.status).toBe(307);
    expect(res.headers.get("location")).toBe("https://api.example.com/elsewhere");
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    expect(res.headers.get("vary")).toBe("Origin");
  });

  it("a bare OPTIONS (no Access-Control-Request-Method) goes on downstream", async () => {
    const { leg, downstream } = setup(
      { origin: APP },
      async () => new Response("allow", { status: 200 }),
    );
    const res = await leg(request({ origin: APP }, "OPTIONS"));
    expect(downstream).toHaveBeenCalledOnce();
    expect(await res.text()).toBe("allow");
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    expect(res.headers.has("access-control-allow-methods")).toBe(false);
  });

  it("an OPTIONS with Access-Control-Request-Method but no Origin goes on downstream", async () => {
    const { leg, downstream } = setup({ origin: APP });
    await leg(request({ "access-control-request-method": "PUT" }, "OPTIONS"));
    expect(downstream).toHaveBeenCalledOnce();
  });
});

describe("cors: preflight", () => {
  it("answers an allowed preflight with 204 and never calls the downstream", async () => {
    const { leg, downstream } = setup({ origin: APP, credentials: true, maxAge: 120 });
    const res = await leg(preflight(APP, "DELETE", "content-type,x-csrf-token"));
    expect(downstream).not.toHaveBeenCalled();
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    expect(res.headers.get("access-control-allow-credentials")).toBe("true");
    expect(res.headers.get("access-control-allow-methods")).toBe(
      "GET, HEAD, PUT, PATCH, POST, DELETE",
    );
    expect(res.headers.get("access-control-allow-headers")).toBe(
      "Content-Type, Authorization, X-CSRF-Token",
    );
    expect(res.headers.get("access-control-max-age")).toBe("120");
    expect(res.headers.get("vary")).toContain("Origin");
    expect(res.headers.get("vary")).toContain("Access-Control-Request-Method");
    expect(await res.text()).toBe("");
  });

  it.each(LOOKALIKES.filter((o) => o !== ""))(
    "refuses a preflight from %j with 403, without reaching the downstream",
    async (origin) => {
      const { leg, downstream } = setup({ origin: APP, credentials: true });
      const res = await leg(preflight(origin));
      expect(downstream).not.toHaveBeenCalled();
      expect(res.status).toBe(403);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      expectNoCorsHeaders(res);
      expect(res.headers.get("vary")).toContain("Origin");
      const body = await res.text();
      expect(body).not.toContain(origin === "null" ? "null," : origin || "§");
    },
  );

  it("compares the requested method case-sensitively: lower-case patch is refused", async () => {
    const { leg, downstream } = setup({ origin: APP });
    expect((await leg(preflight(APP, "patch"))).status).toBe(403);
    expect((await leg(preflight(APP, "PATCH"))).status).toBe(204);
    expect(downstream).not.toHaveBeenCalled();
  });

  it("upper-cases configured methods", async () => {
    const { leg } = setup({ origin: APP, methods: ["get", "Patch"] });
    const res = await leg(preflight(APP, "PATCH"));
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-methods")).toBe("GET, PATCH");
    expect((await leg(preflight(APP, "DELETE"))).status).toBe(403);
  });

  it("refuses a preflight asking for a header not allowed, ignoring case otherwise", async () => {
    const { leg } = setup({ origin: APP, allowedHeaders: ["Content-Type", "X-Api-Key"] });
    expect((await leg(preflight(APP, "POST", "X-API-KEY, content-type"))).status).toBe(204);
    expect((await leg(preflight(APP, "POST", "x-api-key,x-forwarded-for"))).status).toBe(403);
    expect((await leg(preflight(APP, "POST", "authorization"))).status).toBe(403);
    expect((await leg(preflight(APP, "POST", "x-api-key,,"))).status).toBe(204);
    expect((await leg(preflight(APP, "POST", "x api key"))).status).toBe(403);
  });

  it("with no allowed headers, sends no Access-Control-Allow-Headers", async () => {
    const { leg } = setup({ origin: APP, allowedHeaders: [] });
    const res = await leg(preflight(APP, "GET"));
    expect(res.status).toBe(204);
    expect(res.headers.has("access-control-allow-headers")).toBe(false);
    expect((await leg(preflight(APP, "GET", "content-type"))).status).toBe(403);
  });
});

describe('cors: origin "*"', () => {
  it("answers * to everyone, null included, and needs no Vary", async () => {
    const { leg } = setup({ origin: "*", exposedHeaders: "*" });
    for (const headers of [{ origin: APP }, { origin: "null" }, {}] as Record<string, string>[]) {
      const res = await leg(request(headers));
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(res.headers.get("access-control-expose-headers")).toBe("*");
      expect(res.headers.has("access-control-allow-credentials")).toBe(false);
      expect(res.headers.has("vary")).toBe(false);
    }
  });

  it("answers preflights with *, allowing any header when told to", async () => {
    const { leg, downstream } = setup({ origin: "*", allowedHeaders: "*" });
    const res = await leg(preflight("https://anyone.example", "PUT", "x-anything"));
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-headers")).toBe("*");
    expect(downstream).not.toHaveBeenCalled();
  });
});

describe("cors: origin function", () => {
  it("is asked with the origin and request, sync or async", async () => {
    const decide = vi.fn((origin: string, req: Request) =>
      Promise.resolve(origin.endsWith(".example.com") && req.url.startsWith("https://api.")),
    );
    const { leg } = setup({ origin: decide, credentials: true });
    const req = request({ origin: "https://tenant.example.com" });
    const res = await leg(req);
    expect(decide).toHaveBeenCalledWith("https://tenant.example.com", req);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://tenant.example.com");
    const refused = await leg(request({ origin: "https://tenant.example.net" }));
    expect(refused.headers.has("access-control-allow-origin")).toBe(false);
    expect(refused.headers.get("vary")).toBe("Origin");

    const sync = setup({ origin: (origin) => origin === APP });
    expect((await sync.leg(preflight(APP))).headers.get("access-control-allow-origin")).toBe(APP);
    expect((await sync.leg(preflight("https://x.example"))).status).toBe(403);
  });

  it("allows only on exactly true", async () => {
    for (const verdict of ["yes", 1, {}, "true"]) {
      const { leg } = setup({ origin: () => verdict as unknown as boolean });
      const res = await leg(request({ origin: APP }));
      expect(res.headers.has("access-control-allow-origin")).toBe(false);
      expect((await leg(preflight(APP))).status).toBe(403);
    }
  });

  it.each(["null", "", "https://a.test/path", "https://u@a.test", "garbage", "https://a.test x"])(
    "is never asked about %j",
    async (origin) => {
      const decide = vi.fn(() => true);
      const { leg } = setup({ origin: decide, credentials: true });
      const res = await leg(request({ origin }));
      expect(decide).not.toHaveBeenCalled();
      expect(res.headers.has("access-control-allow-origin")).toBe(false);
    },
  );

  it("runs before the downstream; if it throws, the downstream does not run", async () => {
    const boom = new Error("origin store down");
    const { leg, downstream } = setup({
      origin: async () => {
        throw boom;
      },
    });
    await expect(leg(request({ origin: APP }))).rejects.toBe(boom);
    expect(downstream).not.toHaveBeenCalled();
  });
});
