import { describe, expect, it } from "vitest";
import * as authz from "../authz/index.ts";
import { newHandler } from "../chain/index.ts";
import { createAuthentication } from "../core/authentication.ts";
import { randomToken } from "../core/encoding.ts";
import { InvalidOptionsError, PortcullisError } from "../core/errors.ts";
import type { FetchHandler } from "../core/handler.ts";
import { isDeletion, setCookiesOf } from "../testing/cookie-jar.ts";
import {
  defaultRouter,
  defaultRules,
  fakeClock,
  PASSWORDS,
  SECURE_COOKIE,
  testApp,
} from "../testing/session-app.ts";
import { MemorySessionStore, Session, type SessionStore, sessionFrom, sessions } from "./index.ts";

const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

/** Session playground routes under `/s/`, in front of the default router. */
const sessionRouter: FetchHandler = async (request) => {
  const url = new URL(request.url);
  const session = sessionFrom(request);
  if (session === undefined) throw new Error("no session leg");
  const q = (name: string) => url.searchParams.get(name) ?? "";
  switch (url.pathname) {
    case "/s/set":
      session.set(q("k"), q("v"));
      await session.save();
      return Response.json({ id: session.id });
    case "/s/set-unsaved":
      session.set(q("k"), q("v"));
      return Response.json({ ok: true });
    case "/s/cart":
      session.set("cart", { items: ["first"] });
      await session.save();
      return Response.json({ ok: true });
    case "/s/cart-push-unsaved":
      session.get<{ items: string[] }>("cart")?.items.push(q("item"));
      return Response.json({ ok: true });
    case "/s/cart-push":
      session.get<{ items: string[] }>("cart")?.items.push(q("item"));
      await session.save();
      return Response.json({ ok: true });
    case "/s/get":
      return Response.json({ value: session.get(q("k")) ?? null });
    case "/s/authorities": {
      const name = session.authentication?.name ?? "nobody";
      const wanted = q("set");
      session.setAuthentication(
        wanted === "-" ? undefined : createAuthentication(name, wanted.split(",")),
      );
      await session.save();
      return Response.json({ id: session.id });
    }
    case "/s/cacheable":
      session.set("seen", true);
      await session.save();
      return new Response("cacheable page", {
        headers: { "cache-control": "public, max-age=3600" },
      });
    case "/s/destroyed": {
      await session.destroy();
      const threw: Record<string, boolean> = {};
      const attempts: Record<string, () => unknown> = {
        set: () => session.set("a", 1),
        delete: () => session.delete("a"),
        setAuthentication: () => session.setAuthentication(createAuthentication("x", ["USER"])),
        regenerate: () => session.regenerate(),
        save: () => session.save(),
      };
      for (const [name, attempt] of Object.entries(attempts)) {
        try {
          await attempt();
          threw[name] = false;
        } catch (error) {
          threw[name] = error instanceof PortcullisError;
        }
      }
      let destroyAgain = "ok";
      try {
        await session.destroy();
      } catch {
        destroyAgain = "threw";
      }
      return Response.json({
        threw,
        destroyAgain,
        destroyed: session.destroyed,
        id: session.id ?? null,
      });
    }
    default:
      return defaultRouter(request);
  }
};

const sessionRules = () => [authz.match("GET", "/s/**").permitAll(), ...defaultRules()];

function sessionApp(options: Parameters<typeof testApp>[0] = {}) {
  return testApp({ router: sessionRouter, rules: sessionRules(), ...options });
}

describe("session cookie attributes", () => {
  it("defaults to __Host-portcullis-session; HttpOnly; Secure; SameSite=Lax; Path=/; no Domain, and no-store", async () => {
    const app = await sessionApp();
    const response = await app.client().fetch("/csrf");
    const cookies = setCookiesOf(response);
    expect(cookies).toHaveLength(1);
    const [cookie] = cookies;
    expect(cookie?.name).toBe(SECURE_COOKIE);
    expect(cookie?.value).toMatch(SESSION_ID);
    expect(cookie?.attributes.get("httponly")).toBe("");
    expect(cookie?.attributes.get("secure")).toBe("");
    expect(cookie?.attributes.get("samesite")).toBe("Lax");
    expect(cookie?.attributes.get("path")).toBe("/");
    expect(cookie?.attributes.has("domain")).toBe(false);
    // A browser-session cookie: lifetime is enforced server-side.
    expect(cookie?.attributes.has("max-age")).toBe(false);
    expect(cookie?.attributes.has("expires")).toBe(false);
    expect(response.headers.get("cache-control")).toBe("no-store");
  });

  it("sets Cache-Control: no-store on a response that sets the cookie even when the handler asked for caching", async () => {
    const app = await sessionApp();
    const response = await app.client().fetch("/s/cacheable");
    expect(response.status).toBe(200);
    expect(setCookiesOf(response)).toHaveLength(1);
    expect(response.headers.get("cache-control")).toBe("no-store");
  });

  it("leaves Cache-Control alone on responses that set no cookie", async () => {
    const app = await sessionApp();
    const client = app.client();
    await client.fetch("/s/set?k=a&v=b");
    const response = await client.fetch("/public/x");
    expect(response.headers.getSetCookie()).toEqual([]);
    expect(response.headers.get("cache-control")).toBeNull();
  });

  it("with secure:false drops the __Host- prefix and the Secure attribute, keeping HttpOnly and SameSite", async () => {
    const app = await sessionApp({ session: { secure: false } });
    const [cookie] = setCookiesOf(await app.client().fetch("/csrf"));
    expect(cookie?.name).toBe("portcullis-session");
    expect(cookie?.attributes.has("secure")).toBe(false);
    expect(cookie?.attributes.get("httponly")).toBe("");
    expect(cookie?.attributes.get("samesite")).toBe("Lax");
    expect(cookie?.attributes.get("path")).toBe("/");
  });

  it("honours sameSite Strict and a custom cookie name", async () => {
    const app = await sessionApp({ session: { sameSite: "Strict", cookieName: "__Host-sid" } });
    const [cookie] = setCookiesOf(await app.client().fetch("/csrf"));
    expect(cookie?.name).toBe("__Host-sid");
    expect(cookie?.attributes.get("samesite")).toBe("Strict");
  });

  it.each([
    ["a __Host- name without Secure", { cookieName: "__Host-x", secure: false }],
    ["a __Secure- name without Secure", { cookieName: "__Secure-x", secure: false }],
    ['sameSite "None"', { sameSite: "None" as "Lax" }],
    ['sameSite "None" without Secure', { sameSite: "None" as "Lax", secure: false }],
    ["a cookie name that is not a token", { cookieName: "sid;evil" }],
    ["an empty cookie name", { cookieName: "" }],
    ["idleTimeoutMs 0", { idleTimeoutMs: 0 }],
    ["a negative absoluteTimeoutMs", { absoluteTimeoutMs: -1 }],
    ["a NaN idleTimeoutMs", { idleTimeoutMs: Number.NaN }],
    ["an infinite absoluteTimeoutMs", { absoluteTimeoutMs: Number.POSITIVE_INFINITY }],
    ["touchIntervalMs 0", { touchIntervalMs: 0 }],
    ["a store without methods", { store: {} as SessionStore }],
  ])("throws InvalidOptionsError when built with %s", (_label, options) => {
    expect(() => sessions(options)).toThrow(InvalidOptionsError);
  });
});

describe("session fixation", () => {
  it("rotates a planted id on login: the old id stops authenticating and its CSRF token is refused", async () => {
    const app = await sessionApp();
    // The attacker obtains a session id the ordinary way and plants it in the victim's browser.
    const attacker = app.client();
    await attacker.csrf();
    const planted = attacker.sessionId as string;
    expect(planted).toMatch(SESSION_ID);

    const victim = app.client();
    victim.jar.set(app.cookieName, planted);
    const oldToken = await victim.csrf();
    expect(victim.sessionId).toBe(planted); // the planted session was live, so it was adopted
    const login = await victim.fetch("/login", {
      method: "POST",
      token: oldToken,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "alice", password: PASSWORDS.alice }),
    });
    expect(login.status).toBe(200);
    const fresh = victim.sessionId as string;
    expect(fresh).toMatch(SESSION_ID);
    expect(fresh).not.toBe(planted);
    await expect(app.store.get(planted)).resolves.toBeUndefined();

    // The attacker's copy of the old id is anonymous.
    const hijack = await attacker.fetch("/");
    expect(hijack.status).toBe(401);
    // The victim is signed in under the new id.
    const home = await victim.fetch("/");
    expect(home.status).toBe(200);
    await expect(home.json()).resolves.toEqual({ name: "alice", authorities: ["USER"] });

    // A token bound to the old id is refused with the new cookie.
    const stale = await victim.fetch("/api/echo", { method: "POST", token: oldToken, body: "x" });
    expect(stale.status).toBe(403);
    expect(stale.headers.get("content-type")).toBe("application/problem+json");
    const staleLogout = await victim.fetch("/logout", { method: "POST", token: oldToken });
    expect(staleLogout.status).toBe(403);
    expect((await victim.fetch("/")).status).toBe(200);
    // A token fetched after login works.
    const token = await victim.csrf();
    const ok = await victim.fetch("/api/echo", { method: "POST", token, body: "x" });
    expect(ok.status).toBe(200);
  });

  it("rotates on every login, even when the same user signs in again", async () => {
    const app = await sessionApp();
    const client = app.client();
    expect((await client.login("alice", PASSWORDS.alice)).status).toBe(200);
    const first = client.sessionId as string;
    expect((await client.login("alice", PASSWORDS.alice)).status).toBe(200);
    const second = client.sessionId as string;
    expect(second).not.toBe(first);
    await expect(app.store.get(first)).resolves.toBeUndefined();
    const replay = await app.client().fetch("/", { cookie: `${app.cookieName}=${first}` });
    expect(replay.status).toBe(401);
  });

  it("rotates when setAuthentication changes the authorities, and the old id is dead", async () => {
    const app = await sessionApp();
    const client = app.client();
    await client.login("alice", PASSWORDS.alice);
    const before = client.sessionId as string;
    expect((await client.fetch("/admin/x")).status).toBe(403);

    const promote = await client.fetch("/s/authorities?set=USER,ADMIN");
    expect(promote.status).toBe(200);
    const cookies = setCookiesOf(promote);
    expect(cookies.map((c) => c.name)).toEqual([app.cookieName]);
    const after = client.sessionId as string;
    expect(after).not.toBe(before);
    await expect(app.store.get(before)).resolves.toBeUndefined();
    expect((await client.fetch("/admin/x")).status).toBe(200);
    const old = await app.client().fetch("/admin/x", { cookie: `${app.cookieName}=${before}` });
    expect(old.status).toBe(401);
  });

  it("rotates when authorities shrink and when signing out through setAuthentication(undefined)", async () => {
    const app = await sessionApp();
    const client = app.client();
    await client.login("alice", PASSWORDS.alice);
    await client.fetch("/s/authorities?set=USER,ADMIN");
    const promoted = client.sessionId as string;
    await client.fetch("/s/authorities?set=USER");
    const demoted = client.sessionId as string;
    expect(demoted).not.toBe(promoted);
    await expect(app.store.get(promoted)).resolves.toBeUndefined();

    await client.fetch("/s/authorities?set=-");
    const signedOut = client.sessionId as string;
    expect(signedOut).not.toBe(demoted);
    expect((await client.fetch("/")).status).toBe(401);
  });

  it("keeps the id when the same principal and authorities are set again (in any order)", async () => {
    const app = await sessionApp();
    const client = app.client();
    await client.login("alice", PASSWORDS.alice);
    await client.fetch("/s/authorities?set=USER,ADMIN");
    const id = client.sessionId as string;
    const same = await client.fetch("/s/authorities?set=ADMIN,USER");
    expect(same.status).toBe(200);
    expect(same.headers.getSetCookie()).toEqual([]);
    await expect(same.json()).resolves.toEqual({ id });
    expect(client.sessionId).toBe(id);
    expect((await client.fetch("/admin/x")).status).toBe(200);
  });
});

describe("idle and absolute timeouts (fake clock)", () => {
  const IDLE = 10 * 60_000;
  const ABSOLUTE = 60 * 60_000;

  // The store's own TTL runs on the real clock here, so only the session leg can end a session.
  async function timedApp() {
    const clock = fakeClock();
    const store = new MemorySessionStore();
    const app = await sessionApp({
      clock,
      store,
      session: { idleTimeoutMs: IDLE, absoluteTimeoutMs: ABSOLUTE },
    });
    const client = app.client();
    expect((await client.login("alice", PASSWORDS.alice)).status).toBe(200);
    return { app, clock, store, client, id: client.sessionId as string };
  }

  it("keeps a session 1 ms before the idle timeout", async () => {
    const { clock, store, client, id } = await timedApp();
    clock.advance(IDLE - 1);
    const response = await client.fetch("/");
    expect(response.status).toBe(200);
    expect(response.headers.getSetCookie()).toEqual([]);
    await expect(store.get(id)).resolves.toBeDefined();
  });

  it.each([
    ["exactly at", 0],
    ["1 ms after", 1],
    ["a day after", 24 * 60 * 60_000],
  ])(
    "ends a session %s the idle timeout: 401, deleted from the store, cookie cleared",
    async (_label, extra) => {
      const { app, clock, store, client, id } = await timedApp();
      clock.advance(IDLE + extra);
      const response = await client.fetch("/");
      expect(response.status).toBe(401);
      await expect(store.get(id)).resolves.toBeUndefined();
      const cleared = setCookiesOf(response).find((c) => c.name === app.cookieName);
      expect(cleared).toBeDefined();
      expect(cleared?.value).toBe("");
      expect(cleared?.attributes.get("max-age")).toBe("0");
      expect(cleared && isDeletion(cleared)).toBe(true);
      expect(response.headers.get("cache-control")).toBe("no-store");
    },
  );

  it("keeps an active session alive past several idle periods but never past the absolute timeout", async () => {
    const { clock, store, client, id } = await timedApp();
    // A request every 6 minutes: 54 minutes of activity, more than five idle periods.
    for (let i = 0; i < 9; i++) {
      clock.advance(6 * 60_000);
      const response = await client.fetch("/");
      expect(response.status, `request ${i + 1}`).toBe(200);
    }
    clock.advance(6 * 60_000 - 1); // 1 ms before the absolute timeout
    expect((await client.fetch("/")).status).toBe(200);
    expect(client.sessionId).toBe(id);
    clock.advance(1); // exactly the absolute timeout, last access only 6 minutes ago
    const response = await client.fetch("/");
    expect(response.status).toBe(401);
    await expect(store.get(id)).resolves.toBeUndefined();
    expect(setCookiesOf(response).some((c) => isDeletion(c))).toBe(true);
  });

  it("writes the last-access time at most once per touchIntervalMs", async () => {
    const clock = fakeClock();
    const inner = new MemorySessionStore({ now: clock.now });
    const writes: number[] = [];
    const store = Object.assign(Object.create(inner) as MemorySessionStore, {
      get: (id: string) => inner.get(id),
      delete: (id: string) => inner.delete(id),
      set: (id: string, record: Parameters<MemorySessionStore["set"]>[1], ttl: number) => {
        writes.push(record.lastAccessAt);
        return inner.set(id, record, ttl);
      },
    });
    const app = await sessionApp({
      clock,
      store,
      session: { idleTimeoutMs: IDLE, absoluteTimeoutMs: ABSOLUTE, touchIntervalMs: 30_000 },
    });
    const client = app.client();
    await client.login("alice", PASSWORDS.alice);
    writes.length = 0;
    clock.advance(29_999);
    expect((await client.fetch("/")).status).toBe(200);
    expect(writes).toEqual([]);
    clock.advance(1);
    expect((await client.fetch("/")).status).toBe(200);
    expect(writes).toEqual([clock.now()]);
    expect((await client.fetch("/")).status).toBe(200);
    expect(writes).toHaveLength(1);
  });

  it("refreshes the store's TTL on touch, so a store-enforced expiry follows the activity", async () => {
    const clock = fakeClock();
    const store = new MemorySessionStore({ now: clock.now });
    const app = await sessionApp({
      clock,
      store,
      session: { idleTimeoutMs: IDLE, absoluteTimeoutMs: ABSOLUTE },
    });
    const client = app.client();
    await client.login("alice", PASSWORDS.alice);
    const id = client.sessionId as string;
    clock.advance(IDLE - 60_000);
    expect((await client.fetch("/")).status).toBe(200);
    clock.advance(IDLE - 60_000); // beyond the first TTL, within the refreshed one
    await expect(store.get(id)).resolves.toBeDefined();
    expect((await client.fetch("/")).status).toBe(200);
  });
});

describe("garbage session cookies", () => {
  async function signedIn() {
    const app = await sessionApp();
    const client = app.client();
    await client.login("alice", PASSWORDS.alice);
    return { app, id: client.sessionId as string };
  }

  function tamper(id: string): string {
    const at = 20;
    const swapped = id[at] === "A" ? "B" : "A";
    return id.slice(0, at) + swapped + id.slice(at + 1);
  }

  const variants: Array<[string, (name: string, id: string) => string]> = [
    ["tampered (one character changed)", (n, id) => `${n}=${tamper(id)}`],
    ["truncated", (n, id) => `${n}=${id.slice(0, -1)}`],
    ["one character too long", (n, id) => `${n}=${id}A`],
    ["unknown but well-formed", (n) => `${n}=${randomToken(32)}`],
    ["oversized (10 kB Cookie header)", (n, id) => `${n}=${id}; pad=${"a".repeat(10_240)}`],
    ["oversized value", (n) => `${n}=${"a".repeat(10_240)}`],
    ["non-ASCII", (n, id) => `${n}=${id.slice(0, -1)}\u00e9`],
    ["non-ASCII prefix", (n, id) => `${n}=\u00ff${id}`],
    ["the same name twice, both garbage", (n, id) => `${n}=${tamper(id)}; ${n}=${id.slice(1)}`],
    ["quoted garbage", (n, id) => `${n}="${tamper(id)}"`],
    ["quoted with a separator inside", (n) => `${n}="a;b"`],
    ["empty", (n) => `${n}=`],
    ["name without a value", (n) => `${n}`],
    ["base64 with padding", (n, id) => `${n}=${id}=`],
    ["standard base64 alphabet", (n, id) => `${n}=${id.slice(0, -2)}+/`],
  ];

  it.each(variants)(
    "treats a %s cookie as no session: never 500, 401 on a protected path",
    async (_label, make) => {
      const { app, id } = await signedIn();
      const cookie = make(app.cookieName, id);
      const visitor = app.client();
      const home = await visitor.fetch("/", { cookie });
      expect(home.status).toBe(401);
      expect(home.headers.get("www-authenticate")).not.toBeNull();
      const admin = await visitor.fetch("/admin/x", { cookie });
      expect(admin.status).toBe(401);
      // No session means no CSRF token can be valid for logout/login.
      const logout = await visitor.fetch("/logout", { method: "POST", cookie, token: "x.y" });
      expect(logout.status).toBe(403);
      // The token endpoint hands out a fresh session rather than adopting the garbage.
      const csrf = await app.client().fetch("/csrf", { cookie });
      expect(csrf.status).toBe(200);
      const fresh = setCookiesOf(csrf).find((c) => c.name === app.cookieName && !isDeletion(c));
      expect(fresh?.value).toMatch(SESSION_ID);
      expect(fresh?.value).not.toBe(id);
      // The real session is unharmed.
      await expect(app.store.get(id)).resolves.toBeDefined();
    },
  );
});

describe("session data", () => {
  it("persists data that was set and saved across requests", async () => {
    const app = await sessionApp();
    const client = app.client();
    const set = await client.fetch("/s/set?k=colour&v=blue");
    expect(set.status).toBe(200);
    expect(client.sessionId).toMatch(SESSION_ID);
    const get = await client.fetch("/s/get?k=colour");
    await expect(get.json()).resolves.toEqual({ value: "blue" });
    // Another browser does not see it.
    const other = await app.client().fetch("/s/get?k=colour");
    await expect(other.json()).resolves.toEqual({ value: null });
  });

  it("persists nothing without save(): no cookie, no store entry", async () => {
    const app = await sessionApp();
    const client = app.client();
    const response = await client.fetch("/s/set-unsaved?k=colour&v=blue");
    expect(response.headers.getSetCookie()).toEqual([]);
    expect(app.store.size).toBe(0);
    await client.fetch("/s/set?k=other&v=1");
    await client.fetch("/s/set-unsaved?k=colour&v=red");
    const get = await client.fetch("/s/get?k=colour");
    await expect(get.json()).resolves.toEqual({ value: null });
  });

  it("does not persist a nested value changed without save()", async () => {
    const app = await sessionApp();
    const client = app.client();
    await client.fetch("/s/cart");
    await client.fetch("/s/cart-push-unsaved?item=smuggled");
    const get = await client.fetch("/s/get?k=cart");
    await expect(get.json()).resolves.toEqual({ value: { items: ["first"] } });
  });

  it("persists a nested value changed in place and saved, over several requests", async () => {
    const app = await sessionApp();
    const client = app.client();
    await client.fetch("/s/cart");
    expect((await client.fetch("/s/cart-push?item=second")).status).toBe(200);
    expect((await client.fetch("/s/cart-push?item=third")).status).toBe(200);
    const get = await client.fetch("/s/get?k=cart");
    await expect(get.json()).resolves.toEqual({ value: { items: ["first", "second", "third"] } });
  });

  it("throws on every mutating method of a destroyed session, and destroy() is idempotent", async () => {
    const app = await sessionApp();
    const client = app.client();
    await client.fetch("/s/set?k=a&v=b");
    const id = client.sessionId as string;
    const response = await client.fetch("/s/destroyed");
    expect(response.status).toBe(200);
    await expect(response.json()).resolves.toEqual({
      threw: { set: true, delete: true, setAuthentication: true, regenerate: true, save: true },
      destroyAgain: "ok",
      destroyed: true,
      id: null,
    });
    await expect(app.store.get(id)).resolves.toBeUndefined();
    expect(client.sessionId).toBeUndefined(); // the cookie was cleared
  });

  it("answers 503 problem details, never 500, when the store's get throws", async () => {
    const failing: SessionStore = {
      get: async () => {
        throw new Error("connection refused");
      },
      set: async () => {},
      delete: async () => {},
    };
    let reached = false;
    const handler = newHandler(
      async () => {
        reached = true;
        return new Response("ok");
      },
      {
        session: sessions({ store: failing }),
        authorization: authz.routes([authz.anyRequest().permitAll()]),
        onError: () => {},
      },
    );
    const request = new Request("https://app.example/anything", {
      headers: { cookie: `${SECURE_COOKIE}=${randomToken(32)}` },
    });
    const response = await handler(request);
    expect(response.status).toBe(503);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    const body = (await response.json()) as Record<string, unknown>;
    expect(body.status).toBe(503);
    expect(JSON.stringify(body)).not.toContain("connection refused");
    expect(reached).toBe(false);
  });

  it("binds the session and its principal for downstream code", async () => {
    const app = await sessionApp();
    const client = app.client();
    await client.login("ada", PASSWORDS.ada);
    const home = await client.fetch("/");
    await expect(home.json()).resolves.toEqual({ name: "ada", authorities: ["ADMIN"] });
    expect((await client.fetch("/admin/panel")).status).toBe(200);
  });
});

describe("shared principals", () => {
  const runtime = {
    store: new MemorySessionStore(),
    now: () => 0,
    idleTimeoutMs: 1000,
    absoluteTimeoutMs: 1000,
    setCookie: () => {},
  };
  const record = (name: string, authorities: string[]) => ({
    data: {},
    createdAt: 0,
    lastAccessAt: 0,
    principal: { name, authorities },
  });

  it("never hands one user's principal to another whose name and authorities read alike when joined", () => {
    const first = new Session(runtime, {}, "a".repeat(43), record("a\u0000ADMIN", ["USER"]))
      .authentication;
    const second = new Session(runtime, {}, "b".repeat(43), record("a", ["ADMIN", "USER"]))
      .authentication;
    expect(first?.name).toBe("a\u0000ADMIN");
    expect(first?.authorities).toEqual(["USER"]);
    expect(second?.name).toBe("a");
    expect(second?.authorities).toEqual(["ADMIN", "USER"]);
  });

  it("reuses one frozen principal for the same user across requests", () => {
    const one = new Session(runtime, {}, "c".repeat(43), record("ada", ["ADMIN"])).authentication;
    const two = new Session(runtime, {}, "d".repeat(43), record("ada", ["ADMIN"])).authentication;
    expect(one).toBe(two);
    expect(Object.isFrozen(one)).toBe(true);
  });
});
