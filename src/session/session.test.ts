import { describe, expect, it, vi } from "vitest";
import { isDeletion, setCookiesOf } from "../../test/support/cookie-jar.ts";
import {
  defaultRouter,
  defaultRules,
  type FakeClock,
  fakeClock,
  PASSWORDS,
  SECURE_COOKIE,
  START,
  testApp,
} from "../../test/support/session-app.ts";
import * as authz from "../authz/index.ts";
import { newHandler } from "../chain/index.ts";
import { createAuthentication, isAuthenticated } from "../core/authentication.ts";
import { randomToken } from "../core/encoding.ts";
import { InvalidOptionsError, PortcullisError } from "../core/errors.ts";
import type { FetchHandler } from "../core/handler.ts";
import { onWarning, type PortcullisWarning, resetWarnings } from "../core/warning.ts";
import {
  MemorySessionStore,
  Session,
  type SessionOptions,
  type SessionRecord,
  type SessionStore,
  sessionFrom,
  sessions,
} from "./index.ts";

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

  // The store's clock stands still, so its TTL never ends a session: only the session leg does.
  async function timedApp() {
    const clock = fakeClock();
    const store = new MemorySessionStore({ now: () => START });
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
    const store: SessionStore = {
      get: (id) => inner.get(id),
      create: (id, record, ttl) => inner.create(id, record, ttl),
      update: (id, record, ttl) => inner.update(id, record, ttl),
      delete: (id) => inner.delete(id),
      touch: (id, at, ttl) => {
        writes.push(at);
        return inner.touch(id, at, ttl);
      },
    };
    const app = await sessionApp({
      clock,
      store: store as MemorySessionStore,
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

  // Ids of the right shape that the store does not hold: kept, as the id of an empty anonymous session.
  const wellFormed: Array<[string, (name: string, id: string) => string]> = [
    ["tampered (one character changed)", (n, id) => `${n}=${tamper(id)}`],
    ["unknown but well-formed", (n) => `${n}=${randomToken(32)}`],
    ["the same name twice, the first tampered", (n, id) => `${n}=${tamper(id)}; ${n}=${id}`],
    ["quoted and tampered", (n, id) => `${n}="${tamper(id)}"`],
  ];
  const malformed: Array<[string, (name: string, id: string) => string]> = [
    ["truncated", (n, id) => `${n}=${id.slice(0, -1)}`],
    ["one character too long", (n, id) => `${n}=${id}A`],
    ["oversized value", (n) => `${n}=${"a".repeat(10_240)}`],
    ["non-ASCII", (n, id) => `${n}=${id.slice(0, -1)}\u00e9`],
    ["non-ASCII prefix", (n, id) => `${n}=\u00ff${id}`],
    ["the same name twice, both garbage", (n, id) => `${n}=${id.slice(1)}; ${n}=${id}`],
    ["quoted with a separator inside", (n) => `${n}="a;b"`],
    ["empty", (n) => `${n}=`],
    ["name without a value", (n) => `${n}`],
    ["base64 with padding", (n, id) => `${n}=${id}=`],
    ["standard base64 alphabet", (n, id) => `${n}=${id.slice(0, -2)}+/`],
  ];

  async function expectAnonymous(app: Awaited<ReturnType<typeof sessionApp>>, cookie: string) {
    const visitor = app.client();
    const home = await visitor.fetch("/", { cookie });
    expect(home.status).toBe(401);
    expect(home.headers.get("www-authenticate")).not.toBeNull();
    const admin = await visitor.fetch("/admin/x", { cookie });
    expect(admin.status).toBe(401);
    // No CSRF token that was not issued for the id can be valid for logout/login.
    const logout = await visitor.fetch("/logout", { method: "POST", cookie, token: "x.y" });
    expect(logout.status).toBe(403);
  }

  it.each(malformed)(
    "treats a %s cookie as no session: never 500, 401 on a protected path, a fresh id from /csrf",
    async (_label, make) => {
      const { app, id } = await signedIn();
      const cookie = make(app.cookieName, id);
      await expectAnonymous(app, cookie);
      // The token endpoint hands out a fresh id rather than adopting the garbage.
      const csrf = await app.client().fetch("/csrf", { cookie });
      expect(csrf.status).toBe(200);
      const fresh = setCookiesOf(csrf).find((c) => c.name === app.cookieName && !isDeletion(c));
      expect(fresh?.value).toMatch(SESSION_ID);
      expect(fresh?.value).not.toBe(id);
      // The real session is unharmed.
      await expect(app.store.get(id)).resolves.toBeDefined();
    },
  );

  it.each(wellFormed)(
    "treats a %s cookie as an empty anonymous session: never 500, 401 on a protected path, nothing stored",
    async (_label, make) => {
      const { app, id } = await signedIn();
      const cookie = make(app.cookieName, id);
      await expectAnonymous(app, cookie);
      const held = app.store.size;
      // The token endpoint binds a token to the id the cookie carries, and writes nothing.
      const csrf = await app.client().fetch("/csrf", { cookie });
      expect(csrf.status).toBe(200);
      expect(csrf.headers.getSetCookie()).toEqual([]);
      expect(app.store.size).toBe(held);
      await expect(app.store.get(id)).resolves.toBeDefined();
    },
  );
});

describe("the Cookie header bound", () => {
  it("reads a Cookie header of 32 KiB, and answers a longer one 431 instead of signing the user out", async () => {
    const app = await sessionApp();
    const client = app.client();
    await client.login("alice", PASSWORDS.alice);
    const own = `${app.cookieName}=${client.sessionId}; pad=`;
    const atBound = own + "p".repeat(32 * 1024 - own.length);
    expect(atBound.length).toBe(32 * 1024);
    expect((await client.fetch("/", { cookie: atBound })).status).toBe(200);
    // 12 KiB: past the 8 KiB that once read as no cookie at all.
    const twelve = await client.fetch("/", { cookie: `${own}${"p".repeat(12 * 1024)}` });
    expect(twelve.status).toBe(200);

    const over = await client.fetch("/", { cookie: `${atBound}p` });
    expect(over.status).toBe(431);
    expect(over.headers.get("content-type")).toBe("application/problem+json");
    expect(over.headers.getSetCookie()).toEqual([]); // the session cookie is left alone
    const body = (await over.json()) as Record<string, unknown>;
    expect(body.title).toBe("Request Header Fields Too Large");
    expect(String(body.detail)).toContain("Cookie");
    // Without a session cookie in it, on a public path too: the header is refused, not misread.
    const anyone = await app.client().fetch("/public/x", { cookie: `a=${"b".repeat(33 * 1024)}` });
    expect(anyone.status).toBe(431);
    // The session lives on.
    expect((await client.fetch("/")).status).toBe(200);
  });
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
      create: async () => true,
      update: async () => true,
      touch: async () => true,
      delete: async () => true,
    };
    let reached = false;
    const handler = newHandler(
      async () => {
        reached = true;
        return new Response("ok");
      },
      {
        session: sessions({ store: failing, onStoreError: () => {} }),
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

  it("honours a memory store whose get was replaced", async () => {
    const store = new MemorySessionStore();
    const handler = newHandler(async () => new Response("ok"), {
      session: sessions({ store, onStoreError: () => {} }),
      authorization: authz.routes([authz.anyRequest().permitAll()]),
      onError: () => {},
    });
    const send = () =>
      handler(
        new Request("https://app.example/anything", {
          headers: { cookie: `${SECURE_COOKIE}=${randomToken(32)}` },
        }),
      );
    expect((await send()).status).toBe(200);
    const spy = vi.spyOn(store, "get").mockRejectedValue(new Error("connection refused"));
    expect((await send()).status).toBe(503);
    expect(spy).toHaveBeenCalledTimes(1);
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
    anonymousIdleTimeoutMs: 1000,
    absoluteTimeoutMs: 1000,
    call: <T>(operation: () => Promise<T>) => operation(),
    setCookie: () => {},
    secure: true,
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

/** A downstream route that waits for the test before it saves, so another request can end the session first. */
function gatedApp(action: (request: Request) => Promise<Record<string, unknown>>) {
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const router: FetchHandler = async (request) => {
    if (new URL(request.url).pathname === "/s/gated") {
      await gate;
      const result = await action(request);
      return Response.json({ ...result, authenticated: isAuthenticated(request) });
    }
    return sessionRouter(request);
  };
  return { open, router };
}

describe("a session ended by another request while this one runs", () => {
  async function race(action: (request: Request) => Promise<Record<string, unknown>>) {
    const { open, router } = gatedApp(action);
    const app = await sessionApp({ router });
    const client = app.client();
    await client.login("alice", PASSWORDS.alice);
    const id = client.sessionId as string;
    const pending = client.fetch("/s/gated");
    const other = app.client(client.jar.copy());
    const logout = await other.fetch("/logout", { method: "POST", token: await other.csrf() });
    expect(logout.status).toBe(204);
    open();
    const response = await pending;
    return { app, id, response, body: (await response.json()) as Record<string, unknown> };
  }

  it("save() answers false, writes nothing, clears the cookie and signs the request out", async () => {
    const { app, id, response, body } = await race(async (request) => {
      const session = sessionFrom(request) as Session;
      session.set("late", true);
      return { saved: await session.save(), id: session.id ?? null, stored: session.stored };
    });
    expect(body).toEqual({ saved: false, id: null, stored: false, authenticated: false });
    const cookies = setCookiesOf(response).filter((c) => c.name === app.cookieName);
    expect(cookies).toHaveLength(1);
    expect(cookies[0] && isDeletion(cookies[0])).toBe(true);
    await expect(app.store.get(id)).resolves.toBeUndefined();
    expect(app.store.size).toBe(0);
    expect((await app.client().fetch("/", { cookie: `${app.cookieName}=${id}` })).status).toBe(401);
  });

  it("a rotation that carries the same principal on answers false and creates no new session", async () => {
    const { app, response, body } = await race(async (request) => {
      const session = sessionFrom(request) as Session;
      session.setAuthentication(createAuthentication("alice", ["USER", "ADMIN"]));
      return { saved: await session.save() };
    });
    expect(body).toEqual({ saved: false, authenticated: false });
    expect(app.store.size).toBe(0);
    expect(setCookiesOf(response).every((c) => isDeletion(c))).toBe(true);
  });

  it("a sign-in of another principal goes on: it is a new session, not the ended one", async () => {
    const { app, id, response, body } = await race(async (request) => {
      const session = sessionFrom(request) as Session;
      session.setAuthentication(createAuthentication("ada", ["ADMIN"]));
      return { saved: await session.save() };
    });
    expect(body.saved).toBe(true);
    const [cookie] = setCookiesOf(response).filter((c) => !isDeletion(c));
    expect(cookie?.value).toMatch(SESSION_ID);
    expect(cookie?.value).not.toBe(id);
    await expect(app.store.get(cookie?.value as string)).resolves.toMatchObject({
      principal: { name: "ada" },
    });
    await expect(app.store.get(id)).resolves.toBeUndefined();
  });

  it("a refresh that finds the session gone serves the request as signed out", async () => {
    const clock = fakeClock();
    const inner = new MemorySessionStore({ now: clock.now });
    const store: SessionStore = {
      get: (id) => inner.get(id),
      create: (id, record, ttl) => inner.create(id, record, ttl),
      update: (id, record, ttl) => inner.update(id, record, ttl),
      // Another instance logs out between this request's read and its refresh.
      touch: async (id) => {
        await inner.delete(id);
        return false;
      },
      delete: (id) => inner.delete(id),
    };
    const app = await sessionApp({ clock, store: store as MemorySessionStore });
    const client = app.client();
    await client.login("alice", PASSWORDS.alice);
    clock.advance(60_000);
    expect((await client.fetch("/")).status).toBe(401);
    expect(inner.size).toBe(0);
  });
});

describe("anonymous sessions", () => {
  it("a visitor who only fetches a token, posts with it and signs in never costs a store write before sign-in", async () => {
    const app = await sessionApp();
    const client = app.client();
    const token = await client.csrf();
    const preLogin = client.sessionId as string;
    expect((await client.fetch("/api/x", { method: "POST", token, body: "a" })).status).toBe(200);
    expect(app.store.size).toBe(0);
    expect((await client.login("alice", PASSWORDS.alice)).status).toBe(200);
    expect(client.sessionId).not.toBe(preLogin);
    expect(app.store.size).toBe(1);
    await expect(app.store.get(preLogin)).resolves.toBeUndefined();
  });

  it("keeps data an application saves for an anonymous visitor for anonymousIdleTimeoutMs (default 15 min), signed-in sessions for idleTimeoutMs", async () => {
    const clock = fakeClock();
    const store = new MemorySessionStore({ now: clock.now });
    const app = await sessionApp({ clock, store });
    const visitor = app.client();
    await visitor.fetch("/s/set?k=colour&v=blue");
    const user = app.client();
    await user.login("alice", PASSWORDS.alice);
    clock.advance(15 * 60_000 - 1);
    await expect((await visitor.fetch("/s/get?k=colour")).json()).resolves.toEqual({
      value: "blue",
    });
    expect((await user.fetch("/")).status).toBe(200);
    // 15 minutes after the last request: the anonymous data is gone, the signed-in session lives.
    clock.advance(15 * 60_000);
    await expect((await visitor.fetch("/s/get?k=colour")).json()).resolves.toEqual({
      value: null,
    });
    expect((await user.fetch("/")).status).toBe(200);
    expect(store.size).toBe(1);
  });

  it("honours anonymousIdleTimeoutMs, never beyond idleTimeoutMs, and refuses a non-positive one", async () => {
    const clock = fakeClock();
    const store = new MemorySessionStore({ now: clock.now });
    const app = await sessionApp({ clock, store, session: { anonymousIdleTimeoutMs: 60_000 } });
    const visitor = app.client();
    await visitor.fetch("/s/set?k=a&v=1");
    clock.advance(60_000);
    await expect((await visitor.fetch("/s/get?k=a")).json()).resolves.toEqual({ value: null });

    const clamped = await sessionApp({
      clock,
      store: new MemorySessionStore({ now: clock.now }),
      session: { idleTimeoutMs: 30_000, anonymousIdleTimeoutMs: 10 * 60_000 },
    });
    const other = clamped.client();
    await other.fetch("/s/set?k=a&v=1");
    clock.advance(30_000);
    await expect((await other.fetch("/s/get?k=a")).json()).resolves.toEqual({ value: null });
    for (const bad of [0, -1, Number.NaN]) {
      expect(() => sessions({ anonymousIdleTimeoutMs: bad })).toThrow(InvalidOptionsError);
    }
  });
});

type StoreMethod = "get" | "create" | "update" | "touch" | "delete";

/** A memory store whose chosen methods never answer (`"stall"`) or reject (`"fail"`). */
function faultyStore(clock: FakeClock, faults: Partial<Record<StoreMethod, "stall" | "fail">>) {
  const inner = new MemorySessionStore({ now: clock.now });
  const broken = { faults };
  const wrap =
    <A extends unknown[], R>(name: StoreMethod, call: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      const fault = broken.faults[name];
      if (fault === "stall") return new Promise<R>(() => {});
      if (fault === "fail") return Promise.reject(new Error("connection refused"));
      return call(...args);
    };
  const store: SessionStore = {
    get: wrap("get", (id: string) => inner.get(id)),
    create: wrap("create", (id: string, r: SessionRecord, t: number) => inner.create(id, r, t)),
    update: wrap("update", (id: string, r: SessionRecord, t: number) => inner.update(id, r, t)),
    touch: wrap("touch", (id: string, at: number, t: number) => inner.touch(id, at, t)),
    delete: wrap("delete", (id: string) => inner.delete(id)),
  };
  return { store, inner, broken };
}

/** Rejects when `promise` has not settled within `ms`: a hang fails the test rather than timing it out. */
function within<T>(promise: Promise<T>, ms = 3000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe("a store that fails or stalls", () => {
  async function signedInWith(faults: Partial<Record<StoreMethod, "stall" | "fail">>) {
    const clock = fakeClock();
    const { store, inner, broken } = faultyStore(clock, {});
    const errors: unknown[] = [];
    const app = await sessionApp({
      clock,
      store: store as MemorySessionStore,
      session: { storeTimeoutMs: 50, onStoreError: (error) => errors.push(error) },
    });
    const client = app.client();
    await client.login("alice", PASSWORDS.alice);
    const token = await client.csrf();
    broken.faults = faults;
    return { app, clock, client, inner, broken, errors, token };
  }

  async function expect503(response: Response) {
    expect(response.status).toBe(503);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    const text = await response.text();
    expect(text).not.toContain("connection refused");
    expect(text).not.toContain("did not answer");
  }

  it.each(["stall", "fail"] as const)(
    "answers 503 when reading the session would %s, and never runs the handler",
    async (fault) => {
      const { client, errors } = await signedInWith({ get: fault });
      await expect503(await within(client.fetch("/")));
      expect(errors).toHaveLength(1);
      // A request without a session cookie needs no store and is served.
      expect((await within(client.fetch("/public/x", { cookie: null }))).status).toBe(200);
    },
  );

  it.each(["stall", "fail"] as const)("answers 503 when the refresh would %s", async (fault) => {
    const { client, clock } = await signedInWith({ touch: fault });
    clock.advance(5 * 60_000);
    await expect503(await within(client.fetch("/")));
  });

  it.each(["stall", "fail"] as const)(
    "answers 503 when a save in the handler would %s, and sets no cookie",
    async (fault) => {
      const { client } = await signedInWith({ update: fault });
      const response = await within(client.fetch("/s/set?k=a&v=b"));
      await expect503(response);
      expect(response.headers.getSetCookie()).toEqual([]);
    },
  );

  it.each(["stall", "fail"] as const)(
    "answers a sign-in 503 when creating the session would %s",
    async (fault) => {
      const clock = fakeClock();
      const { store, broken } = faultyStore(clock, {});
      const app = await sessionApp({
        clock,
        store: store as MemorySessionStore,
        session: { storeTimeoutMs: 50, onStoreError: () => {} },
      });
      const client = app.client();
      broken.faults = { create: fault };
      const response = await within(client.login("alice", PASSWORDS.alice));
      await expect503(response);
      expect(response.headers.getSetCookie()).toEqual([]);
    },
  );

  it.each(["stall", "fail"] as const)(
    "answers a logout 503, not 204, when deleting the session would %s, and the user can log out once the store is back",
    async (fault) => {
      const { client, inner, broken, token } = await signedInWith({ delete: fault });
      const id = client.sessionId as string;
      const response = await within(client.fetch("/logout", { method: "POST", token }));
      await expect503(response);
      expect(response.headers.getSetCookie()).toEqual([]);
      await expect(inner.get(id)).resolves.toBeDefined();
      broken.faults = {};
      expect((await client.fetch("/logout", { method: "POST", token })).status).toBe(204);
      await expect(inner.get(id)).resolves.toBeUndefined();
    },
  );

  it("reports to console.error by default, at most once every 10 s", async () => {
    const clock = fakeClock();
    const { store, broken } = faultyStore(clock, {});
    const app = await sessionApp({ clock, store: store as MemorySessionStore });
    const client = app.client();
    await client.login("alice", PASSWORDS.alice);
    broken.faults = { get: "fail" };
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      for (let i = 0; i < 20; i++) expect((await client.fetch("/")).status).toBe(503);
      expect(errors).toHaveBeenCalledTimes(1);
    } finally {
      errors.mockRestore();
    }
  });

  it("refuses storeTimeoutMs 0 and an onStoreError that is not a function", () => {
    expect(() => sessions({ storeTimeoutMs: 0 })).toThrow(InvalidOptionsError);
    expect(() => sessions({ onStoreError: "log" as unknown as () => void })).toThrow(
      InvalidOptionsError,
    );
  });
});

describe("the warning for a Secure cookie on plain HTTP", () => {
  async function cookieOn(url: string, options: SessionOptions = {}, headers: HeadersInit = {}) {
    const app = await sessionApp({ session: options });
    const response = await app.handler(new Request(url, { headers }));
    expect(response.status).toBe(200);
    return response;
  }

  function capture() {
    resetWarnings();
    const seen: PortcullisWarning[] = [];
    const previous = onWarning((warning) => seen.push(warning));
    return { seen, restore: () => onWarning(previous) };
  }

  it("fires once, with its code, for a Secure session cookie set on http:// for another host", async () => {
    const { seen, restore } = capture();
    try {
      await cookieOn("http://app.example/csrf");
      await cookieOn("http://other.example/csrf");
      expect(seen).toHaveLength(1);
      expect(seen[0]?.code).toBe("PORTCULLIS_SECURE_COOKIE_OVER_HTTP");
      expect(seen[0]?.message).toContain("secure: false");
    } finally {
      restore();
    }
  });

  it.each([
    ["http://localhost/csrf", {}],
    ["http://localhost:3000/csrf", {}],
    ["http://app.localhost/csrf", {}],
    ["http://127.0.0.1:8080/csrf", {}],
    ["http://127.1.2.3/csrf", {}],
    ["http://[::1]:8080/csrf", {}],
    ["https://app.example/csrf", {}],
    ["http://app.example/csrf", { "x-forwarded-proto": "https" }],
    ["http://app.example/csrf", { forwarded: "for=192.0.2.1;proto=https" }],
  ])("stays quiet for %s %j", async (url, headers) => {
    const { seen, restore } = capture();
    try {
      await cookieOn(url, {}, headers);
      expect(seen).toEqual([]);
    } finally {
      restore();
    }
  });

  it("stays quiet for a cookie without Secure", async () => {
    const { seen, restore } = capture();
    try {
      await cookieOn("http://app.example/csrf", { secure: false });
      expect(seen).toEqual([]);
    } finally {
      restore();
    }
  });
});
