import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { ScryptPasswordEncoder } from "portcullis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createExampleHandler, demoAccounts } from "../examples/hono/app.ts";
import { CookieJar, isDeletion, setCookiesOf } from "./support/cookie-jar.ts";

type Server = ReturnType<typeof serve>;

const COOKIE = "portcullis-session"; // the example turns Secure off for plain HTTP on localhost
const password = (name: string) => demoAccounts().find((a) => a.name === name)?.password ?? "";

let server: Server;
let base: string;

beforeAll(async () => {
  const handler = await createExampleHandler({
    passwordEncoder: new ScryptPasswordEncoder({ logN: 10 }),
  });
  await new Promise<void>((resolve) => {
    server = serve({ fetch: handler, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => {
      base = `http://127.0.0.1:${info.port}`;
      resolve();
    });
  });
}, 60_000);

afterAll(async () => {
  if (server === undefined) return;
  (server as { closeAllConnections?: () => void }).closeAllConnections?.();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** A browser stand-in over the real socket: real fetch, a cookie jar, no redirect following. */
class SocketClient {
  readonly jar = new CookieJar();

  get session(): string | undefined {
    return this.jar.get(COOKIE);
  }

  async fetch(
    path: string,
    init: {
      method?: string;
      headers?: Record<string, string>;
      body?: string;
      cookie?: string;
      signal?: AbortSignal;
    } = {},
  ): Promise<Response> {
    const headers = new Headers(init.headers);
    const cookie = init.cookie ?? this.jar.header();
    if (cookie !== undefined) headers.set("cookie", cookie);
    const response = await fetch(`${base}${path}`, {
      method: init.method ?? "GET",
      headers,
      ...(init.body === undefined ? {} : { body: init.body }),
      redirect: "manual",
      ...(init.signal === undefined ? {} : { signal: init.signal }),
    });
    this.jar.store(response);
    return response;
  }

  async token(): Promise<string> {
    const response = await this.fetch("/csrf");
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      token: string;
      headerName: string;
      parameterName: string;
    };
    expect(body.headerName).toBe("x-csrf-token");
    expect(body.parameterName).toBe("_csrf");
    return body.token;
  }
}

describe("sessions, CSRF and login over the socket (example app)", () => {
  it("GET /csrf → JSON login → / as alice → /admin/panel 403 → logout 204 → old cookie is anonymous", async () => {
    const client = new SocketClient();
    const token = await client.token();
    const anonymousId = client.session as string;
    expect(anonymousId).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const login = await client.fetch("/login", {
      method: "POST",
      headers: { "content-type": "application/json", "x-csrf-token": token },
      body: JSON.stringify({ username: "alice", password: password("alice") }),
    });
    expect(login.status).toBe(200);
    expect(login.headers.get("cache-control")).toBe("no-store");
    await expect(login.json()).resolves.toEqual({ name: "alice", authorities: ["USER"] });
    const [cookie] = setCookiesOf(login).filter((c) => c.name === COOKIE);
    expect(cookie?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookie?.value).not.toBe(anonymousId);
    expect(cookie?.attributes.get("httponly")).toBe("");
    expect(cookie?.attributes.get("samesite")).toBe("Lax");
    expect(cookie?.attributes.get("path")).toBe("/");
    const signedInId = client.session as string;

    const home = await client.fetch("/", { headers: { accept: "application/json" } });
    expect(home.status).toBe(200);
    await expect(home.json()).resolves.toEqual({ name: "alice", authorities: ["USER"] });

    // The id from before login is dead.
    const fixated = await new SocketClient().fetch("/", { cookie: `${COOKIE}=${anonymousId}` });
    expect(fixated.status).toBe(401);

    const admin = await client.fetch("/admin/panel", { headers: { accept: "application/json" } });
    expect(admin.status).toBe(403);

    // The pre-login token is bound to the old id and is refused.
    const staleLogout = await client.fetch("/logout", {
      method: "POST",
      headers: { "x-csrf-token": token },
    });
    expect(staleLogout.status).toBe(403);

    const fresh = await client.token();
    expect(client.session).toBe(signedInId);
    const logout = await client.fetch("/logout", {
      method: "POST",
      headers: { "x-csrf-token": fresh },
    });
    expect(logout.status).toBe(204);
    const cleared = setCookiesOf(logout).find((c) => c.name === COOKIE);
    expect(cleared && isDeletion(cleared)).toBe(true);
    expect(client.session).toBeUndefined();

    const replay = await new SocketClient().fetch("/", {
      cookie: `${COOKIE}=${signedInId}`,
      headers: { accept: "application/json" },
    });
    expect(replay.status).toBe(401);
    expect(replay.headers.get("www-authenticate")).not.toBeNull();
  });

  it("signs in with the form and is redirected with 303 to /; a wrong password goes back to /login?error", async () => {
    const client = new SocketClient();
    const token = await client.token();
    const failed = await client.fetch("/login", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: token, username: "alice", password: "wrong" }).toString(),
    });
    expect(failed.status).toBe(303);
    expect(failed.headers.get("location")).toBe("/login?error");

    const before = client.session;
    const response = await client.fetch("/login", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        _csrf: token,
        username: "sam",
        password: password("sam"),
      }).toString(),
    });
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/");
    expect(client.session).toBeDefined();
    expect(client.session).not.toBe(before);
    const staff = await client.fetch("/staff/reports");
    expect(staff.status).toBe(200);
    await expect(staff.json()).resolves.toMatchObject({ area: "staff", name: "sam" });
  });

  it("sends a form sign-in back to a next beyond Latin-1 percent-encoded, never a 500 after the sign-in was saved", async () => {
    for (const [next, location] of [
      ["/notes/\u65e5\u8a18?q=\u2603#\u00e9", "/notes/%E6%97%A5%E8%A8%98?q=%E2%98%83#%C3%A9"],
      ["/caf\u00e9", "/caf%C3%A9"],
    ] as const) {
      const client = new SocketClient();
      const token = await client.token();
      const response = await client.fetch("/login", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          _csrf: token,
          username: "sam",
          password: password("sam"),
          next,
        }).toString(),
      });
      expect([response.status, response.headers.get("location")], next).toEqual([303, location]);
      expect((await client.fetch("/staff/reports")).status).toBe(200);
    }
  });

  it("refuses state-changing requests without a valid token or from another site", async () => {
    const client = new SocketClient();
    const token = await client.token();
    const credentials = JSON.stringify({ username: "alice", password: password("alice") });

    const noToken = await client.fetch("/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: credentials,
    });
    expect(noToken.status).toBe(403);
    expect(noToken.headers.get("content-type")).toBe("application/problem+json");

    const crossSite = await client.fetch("/login", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-csrf-token": token,
        "sec-fetch-site": "cross-site",
        origin: "https://evil.example",
      },
      body: credentials,
    });
    expect(crossSite.status).toBe(403);

    // Without any session cookie, login is refused too (login CSRF).
    const noSession = await client.fetch("/login", {
      method: "POST",
      cookie: "",
      headers: { "content-type": "application/json", "x-csrf-token": token },
      body: credentials,
    });
    expect(noSession.status).toBe(403);

    // Nothing above signed anyone in.
    const home = await client.fetch("/", { headers: { accept: "application/json" } });
    expect(home.status).toBe(401);
  });

  it("answers a 1 MB multipart upload carrying its token in the _csrf field within 3 s (no hang)", async () => {
    const client = new SocketClient();
    const token = await client.token();
    const boundary = "----portcullis-socket-upload";
    const body =
      `--${boundary}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${token}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n` +
      `Content-Type: text/plain\r\n\r\n${"f".repeat(1_000_000)}\r\n--${boundary}--\r\n`;
    let status: number | string;
    try {
      const response = await client.fetch("/upload", {
        method: "POST",
        headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
        body,
        signal: AbortSignal.timeout(3000),
      });
      status = response.status;
    } catch (error) {
      status = `no response: ${(error as Error).name}`;
    }
    // The body is longer than the 64 KiB the CSRF leg searches for the field, so the answer is a refusal.
    expect(status).toBe(403);
  });
});
