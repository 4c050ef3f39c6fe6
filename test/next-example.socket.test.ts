/**
 * The Next.js example (examples/next) on a real `next start` server: Basic
 * credentials, the proxy for pages, `withChain` in route handlers.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basicHeader } from "./helpers.ts";
import { type NextServer, startNext } from "./next-server.ts";

const APP = fileURLToPath(new URL("../examples/next", import.meta.url));
const ALICE = basicHeader("alice", "demo-alice"); // USER
const SAM = basicHeader("sam", "demo-sam"); // STAFF
const ADA = basicHeader("ada", "demo-ada"); // ADMIN

let server: NextServer | undefined;
const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${server?.base}${path}`, { headers, redirect: "manual" });

beforeAll(async () => {
  server = await startNext(APP, "/public/hello");
}, 240_000);

afterAll(async () => {
  await server?.stop();
});

describe("the Next.js example on next start", () => {
  it("lets anyone read /public/hello, with the security headers", async () => {
    const response = await get("/public/hello");
    expect(response.status).toBe(200);
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("answers GET / with 401 to anonymous callers and 200 to any signed-in user", async () => {
    const anonymous = await get("/");
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toMatch(/^Basic /);
    const alice = await get("/", { authorization: ALICE });
    expect(alice.status).toBe(200);
    await expect(alice.json()).resolves.toEqual({ name: "alice", authorities: ["USER"] });
  });

  it("keeps /admin/panel to ADMIN through the route's literal guard", async () => {
    expect((await get("/admin/panel")).status).toBe(401);
    expect((await get("/admin/panel", { authorization: ALICE })).status).toBe(403);
    expect((await get("/admin/panel", { authorization: SAM })).status).toBe(403);
    const ada = await get("/admin/panel", { authorization: ADA });
    expect(ada.status).toBe(200);
    await expect(ada.json()).resolves.toEqual({ area: "admin", name: "ada" });
  });

  it("runs the chain for OPTIONS to a chained route, which Next would otherwise answer itself", async () => {
    for (const path of ["/api/me", "/", "/admin/panel"]) {
      const anonymous = await fetch(`${server?.base}${path}`, { method: "OPTIONS" });
      expect(anonymous.status, path).toBe(401);
      expect(anonymous.headers.get("x-content-type-options"), path).toBe("nosniff");
    }
    const alice = await fetch(`${server?.base}/api/me`, {
      method: "OPTIONS",
      headers: { authorization: ALICE },
    });
    expect(alice.status).toBe(204);
    expect(alice.headers.get("allow")).toBe("GET, OPTIONS");
    expect(alice.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("denies paths without a route or a rule before Next routes them", async () => {
    expect((await get("/nothing/here")).status).toBe(401);
    expect((await get("/nothing/here", { authorization: ADA })).status).toBe(403);
    expect((await get("/admin/panel/deeper")).status).toBe(401);
  });

  it("never takes a principal from a spoofed subrequest header", async () => {
    const response = await get("/api/me", {
      "x-middleware-subrequest": "proxy:proxy:proxy:proxy:proxy",
    });
    expect(response.status).toBe(401);
    const sam = await get("/api/me", { authorization: SAM });
    expect(sam.status).toBe(200);
    await expect(sam.json()).resolves.toEqual({ name: "sam", authorities: ["STAFF"] });
  });
});
