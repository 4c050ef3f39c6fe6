/**
 * The integration suite every framework adapter runs, over real sockets
 * against real framework instances: same chain, same routes, same verdicts.
 */
import { normalizePath } from "portcullis/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROTECTED_PATH_VARIANTS } from "../path-variants.ts";
import { call, cookiePair, csrfSession, rawRequest, trickle } from "./client.ts";
import { basic, CROWD, type Kit, makeKit, ORIGIN, SESSION_COOKIE, type Served } from "./kit.ts";

export interface AdapterCase {
  readonly name: string;
  readonly start: (kit: Kit) => Promise<Served>;
  /**
   * The framework routes on the raw request target (Express, Fastify, Koa,
   * node:http): ambiguous spellings must be refused with 400. A Fetch-native
   * router sees the WHATWG-parsed URL instead, where `..` is already resolved:
   * there a variant may also get the plain path's decision.
   */
  readonly routesOnRawPath: boolean;
  /**
   * The route runs inside the chain (Fetch-native wrapping, `honoMiddleware`)
   * rather than after it: a leg that throws after `next` fails once the route
   * has run, and the client still gets a bare 500 instead of its answer.
   */
  readonly routeRunsInsideChain?: boolean;
}

/** Statuses the chain may answer for `raw` where the router sees the WHATWG-resolved path. */
function fetchNativeVerdicts(raw: string, decided: number[], unmatched: number[]): number[] {
  let resolved: string | undefined;
  try {
    resolved = normalizePath(new URL(`http://h${raw}`).pathname);
  } catch {
    resolved = undefined;
  }
  if (resolved === undefined) return [400];
  if (resolved === "/admin/x") return [400, ...decided];
  if (resolved.startsWith("/public/")) return [400, 200, 404];
  return [400, ...unmatched];
}

/** Problem details answer with nothing of the route in it. */
async function expectDenial(response: Response, status: number): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toBe("application/problem+json");
  const text = await response.text();
  expect(text).not.toMatch(/admin|hello|boom|name/);
}

function expectLegHeaders(response: Response): void {
  const cookies = response.headers.getSetCookie();
  expect(cookies).toContain("leg-a=1; Path=/");
  expect(cookies).toContain("leg-b=2; Path=/");
  expect(response.headers.get("x-content-type-options")).toBe("nosniff");
}

export function adapterSuite(adapter: AdapterCase): void {
  describe(`${adapter.name} adapter over the socket`, () => {
    const kits: Record<"plain" | "slow", { kit: Kit; served?: Served }> = {
      plain: { kit: makeKit() },
      slow: { kit: makeKit({ slow: true }) },
    };
    let base = "";
    const kit = kits.plain.kit;

    beforeAll(async () => {
      kits.plain.served = await adapter.start(kits.plain.kit);
      kits.slow.served = await adapter.start(kits.slow.kit);
      base = kits.plain.served.url;
    }, 30_000);

    afterAll(async () => {
      await kits.plain.served?.close();
      await kits.slow.served?.close();
    });

    describe.each(["plain", "slow"] as const)("denials (%s legs)", (which) => {
      const target = () => kits[which];
      const url = () => target().served?.url ?? "";

      it.each([
        ["GET", "/admin/x"],
        ["GET", "/me"],
        ["GET", "/nothing/here"],
        ["POST", "/nothing/here"],
        ["GET", "/child/x"],
        ["POST", "/api/echo"],
      ])("denies an anonymous %s %s with 401 and never runs a route", async (method, path) => {
        const before = target().kit.hits();
        const response = await call(url(), path, {
          method,
          ...(method === "POST"
            ? { headers: { "content-type": "application/json" }, body: "{}" }
            : {}),
        });
        expect(response.headers.get("www-authenticate")).toMatch(/^Basic /);
        await expectDenial(response, 401);
        expect(target().kit.hits()).toBe(before);
      });

      it("denies a signed-in caller without the role with 403, unknown paths included", async () => {
        const before = target().kit.hits();
        for (const path of ["/admin/x", "/nothing/here"]) {
          await expectDenial(
            await call(url(), path, { headers: { authorization: basic("uma") } }),
            403,
          );
        }
        expect(target().kit.hits()).toBe(before);
      });

      it("answers 500 without running the route when a leg throws, before or after next", async () => {
        const before = target().kit.hits();
        for (const when of ["before", "after"]) {
          const response = await call(url(), "/boom", { headers: { "x-test-throw": when } });
          expect(response.status).toBe(500);
          expect(await response.text()).not.toMatch(/failed|boom|stack/);
        }
        const ranInside = adapter.routeRunsInsideChain ? 1 : 0;
        expect(target().kit.hits()).toBe(before + ranInside);
        expect((await call(url(), "/boom")).status).toBe(200);
        expect(target().kit.hits()).toBe(before + ranInside + 1);
      });

      it("passes a permitted request to the route exactly once", async () => {
        const before = target().kit.hits();
        const response = await call(url(), "/admin/x", {
          headers: { authorization: basic("ada") },
        });
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({ area: "admin", name: "ada" });
        expect(target().kit.hits()).toBe(before + 1);
      });
    });

    it("hands the principal to the route through the framework's own request object", async () => {
      const response = await call(base, "/me", { headers: { authorization: basic("sam") } });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name: "sam" });
    });

    it("hands the route the request a leg passed down, not the one the adapter built", async () => {
      const response = await call(base, "/me", {
        headers: { authorization: basic("sam"), "x-test-replace": "1" },
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ name: "replacement" });
    });

    it(`gives each of ${CROWD} concurrent callers their own principal`, async () => {
      const names = Array.from({ length: CROWD }, (_, i) => `user${i}`);
      const seen = await Promise.all(
        names.map(async (name) => {
          const response = await call(base, "/me", { headers: { authorization: basic(name) } });
          return ((await response.json()) as { name: string }).name;
        }),
      );
      expect(seen).toEqual(names);
    });

    it("keeps every Set-Cookie separate on 200s, the framework's own 404 and denials", async () => {
      const cases: [string, number, Record<string, string>][] = [
        ["/public/hello", 200, {}],
        ["/public/nothing", 404, {}],
        ["/nothing/here", 401, {}],
        ["/admin/x", 403, { authorization: basic("uma") }],
        ["/public/admin%2fx", 400, {}],
      ];
      for (const [path, status, headers] of cases) {
        const response = await call(base, path, { headers });
        expect(response.status, path).toBe(status);
        expectLegHeaders(response);
        await response.arrayBuffer();
      }
    });

    it("lets the route have the last word on a header the legs also set", async () => {
      const response = await call(base, "/public/route-header");
      expect(response.status).toBe(200);
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("x-leg")).toBe("route");
      expectLegHeaders(response);
    });

    it("sends the cookie of a session the route saved after the chain returned", async () => {
      const response = await call(base, "/public/session", { method: "POST" });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ saved: true });
      expect(cookiePair(response, SESSION_COOKIE)).toBeDefined();
      expectLegHeaders(response);
      expect(response.headers.get("cache-control")).toBe("no-store");
    });

    it("signs in through the login leg and sees the principal on the next request", async () => {
      const { cookie, token } = await csrfSession(base, SESSION_COOKIE);
      const response = await call(base, "/login", {
        method: "POST",
        headers: { cookie, "x-csrf-token": token, "content-type": "application/json" },
        body: JSON.stringify({ username: "lou", password: "pw-login" }),
      });
      expect(response.status).toBe(200);
      const rotated = cookiePair(response, SESSION_COOKIE);
      expect(rotated).toBeDefined();
      expect(rotated).not.toBe(cookie);
      const me = await call(base, "/me", { headers: { cookie: rotated as string } });
      expect(await me.json()).toEqual({ name: "lou" });
    });

    describe("request bodies", () => {
      const echo = async (headers: Record<string, string>, body: BodyInit): Promise<Response> =>
        call(base, "/api/echo", {
          method: "POST",
          headers: { authorization: basic("ada"), ...headers },
          body,
        });

      it("parses JSON with a header token (the chain leaves the body alone)", async () => {
        const { cookie, token } = await csrfSession(base, SESSION_COOKIE);
        const response = await echo(
          { cookie, "x-csrf-token": token, "content-type": "application/json" },
          JSON.stringify({ a: 1, nested: { b: [1, 2] } }),
        );
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({
          name: "ada",
          body: { a: 1, nested: { b: [1, 2] } },
        });
      });

      it("hands the whole form to the parser after the chain read its token field", async () => {
        const { cookie, token } = await csrfSession(base, SESSION_COOKIE);
        const filler = "z".repeat(40_000);
        const form = new URLSearchParams({ _csrf: token, a: "1", filler }).toString();
        const response = await echo(
          { cookie, "content-type": "application/x-www-form-urlencoded" },
          form,
        );
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({
          name: "ada",
          body: { _csrf: token, a: "1", filler },
        });
      });

      it("restores a form that arrives slowly in chunks, without a Content-Length", async () => {
        const { cookie, token } = await csrfSession(base, SESSION_COOKIE);
        const form = new URLSearchParams({ _csrf: token, b: "two" }).toString();
        const response = await echo(
          { cookie, "content-type": "application/x-www-form-urlencoded" },
          trickle(form),
        );
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({ name: "ada", body: { _csrf: token, b: "two" } });
      });

      it("refuses a wrong form token without running the route, and the connection goes on", async () => {
        const { cookie } = await csrfSession(base, SESSION_COOKIE);
        const before = kit.hits();
        for (let i = 0; i < 3; i++) {
          const response = await echo(
            { cookie, "content-type": "application/x-www-form-urlencoded" },
            `_csrf=forged&pad=${"p".repeat(100_000)}`,
          );
          await expectDenial(response, 403);
        }
        expect(kit.hits()).toBe(before);
      });

      it("passes a form beyond the token-search limit whole when the token is in the header", async () => {
        const { cookie, token } = await csrfSession(base, SESSION_COOKIE);
        const pad = "q".repeat(90_000);
        const response = await echo(
          { cookie, "x-csrf-token": token, "content-type": "application/x-www-form-urlencoded" },
          new URLSearchParams({ pad }).toString(),
        );
        expect(response.status).toBe(200);
        expect(((await response.json()) as { body: { pad: string } }).body.pad).toBe(pad);
      });
    });

    describe("path variants of /admin/x, sent raw", () => {
      const callers: [string, Record<string, string>, number[], number[]][] = [
        ["anonymous", {}, [401], [401]],
        ["USER", { Authorization: basic("uma") }, [403], [403]],
        // A permitted variant reaches the router, which may have no route for that spelling.
        ["ADMIN", { Authorization: basic("ada") }, [200, 404], [403]],
      ];
      it.each(callers)(
        "gives the %s caller the plain path's decision or 400",
        async (_who, headers, decided, unmatched) => {
          for (const variant of PROTECTED_PATH_VARIANTS) {
            const before = kit.hits();
            const answer = await rawRequest(base, variant.raw, headers);
            const expected = !adapter.routesOnRawPath
              ? fetchNativeVerdicts(variant.raw, decided, unmatched)
              : variant.normalized === undefined
                ? [400]
                : decided;
            expect(expected, `${variant.label} (${JSON.stringify(variant.raw)})`).toContain(
              answer.status,
            );
            if (!decided.includes(200)) expect(kit.hits(), variant.label).toBe(before);
          }
        },
      );
    });

    it("keeps requireRole literal and a scoped rule set hierarchy-aware next to the routes", async () => {
      const status = async (path: string, user: string) =>
        (await call(base, path, { headers: { authorization: basic(user) } })).status;
      expect(await status("/literal/x", "sam")).toBe(200);
      expect(await status("/literal/x", "ada")).toBe(403);
      expect(await status("/literal/x", "uma")).toBe(403);
      expect(await status("/scoped/x", "ada")).toBe(200);
      expect(await status("/scoped/x", "sam")).toBe(200);
      const before = kit.hits();
      expect(await status("/scoped/x", "uma")).toBe(403);
      expect(kit.hits()).toBe(before);
    });

    it("keeps a streamed response streaming", async () => {
      const response = await call(base, "/public/stream");
      expect(response.status).toBe(200);
      expectLegHeaders(response);
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      // The route sends its second chunk only after this read: a buffered answer never comes.
      const first = await reader.read();
      let text = decoder.decode(first.value, { stream: true });
      expect(text).toBe("first\n");
      kit.openStreamGate();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      expect(text).toBe("first\nsecond\n");
    });

    it("answers a CORS preflight in the chain, and a limit with 429, without running a route", async () => {
      const before = kit.hits();
      const preflight = await call(base, "/api/echo", {
        method: "OPTIONS",
        headers: { origin: ORIGIN, "access-control-request-method": "POST" },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get("access-control-allow-origin")).toBe(ORIGIN);
      expect(kit.hits()).toBe(before);
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await call(base, "/public/limited")).status);
      expect(statuses).toEqual([200, 200, 429]);
      expect(kit.hits()).toBe(before + 2);
    });

    it("refuses a forged Host and an absolute-form target with 400", async () => {
      if (!adapter.routesOnRawPath) return;
      const before = kit.hits();
      expect((await rawRequest(base, "/public/hello", { Host: "evil.example/x" })).status).toBe(
        400,
      );
      expect((await rawRequest(base, "http://evil.example/public/hello")).status).toBe(400);
      expect(kit.hits()).toBe(before);
    });
  });
}
