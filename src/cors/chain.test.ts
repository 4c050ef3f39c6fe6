import { describe, expect, it, vi } from "vitest";
import { anyRequest, match, routes } from "../authz/index.ts";
import { newHandler } from "../chain/index.ts";
import { bindAuthentication, createAuthentication } from "../core/authentication.ts";
import type { FetchHandler, Middleware } from "../core/handler.ts";
import { problemResponse } from "../core/problem.ts";
import { cspNonce, securityHeaders } from "../headers/index.ts";
import { cors } from "./index.ts";

// Headers and CORS composed with the rest of the chain: the two legs sit outermost, so every
// answer a later leg gives (401, 403, 429, 400, 500) and every preflight answer carries them.

const APP = "https://app.example.com";
const API = "https://api.example.com";

const SECURITY_HEADERS = [
  "content-security-policy",
  "strict-transport-security",
  "x-content-type-options",
  "x-frame-options",
  "referrer-policy",
  "cross-origin-opener-policy",
  "cross-origin-resource-policy",
  "origin-agent-cluster",
  "x-dns-prefetch-control",
  "x-permitted-cross-domain-policies",
  "x-xss-protection",
];

function expectSecurityHeaders(res: Response): void {
  for (const name of SECURITY_HEADERS) expect(res.headers.has(name), name).toBe(true);
  expect(res.headers.get("x-frame-options")).toBe("SAMEORIGIN");
}

function expectReadableByApp(res: Response): void {
  expect(res.headers.get("access-control-allow-origin")).toBe(APP);
  expect(res.headers.get("access-control-allow-credentials")).toBe("true");
  expect(res.headers.get("access-control-expose-headers")).toBe("Retry-After, WWW-Authenticate");
  expect(res.headers.get("vary")).toContain("Origin");
}

/** A stand-in rate-limit leg: refuses requests carrying `x-flood`. */
const floodGate: Middleware =
  (next) =>
  async (request, ...rest) =>
    request.headers.has("x-flood")
      ? problemResponse(429, { headers: { "retry-after": "30" } })
      : next(request, ...rest);

/** A stand-in authenticator: `x-user: name:ROLE` signs the request in. */
const headerLogin: Middleware =
  (next) =>
  async (request, ...rest) => {
    const user = request.headers.get("x-user");
    if (user !== null) {
      const [name, role] = user.split(":");
      bindAuthentication(request, createAuthentication(name ?? "", role ? [role] : []));
    }
    return next(request, ...rest);
  };

function app(handler?: FetchHandler) {
  const downstream = vi.fn<FetchHandler>(
    handler ?? ((request) => new Response(`hello ${cspNonce(request) ?? ""}`)),
  );
  const handle = newHandler(downstream, {
    headers: securityHeaders({ contentSecurityPolicy: { nonce: true } }),
    cors: cors({
      origin: [APP],
      credentials: true,
      exposedHeaders: ["Retry-After", "WWW-Authenticate"],
    }),
    rateLimit: floodGate,
    authentication: headerLogin,
    authorization: routes([
      match("GET", "/public/**").permitAll(),
      match("/admin/**").hasRole("ADMIN"),
      match("/boom").permitAll(),
      anyRequest().authenticated(),
    ]),
  });
  return { handle, downstream };
}

function get(path: string, headers: Record<string, string> = {}, method = "GET"): Request {
  return new Request(`${API}${path}`, { method, headers });
}

describe("security headers and CORS through newHandler", () => {
  it("200: both legs decorate the handler's answer; the nonce reaches the handler", async () => {
    const { handle } = app();
    const res = await handle(get("/public/x", { origin: APP }));
    expect(res.status).toBe(200);
    expectSecurityHeaders(res);
    expectReadableByApp(res);
    const nonce = (await res.text()).slice("hello ".length);
    expect(nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(res.headers.get("content-security-policy")).toContain(`'nonce-${nonce}'`);
  });

  it("401 to an allowed origin: readable, with WWW-Authenticate and every security header", async () => {
    const { handle, downstream } = app();
    const res = await handle(get("/private", { origin: APP }));
    expect(res.status).toBe(401);
    expect(downstream).not.toHaveBeenCalled();
    expect(res.headers.get("www-authenticate")).toBeTruthy();
    expectReadableByApp(res);
    expectSecurityHeaders(res);
  });

  it("403 to an allowed origin: readable, with every security header", async () => {
    const { handle, downstream } = app();
    const res = await handle(get("/admin/panel", { origin: APP, "x-user": "sam:STAFF" }));
    expect(res.status).toBe(403);
    expect(downstream).not.toHaveBeenCalled();
    expectReadableByApp(res);
    expectSecurityHeaders(res);
  });

  it("429 to an allowed origin: readable, Retry-After exposed, every security header", async () => {
    const { handle, downstream } = app();
    const res = await handle(get("/public/x", { origin: APP, "x-flood": "1" }));
    expect(res.status).toBe(429);
    expect(downstream).not.toHaveBeenCalled();
    expect(res.headers.get("retry-after")).toBe("30");
    expectReadableByApp(res);
    expectSecurityHeaders(res);
  });

  it("401 to a refused origin: no CORS header, but Vary and the security headers", async () => {
    const { handle } = app();
    const res = await handle(get("/private", { origin: "https://app.example.com.evil.net" }));
    expect(res.status).toBe(401);
    expect(res.headers.has("access-control-allow-origin")).toBe(false);
    expect(res.headers.has("access-control-allow-credentials")).toBe(false);
    expect(res.headers.get("vary")).toBe("Origin");
    expectSecurityHeaders(res);
  });

  it("400 for an ambiguous path carries the security headers", async () => {
    const { handle, downstream } = app();
    const res = await handle(get("/public/a%2F..%2Fadmin", { origin: APP }));
    expect(res.status).toBe(400);
    expect(downstream).not.toHaveBeenCalled();
    expectSecurityHeaders(res);
  });

  it("500 from a throwing handler carries the security headers", async () => {
    const { handle } = app(() => {
      throw new Error("secret detail");
    });
    const onError = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const res = await handle(get("/boom"));
      expect(res.status).toBe(500);
      expectSecurityHeaders(res);
      expect(await res.text()).not.toContain("secret detail");
    } finally {
      onError.mockRestore();
    }
  });

  it("an allowed preflight is answered 204 before authorization, with security headers", async () => {
    const { handle, downstream } = app();
    const res = await handle(
      get(
        "/private",
        {
          origin: APP,
          "access-control-request-method": "PUT",
          "access-control-request-headers": "content-type",
        },
        "OPTIONS",
      ),
    );
    expect(res.status).toBe(204); // default-deny would have answered 401
    expect(downstream).not.toHaveBeenCalled();
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    expect(res.headers.get("access-control-allow-credentials")).toBe("true");
    expect(res.headers.get("access-control-allow-methods")).toContain("PUT");
    expectSecurityHeaders(res);
  });

  it("a refused preflight is a 403 problem with security headers, never reaching the handler", async () => {
    const { handle, downstream } = app();
    const res = await handle(
      get("/public/x", { origin: "null", "access-control-request-method": "GET" }, "OPTIONS"),
    );
    expect(res.status).toBe(403);
    expect(downstream).not.toHaveBeenCalled();
    expect(res.headers.has("access-control-allow-origin")).toBe(false);
    expect(res.headers.get("vary")).toContain("Origin");
    expectSecurityHeaders(res);
  });

  it("a bare OPTIONS goes on to authorization (denied by default) and stays readable", async () => {
    const { handle, downstream } = app();
    const res = await handle(get("/private", { origin: APP }, "OPTIONS"));
    expect(res.status).toBe(401);
    expect(downstream).not.toHaveBeenCalled();
    expectReadableByApp(res);
    expectSecurityHeaders(res);
  });

  it("a non-CORS request gets Vary: Origin and no CORS headers", async () => {
    const { handle } = app();
    const res = await handle(get("/public/x"));
    expect(res.status).toBe(200);
    expect(res.headers.get("vary")).toBe("Origin");
    expect(res.headers.has("access-control-allow-origin")).toBe(false);
    expectSecurityHeaders(res);
  });

  it("a handler's immutable redirect is decorated by both legs", async () => {
    const { handle } = app(() => Response.redirect(`${API}/public/next`, 303));
    const res = await handle(get("/public/x", { origin: APP }));
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`${API}/public/next`);
    expectReadableByApp(res);
    expectSecurityHeaders(res);
  });
});
