import { describe, expect, it } from "vitest";
import * as authz from "../authz/index.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { sameOriginPath } from "../core/redirect.ts";
import { browserDenials } from "./browser-denials.ts";
import { newHandler } from "./new-chain.ts";

const handler = newHandler(async () => new Response("page"), {
  browserDenials: { signInPath: "/login" },
  authorization: authz.routes([
    authz.match("GET", "/login").permitAll(),
    authz.match("/admin/**").hasRole("ADMIN"),
  ]),
  onError: () => {},
});

const navigate = { "sec-fetch-mode": "navigate", "sec-fetch-site": "none", accept: "text/html" };

describe("browserDenials", () => {
  it("sends a page navigation that is not signed in to sign-in, with next back to the page", async () => {
    const response = await handler(
      new Request("https://app.example/reports/q3?x=1", { headers: navigate }),
    );
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe(
      `/login?next=${encodeURIComponent("/reports/q3?x=1")}`,
    );
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("treats Accept: text/html without Fetch Metadata as a navigation, and nothing else", async () => {
    const old = await handler(
      new Request("https://app.example/x", { headers: { accept: "text/html" } }),
    );
    expect(old.status).toBe(303);
    const apiHeaders: Record<string, string>[] = [
      { accept: "application/json" },
      { "sec-fetch-mode": "cors", accept: "text/html" },
      {},
    ];
    for (const headers of apiHeaders) {
      const api = await handler(new Request("https://app.example/x", { headers }));
      expect(api.status, JSON.stringify(headers)).toBe(401);
      expect(api.headers.get("content-type")).toBe("application/problem+json");
      expect(api.headers.get("www-authenticate")).toBeTruthy();
    }
  });

  it("answers a 403 navigation with an HTML page and keeps the problem JSON for API clients", async () => {
    const { bindAuthentication, createAuthentication } = await import("../core/authentication.ts");
    const signedIn = (headers: Record<string, string>) => {
      const request = new Request("https://app.example/admin/panel", { headers });
      bindAuthentication(request, createAuthentication("alice", ["USER"]));
      return request;
    };
    const page = await handler(signedIn(navigate));
    expect(page.status).toBe(403);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(await page.text()).toContain('href="/"');
    const api = await handler(signedIn({ accept: "application/json" }));
    expect(api.headers.get("content-type")).toBe("application/problem+json");
  });

  it("sends a POST navigation to sign-in without next, and never loops on the sign-in page", async () => {
    const post = await handler(
      new Request("https://app.example/x", { method: "POST", headers: navigate }),
    );
    expect([post.status, post.headers.get("location")]).toEqual([303, "/login"]);
    const loop = newHandler(async () => new Response("x"), {
      browserDenials: { signInPath: "/login" },
      authorization: authz.routes([]),
    });
    expect(
      (await loop(new Request("https://app.example/login", { headers: navigate }))).status,
    ).toBe(401);
  });

  it("is off by default and refuses a sign-in path that is not one", () => {
    for (const signInPath of [
      "https://evil.example/login",
      "//evil.example",
      "login",
      "/login?x=1",
    ])
      expect(() => browserDenials({ signInPath })).toThrow(InvalidOptionsError);
    expect(() => browserDenials({ signInPath: "/login", page: 1 } as never)).toThrow(
      InvalidOptionsError,
    );
  });
});

describe("sameOriginPath", () => {
  it("keeps paths on this site", () => {
    for (const path of ["/", "/reports/q3?x=1&y=%2F", "/a/b#frag", "/caf%C3%A9"])
      expect(sameOriginPath(path)).toBe(path);
  });

  it("percent-encodes what a Location header cannot carry, and drops a lone surrogate", () => {
    expect(sameOriginPath("/caf\u00e9/\u65e5?q=\u2603#\u{1f600}")).toBe(
      "/caf%C3%A9/%E6%97%A5?q=%E2%98%83#%F0%9F%98%80",
    );
    expect(() => new Headers({ location: sameOriginPath("/\u65e5") as string })).not.toThrow();
    expect(sameOriginPath("/a\ud800b")).toBeUndefined();
    expect(sameOriginPath(`/${"\u65e5".repeat(700)}`)).toBeUndefined(); // over 2048 once encoded
  });

  it("drops absolute URLs, protocol-relative, backslash, encoded and control-character variants", () => {
    for (const path of [
      "https://evil.example/",
      "//evil.example",
      "/\\evil.example",
      "\\\\evil.example",
      "/%2F%2Fevil.example",
      "/%2fevil.example/..",
      "%2F%2Fevil.example",
      "/%5Cevil.example",
      "/%255Cevil.example",
      "/\t/evil.example",
      "/%09/evil.example",
      "/\n/evil.example",
      "javascript:alert(1)",
      "",
      "/%E0%A4%A",
      `/${"a".repeat(3000)}`,
      42,
      undefined,
    ])
      expect(sameOriginPath(path), String(path)).toBeUndefined();
  });
});

describe("login with next", () => {
  it("sends a form sign-in back to a same-site next, ignores any other, and records when", async () => {
    const { testApp, PASSWORDS } = await import("../../test/support/session-app.ts");
    const { signedInAt } = await import("../login/login.ts");
    for (const [next, expected] of [
      ["/reports/q3?x=1", "/reports/q3?x=1"],
      ["//evil.example/", "/home"],
      ["https://evil.example/", "/home"],
      ["/%5Cevil.example", "/home"],
    ] as const) {
      const app = await testApp({
        login: { successRedirect: "/home" },
        router: async (request) => Response.json({ at: signedInAt(request) ?? null }),
      });
      const client = app.client();
      const token = await client.csrf();
      const before = Date.now();
      const response = await client.fetch("/login", {
        method: "POST",
        token,
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          username: "alice",
          password: PASSWORDS.alice,
          next,
        }).toString(),
      });
      expect([response.status, response.headers.get("location")], next).toEqual([303, expected]);
      const { at } = (await (await client.fetch("/")).json()) as { at: number };
      expect(at).toBeGreaterThanOrEqual(before);
    }
    expect(signedInAt(new Request("https://app.example/"))).toBeUndefined();
  });
});
