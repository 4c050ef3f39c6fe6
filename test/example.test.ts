import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { ScryptPasswordEncoder } from "portcullis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createExampleHandler } from "../examples/hono/app.ts";
import { basicHeader } from "./helpers.ts";

type Server = ReturnType<typeof serve>;

let server: Server;
let port: number;
let base: string;

const ALICE = basicHeader("alice", "demo-alice"); // USER
const SAM = basicHeader("sam", "demo-sam"); // STAFF
const ADA = basicHeader("ada", "demo-ada"); // ADMIN

beforeAll(async () => {
  // A cheaper scrypt keeps the suite fast; the example's logic is unchanged.
  const handler = await createExampleHandler({
    passwordEncoder: new ScryptPasswordEncoder({ logN: 10 }),
  });
  await new Promise<void>((resolve) => {
    server = serve({ fetch: handler, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => {
      port = info.port;
      base = `http://127.0.0.1:${info.port}`;
      resolve();
    });
  });
}, 60_000);

afterAll(async () => {
  await new Promise<void>((resolve, reject) =>
    server ? server.close((error) => (error ? reject(error) : resolve())) : resolve(),
  );
});

function get(path: string, authorization?: string): Promise<Response> {
  return fetch(`${base}${path}`, {
    headers: authorization === undefined ? {} : { authorization },
  });
}

/** Sends `path` byte for byte, as fetch would normalize it first. */
function rawGet(path: string, authorization: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: "127.0.0.1", port, path, method: "GET", headers: { authorization } },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("the Hono example over a real socket", () => {
  it("serves /public/hello to anonymous callers", async () => {
    const response = await get("/public/hello");
    expect(response.status).toBe(200);
    await expect(response.json()).resolves.toEqual({ message: "hello, whoever you are" });
  });

  it("answers / with 401 and a Basic challenge to anonymous callers", async () => {
    const response = await get("/");
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toContain('Basic realm="portcullis example"');
    expect(response.headers.get("content-type")).toBe("application/problem+json");
  });

  it("answers / with 200 and alice's principal to alice", async () => {
    const response = await get("/", ALICE);
    expect(response.status).toBe(200);
    await expect(response.json()).resolves.toEqual({ name: "alice", authorities: ["USER"] });
  });

  it("refuses /staff/reports to alice (USER) with 403", async () => {
    expect((await get("/staff/reports", ALICE)).status).toBe(403);
  });

  it("admits sam (STAFF) and ada (ADMIN, through the hierarchy) to /staff/reports", async () => {
    const sam = await get("/staff/reports", SAM);
    expect(sam.status).toBe(200);
    await expect(sam.json()).resolves.toMatchObject({ area: "staff", name: "sam" });
    const ada = await get("/staff/reports", ADA);
    expect(ada.status).toBe(200);
    await expect(ada.json()).resolves.toMatchObject({ area: "staff", name: "ada" });
  });

  it("refuses /admin/panel to sam: the route group's guard is literal", async () => {
    expect((await get("/admin/panel", SAM)).status).toBe(403);
  });

  it("refuses /admin/panel to alice and to anonymous callers", async () => {
    expect((await get("/admin/panel", ALICE)).status).toBe(403);
    expect((await get("/admin/panel")).status).toBe(401);
  });

  it("admits ada to /admin/panel", async () => {
    const response = await get("/admin/panel", ADA);
    expect(response.status).toBe(200);
    await expect(response.json()).resolves.toEqual({ area: "admin", name: "ada" });
  });

  it("denies a path no rule covers: 401 anonymous, 403 alice", async () => {
    expect((await get("/nothing")).status).toBe(401);
    expect((await get("/nothing", ALICE)).status).toBe(403);
  });

  it("answers 401 to a wrong password and to an unknown user", async () => {
    expect((await get("/", basicHeader("alice", "not-her-password"))).status).toBe(401);
    expect((await get("/public/hello", basicHeader("alice", "wrong"))).status).toBe(401);
    expect((await get("/", basicHeader("mallory", "demo-alice"))).status).toBe(401);
  });

  it("answers 401 to a malformed Authorization header, never 500", async () => {
    for (const header of ["Basic", "Basic !!!", `Basic ${"A".repeat(10_000)}`]) {
      expect((await get("/", header)).status, header.slice(0, 12)).toBe(401);
    }
  });

  it.each([
    "/public/%2e%2e/admin/panel",
    "/public/%2E%2E/admin/panel",
    "/public/../admin/panel",
    "/public/..;/admin/panel",
    "//admin/panel",
    "/admin//panel",
    "/ADMIN/panel",
    "/admin/panel/",
    "/%61dmin/panel",
    "/admin%2fpanel",
    "/admin;x=1/panel",
    "/public/..%2fadmin/panel",
    "/admin/panel%00",
  ])("never answers 200 to alice or sam for the raw path %s", async (path) => {
    for (const credentials of [ALICE, SAM]) {
      const { status, body } = await rawGet(path, credentials);
      expect(status).not.toBe(200);
      expect(status).toBeGreaterThanOrEqual(400);
      expect(body).not.toContain('"area":"admin"');
    }
  });

  it("still admits ada to /admin/panel over the raw-path client", async () => {
    const { status, body } = await rawGet("/admin/panel", ADA);
    expect(status).toBe(200);
    expect(JSON.parse(body)).toEqual({ area: "admin", name: "ada" });
  });
});

describe("the example's trusted browser origin", () => {
  const APP = "https://app.example.test";
  const FOREIGN = "https://evil.example";

  it("reaches /mcp as CORS and CSRF let it: the preflight passes, the endpoint asks for a token", async () => {
    const preflight = await fetch(`${base}/mcp`, {
      method: "OPTIONS",
      headers: {
        origin: APP,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type,mcp-protocol-version",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(APP);
    const allowed = (preflight.headers.get("access-control-allow-headers") ?? "").toLowerCase();
    for (const name of ["authorization", "content-type", "mcp-protocol-version"])
      expect(allowed).toContain(name);
    const call = (origin: string) =>
      fetch(`${base}/mcp`, {
        method: "POST",
        headers: {
          origin,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      });
    // The endpoint's own 401 challenge, not the 403 of an origin it refuses.
    const fromApp = await call(APP);
    expect(fromApp.status).toBe(401);
    expect(fromApp.headers.get("www-authenticate")).toMatch(/^Bearer resource_metadata=/);
    expect(fromApp.headers.get("access-control-allow-origin")).toBe(APP);
    const foreign = await call(FOREIGN);
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("the example's approval page", () => {
  it("shows an agent name and capability descriptions containing markup as text", async () => {
    const { reviewPage } = await import("../examples/hono/pages.ts");
    const html = reviewPage(
      { name: "<b>alice</b>", csrfToken: 'x"><script>' },
      {
        agentName: "<img src=x onerror=alert(1)>",
        principalId: "agent&1",
        capabilities: [{ name: "echo", description: "<script>alert(1)</script>" }],
        userCode: "BCDF-GHJK",
        reviewToken: '"><script>',
      },
    );
    expect(html).not.toContain("<script>");
    expect(html).not.toContain("<img");
    expect(html).not.toContain("<b>alice");
    expect(html).toContain("&#60;script&#62;alert(1)&#60;/script&#62;");
    expect(html).toContain("agent&#38;1");
  });
});
