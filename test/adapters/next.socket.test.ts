/**
 * The Next.js adapters against a real `next start` server: the fixture app in
 * test/fixtures/next-app, built once (and again only when its sources or
 * src/ changed). The proxy (`nextMiddleware`) guards /admin and everything
 * else; route handlers under /api run the chain themselves (`withChain`).
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type NextServer, startNext } from "../next-server.ts";
import { call } from "./client.ts";
import { basic } from "./kit.ts";

const APP = fileURLToPath(new URL("../fixtures/next-app", import.meta.url));

let server: NextServer | undefined;
let base = "";

async function hits(): Promise<number> {
  const response = await call(base, "/public/count");
  return ((await response.json()) as { hits: number }).hits;
}

beforeAll(async () => {
  server = await startNext(APP, "/public/count");
  base = server.base;
}, 240_000);

afterAll(async () => {
  await server?.stop();
});

const SPOOFED_SUBREQUEST = [
  "middleware",
  "proxy",
  "src/middleware",
  "src/proxy",
  "middleware:middleware:middleware:middleware:middleware",
  "proxy:proxy:proxy:proxy:proxy",
  "src/middleware:src/middleware:src/middleware:src/middleware:src/middleware",
  "pages/_middleware",
];

const FORGED_PRINCIPAL: Record<string, string>[] = [
  {
    "x-middleware-override-headers": "authorization",
    "x-middleware-request-authorization": basic("ada"),
  },
  { "x-middleware-next": "1" },
  { "x-user": "ada", "x-principal": "ada", "x-portcullis-principal": "ada" },
  { "x-forwarded-user": "ada", "x-remote-user": "ada", "remote-user": "ada" },
];

function expectLegHeaders(response: Response): void {
  const cookies = response.headers.getSetCookie();
  expect(cookies).toContain("leg-a=1; Path=/");
  expect(cookies).toContain("leg-b=2; Path=/");
  expect(response.headers.get("x-content-type-options")).toBe("nosniff");
}

describe("Next.js adapters on a real next start server", () => {
  it("denies anonymous callers and unknown paths before Next routes anything", async () => {
    const before = await hits();
    for (const path of ["/admin/x", "/nothing/here", "/api/me", "/api/admin"]) {
      const response = await call(base, path);
      expect(response.status, path).toBe(401);
      expect(response.headers.get("content-type")).toBe("application/problem+json");
      expectLegHeaders(response);
    }
    const forbidden = await call(base, "/admin/x", { headers: { authorization: basic("uma") } });
    expect(forbidden.status).toBe(403);
    expect(await hits()).toBe(before);
  });

  it("lets permitted callers through the proxy and into withChain routes", async () => {
    const before = await hits();
    const admin = await call(base, "/admin/x", { headers: { authorization: basic("ada") } });
    expect(admin.status).toBe(200);
    expect(await admin.text()).toBe("admin area");
    expectLegHeaders(admin);
    const me = await call(base, "/api/me", { headers: { authorization: basic("sam") } });
    expect(await me.json()).toEqual({ name: "sam", authorities: ["STAFF"] });
    expect(await hits()).toBe(before + 2);
  });

  it.each(SPOOFED_SUBREQUEST)("skips nothing for x-middleware-subrequest: %s", async (value) => {
    const before = await hits();
    for (const path of ["/admin/x", "/api/admin", "/api/me", "/nothing/here"]) {
      const response = await call(base, path, { headers: { "x-middleware-subrequest": value } });
      expect(response.status, path).toBe(401);
    }
    const user = await call(base, "/api/admin", {
      headers: { "x-middleware-subrequest": value, authorization: basic("uma") },
    });
    expect(user.status).toBe(403);
    expect(await hits()).toBe(before);
  });

  it.each(FORGED_PRINCIPAL)("accepts no principal from request headers (%o)", async (headers) => {
    const before = await hits();
    for (const path of ["/admin/x", "/api/admin", "/api/me"]) {
      expect((await call(base, path, { headers })).status, path).toBe(401);
    }
    expect(await hits()).toBe(before);
  });

  it("gives each of 200 concurrent callers their own principal in a withChain route", async () => {
    const names = Array.from({ length: 200 }, (_, i) => `user${i}`);
    const seen = await Promise.all(
      names.map(async (name) => {
        const response = await call(base, "/api/me", { headers: { authorization: basic(name) } });
        return ((await response.json()) as { name: string }).name;
      }),
    );
    expect(seen).toEqual(names);
  });

  it("keeps every Set-Cookie separate on 200s, Next's own 404 and denials", async () => {
    const cases: [string, number, Record<string, string>][] = [
      ["/public/hello", 200, {}],
      ["/api/me", 200, { authorization: basic("uma") }],
      ["/public/nothing", 404, {}],
      ["/nothing/here", 401, {}],
      ["/api/admin", 403, { authorization: basic("uma") }],
    ];
    for (const [path, status, headers] of cases) {
      const response = await call(base, path, { headers });
      expect(response.status, path).toBe(status);
      expectLegHeaders(response);
      await response.arrayBuffer();
    }
  });

  it("answers 500 without running the route when a leg throws before next", async () => {
    const before = await hits();
    for (const path of ["/public/hello", "/api/me"]) {
      const response = await call(base, path, {
        headers: { "x-test-throw": "before", authorization: basic("ada") },
      });
      expect(response.status, path).toBe(500);
      expect(await response.text()).not.toMatch(/failed|stack/);
    }
    expect(await hits()).toBe(before);
  });

  it("keeps a withChain route's streamed response streaming", async () => {
    const started = performance.now();
    const response = await call(base, "/api/stream", { headers: { authorization: basic("uma") } });
    expect(response.status).toBe(200);
    expectLegHeaders(response);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    const firstAt = performance.now() - started;
    let text = new TextDecoder().decode(first.value);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toBe("first\nsecond\n");
    // The route pauses 1.5 s between its chunks; a buffered answer would arrive after it.
    expect(firstAt).toBeLessThan(1_000);
  });

  it("hands a withChain route the request body", async () => {
    const response = await call(base, "/api/echo", {
      method: "POST",
      headers: { authorization: basic("ada"), "content-type": "application/json" },
      body: JSON.stringify({ a: [1, 2] }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ name: "ada", body: { a: [1, 2] } });
  });
});
