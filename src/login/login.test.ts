import { describe, expect, it, vi } from "vitest";
import { isDeletion, setCookiesOf } from "../../test/support/cookie-jar.ts";
import {
  Client,
  type ClientInit,
  cheapEncoder,
  defaultRouter,
  defaultRules,
  PASSWORDS,
  type TestAppOptions,
  testApp,
} from "../../test/support/session-app.ts";
import * as authz from "../authz/index.ts";
import { newHandler } from "../chain/index.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { csrf } from "../csrf/index.ts";
import { sessions } from "../session/index.ts";
import {
  createPasswordEncoder,
  type LoginAttemptStore,
  type LoginOptions,
  login,
  MemoryLoginAttemptStore,
  type PasswordCredentialsOptions,
  type PasswordEncoder,
  Pbkdf2PasswordEncoder,
  passwordCredentials,
} from "./index.ts";

const encode = (text: string) => new TextEncoder().encode(text);
const BOUNDARY = "----portcullis-login-boundary";
const JSON_TYPE = "application/json";
const FORM_TYPE = "application/x-www-form-urlencoded";
const MULTIPART_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

function multipart(fields: Record<string, string>): string {
  let body = "";
  for (const [name, value] of Object.entries(fields)) {
    body += `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  }
  return `${body}--${BOUNDARY}--\r\n`;
}

const json = (value: unknown) => JSON.stringify(value);
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** Rejects when `promise` has not settled within `ms`, so a hung request fails instead of timing out. */
function within<T>(promise: Promise<T>, ms = 2000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no response within ${ms} ms (request hangs)`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

type AppOptions = Partial<Omit<LoginOptions, "credentials">> & Partial<PasswordCredentialsOptions>;
const CREDENTIALS_OPTIONS = new Set([
  "findUser",
  "passwordEncoder",
  "onPasswordUpgrade",
  "throttle",
  "clientKey",
  "now",
]);

/** An app, a client with a live session, and a poster of login bodies carrying that session's token. */
async function loginApp(options: AppOptions = {}, app: TestAppOptions = {}) {
  const credentialsOptions: Record<string, unknown> = {};
  const loginOptions: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) {
    (CREDENTIALS_OPTIONS.has(key) ? credentialsOptions : loginOptions)[key] = value;
  }
  const built = await testApp({ login: loginOptions, credentials: credentialsOptions, ...app });
  const client = built.client();
  let token = await client.csrf();
  /** `type` null sends no Content-Type at all. */
  const post = async (
    body: BodyInit | null,
    type: string | null = JSON_TYPE,
    init: ClientInit = {},
  ) => {
    const response = await client.fetch("/login", {
      method: "POST",
      token,
      ...init,
      headers: { ...(type === null ? {} : { "content-type": type }), ...init.headers },
      body,
    });
    // A successful login rotates the session, and with it the token.
    if (response.status === 200 || response.status === 303) token = await client.csrf();
    return response;
  };
  return { app: built, client, post, token: () => token };
}

const credentials = (username: string, password: string) => json({ username, password });

describe("POST /login", () => {
  it("signs in with JSON: 200 {name, authorities}, no-store, a fresh session cookie", async () => {
    const { app, client, post } = await loginApp();
    const before = client.sessionId as string;
    const response = await post(credentials("alice", PASSWORDS.alice));
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    await expect(response.json()).resolves.toEqual({ name: "alice", authorities: ["USER"] });
    const cookies = setCookiesOf(response).filter((c) => c.name === app.cookieName);
    expect(cookies).toHaveLength(1);
    expect(cookies[0]?.value).toMatch(SESSION_ID);
    expect(cookies[0]?.value).not.toBe(before);
    expect(cookies[0]?.attributes.get("httponly")).toBe("");
    expect(cookies[0]?.attributes.get("secure")).toBe("");
    await expect(app.store.get(before)).resolves.toBeUndefined();
    await expect(app.store.get(cookies[0]?.value as string)).resolves.toMatchObject({
      principal: { name: "alice", authorities: ["USER"] },
    });
    expect((await client.fetch("/")).status).toBe(200);
  });

  it("signs in with an urlencoded form (200 JSON when no redirect is configured)", async () => {
    const { client, post } = await loginApp();
    const before = client.sessionId;
    const response = await post(form({ username: "ada", password: PASSWORDS.ada }), FORM_TYPE);
    expect(response.status).toBe(200);
    await expect(response.json()).resolves.toEqual({ name: "ada", authorities: ["ADMIN"] });
    expect(client.sessionId).not.toBe(before);
    expect((await client.fetch("/admin/x")).status).toBe(200);
  });

  it("signs in with a multipart form", async () => {
    const { client, post } = await loginApp();
    const response = await post(
      multipart({ username: "alice", password: PASSWORDS.alice }),
      MULTIPART_TYPE,
    );
    expect(response.status).toBe(200);
    await expect(response.json()).resolves.toEqual({ name: "alice", authorities: ["USER"] });
    expect((await client.fetch("/")).status).toBe(200);
  });

  it("accepts the media type in any case and with parameters", async () => {
    const { post } = await loginApp();
    const response = await post(
      credentials("alice", PASSWORDS.alice),
      "Application/JSON; charset=UTF-8",
    );
    expect(response.status).toBe(200);
  });

  it("answers a wrong password and an unknown user alike: 401 problem+json, session unchanged", async () => {
    const { client, post } = await loginApp();
    const before = client.sessionId;
    const wrong = await post(credentials("alice", "not-her-password"));
    const unknown = await post(credentials("nobody", "whatever"));
    for (const response of [wrong, unknown]) {
      expect(response.status).toBe(401);
      expect(response.headers.get("content-type")).toBe("application/problem+json");
      expect(response.headers.getSetCookie()).toEqual([]);
    }
    expect(await wrong.text()).toBe(await unknown.text());
    expect(client.sessionId).toBe(before);
    expect((await client.fetch("/")).status).toBe(401);
  });

  it("does not sign in with the right password for a differently cased username", async () => {
    const { post } = await loginApp();
    expect((await post(credentials("ALICE", PASSWORDS.alice))).status).toBe(401);
  });

  it("is only mounted for POST: GET /login goes on to authorization", async () => {
    const { client } = await loginApp();
    const response = await client.fetch("/login");
    expect(response.status).toBe(401);
  });
});

describe("password checks cost the same for unknown users and wrong passwords", () => {
  function spyEncoder(real: PasswordEncoder) {
    return {
      hash: vi.fn((password: string) => real.hash(password)),
      verify: vi.fn((password: string, encoded: string) => real.verify(password, encoded)),
      needsRehash: vi.fn((encoded: string) => real.needsRehash(encoded)),
    };
  }

  it("calls verify exactly once for an unknown user and once for a wrong password, on a hash of the same parameters", async () => {
    const spy = spyEncoder(cheapEncoder());
    const { post } = await loginApp({}, { encoder: spy });
    spy.hash.mockClear();

    expect((await post(credentials("nobody", "guess"))).status).toBe(401);
    expect(spy.verify).toHaveBeenCalledTimes(1);
    const unknownHash = spy.verify.mock.calls[0]?.[1] as string;
    expect(unknownHash).toMatch(/^\{scrypt\}ln=10,r=8,p=1\$/);
    expect(spy.hash.mock.calls.length).toBeLessThanOrEqual(1);

    spy.verify.mockClear();
    spy.hash.mockClear();
    expect((await post(credentials("alice", "guess"))).status).toBe(401);
    expect(spy.verify).toHaveBeenCalledTimes(1);
    expect(spy.verify.mock.calls[0]?.[1]).toMatch(/^\{scrypt\}ln=10,r=8,p=1\$/);
    expect(spy.hash).not.toHaveBeenCalled();

    // Later unknown users reuse the dummy hash: one verify, no hashing.
    spy.verify.mockClear();
    expect((await post(credentials("someone-else", "guess"))).status).toBe(401);
    expect(spy.verify).toHaveBeenCalledTimes(1);
    expect(spy.hash).not.toHaveBeenCalled();
  });
});

describe("malformed login bodies never cause a 500", () => {
  const badJson: Array<[string, BodyInit]> = [
    ["an empty object", json({})],
    ["no password", json({ username: "alice" })],
    ["no username", json({ password: PASSWORDS.alice })],
    ["an empty username", json({ username: "", password: PASSWORDS.alice })],
    ["an empty password", json({ username: "alice", password: "" })],
    ["a numeric username", json({ username: 1, password: PASSWORDS.alice })],
    ["a boolean password", json({ username: "alice", password: true })],
    ["a null password", json({ username: "alice", password: null })],
    ["an array username", json({ username: ["alice"], password: PASSWORDS.alice })],
    ["an operator-object username", json({ username: { $ne: null }, password: { $ne: null } })],
    ["a JSON array", json(["alice", PASSWORDS.alice])],
    ["JSON null", "null"],
    ["a JSON string", json("alice")],
    ["a JSON number", "42"],
    [
      "credentials only under __proto__",
      `{"__proto__":{"username":"alice","password":"${PASSWORDS.alice}"}}`,
    ],
    ["invalid JSON", '{"username": "alice", "password": '],
    ["an empty body", ""],
    ["invalid UTF-8", new Uint8Array([0x7b, 0x22, 0x75, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
  ];

  it.each(badJson)("answers 400 to %s", async (_label, body) => {
    const { client, post } = await loginApp();
    const response = await post(body);
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect((await client.fetch("/")).status).toBe(401);
  });

  it.each([
    ["an urlencoded form without a password", form({ username: "alice" }), FORM_TYPE],
    [
      "an urlencoded form with invalid UTF-8",
      new Uint8Array([0x75, 0x73, 0x65, 0x72, 0x6e, 0x61, 0x6d, 0x65, 0x3d, 0xff]),
      FORM_TYPE,
    ],
    [
      "a multipart form without a username",
      multipart({ password: PASSWORDS.alice }),
      MULTIPART_TYPE,
    ],
    [
      "a multipart body with another boundary",
      multipart({ username: "alice" }),
      "multipart/form-data; boundary=other",
    ],
    [
      "a multipart form without a boundary",
      multipart({ username: "alice" }),
      "multipart/form-data",
    ],
  ])("answers 400 to %s", async (_label, body, type) => {
    const { post } = await loginApp();
    const response = await post(body, type);
    expect(response.status).toBe(400);
  });

  it("answers 400 when the username is an uploaded file", async () => {
    const { post } = await loginApp();
    const body =
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="username"; filename="u.txt"\r\n` +
      `Content-Type: text/plain\r\n\r\nalice\r\n` +
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="password"\r\n\r\n${PASSWORDS.alice}\r\n--${BOUNDARY}--\r\n`;
    expect((await post(body, MULTIPART_TYPE)).status).toBe(400);
  });

  it("ignores extra fields", async () => {
    const { post } = await loginApp();
    const response = await post(
      json({ username: "alice", password: PASSWORDS.alice, remember: true, role: "ADMIN" }),
    );
    expect(response.status).toBe(200);
    await expect(response.json()).resolves.toEqual({ name: "alice", authorities: ["USER"] });
  });

  it.each([
    ["no content type", null],
    ["text/plain", "text/plain"],
    ["application/xml", "application/xml"],
    ["application/json-patch+json", "application/json-patch+json"],
    ["a bare parameter list", "; charset=utf-8"],
  ])("answers 415 to %s", async (_label, type) => {
    const { post } = await loginApp();
    const response = await post(encode(credentials("alice", PASSWORDS.alice)), type);
    expect(response.status).toBe(415);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
  });

  const bigBody = () => credentials("alice", "p".repeat(2000));

  it("answers 413 to a body over maxBodyBytes announced by Content-Length", async () => {
    const { post } = await loginApp({ maxBodyBytes: 1024 });
    const body = bigBody();
    const response = await post(body, JSON_TYPE, {
      headers: { "content-length": String(encode(body).byteLength) },
    });
    expect(response.status).toBe(413);
  });

  it("answers 413 to a streamed body over maxBodyBytes without Content-Length", async () => {
    const { post } = await loginApp({ maxBodyBytes: 1024 });
    const bytes = encode(bigBody());
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 256) controller.enqueue(bytes.slice(i, i + 256));
        controller.close();
      },
    });
    const response = await within(post(stream, JSON_TYPE, { duplex: "half" } as ClientInit));
    expect(response.status).toBe(413);
  });

  it("answers 413 to a body over maxBodyBytes that announces a smaller Content-Length", async () => {
    const { post } = await loginApp({ maxBodyBytes: 1024 });
    const response = await post(bigBody(), JSON_TYPE, { headers: { "content-length": "10" } });
    expect(response.status).toBe(413);
  });

  it("answers 413 to a JSON body over the default 8 KiB", async () => {
    const { post } = await loginApp();
    expect((await post(credentials("alice", "p".repeat(9000)))).status).toBe(413);
  });

  it("answers 413 (within 2 s) to a form login over maxBodyBytes whose token is in the _csrf field", async () => {
    const { post, token } = await loginApp({ maxBodyBytes: 1024 });
    const body = form({
      _csrf: token(),
      username: "alice",
      password: PASSWORDS.alice,
      pad: "x".repeat(4000),
    });
    const response = await within(post(body, FORM_TYPE, { token: undefined }));
    expect(response.status).toBe(413);
  });

  it.each([
    ["a 257-character username", "u".repeat(257), "pw"],
    ["a 1025-character password", "alice", "p".repeat(1025)],
  ])("answers 400 to %s", async (_label, username, password) => {
    const { post } = await loginApp();
    const response = await post(credentials(username, password));
    expect(response.status).toBe(400);
  });

  it("accepts a 256-character username and a 1024-character password as ordinary (failed) attempts", async () => {
    const { post } = await loginApp();
    expect((await post(credentials("u".repeat(256), "pw"))).status).toBe(401);
    expect((await post(credentials("alice", "p".repeat(1024)))).status).toBe(401);
  });
});

const nobody = passwordCredentials({ findUser: () => undefined });

describe("form login redirects", () => {
  const redirects = { successRedirect: "/home", failureRedirect: "/login?error" };

  it("answers a successful form login with 303 to successRedirect and the new cookie", async () => {
    const { app, client, post } = await loginApp(redirects);
    const before = client.sessionId;
    const response = await post(form({ username: "alice", password: PASSWORDS.alice }), FORM_TYPE);
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/home");
    expect(response.headers.get("cache-control")).toBe("no-store");
    const cookie = setCookiesOf(response).find((c) => c.name === app.cookieName);
    expect(cookie?.value).toMatch(SESSION_ID);
    expect(cookie?.value).not.toBe(before);
  });

  it("answers a failed form login with 303 to failureRedirect and no session", async () => {
    const { client, post } = await loginApp(redirects);
    const response = await post(form({ username: "alice", password: "wrong" }), FORM_TYPE);
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/login?error");
    expect((await client.fetch("/")).status).toBe(401);
  });

  it("redirects multipart form logins too", async () => {
    const { post } = await loginApp(redirects);
    const response = await post(
      multipart({ username: "alice", password: PASSWORDS.alice }),
      MULTIPART_TYPE,
    );
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/home");
  });

  it("answers JSON clients with 200 / 401 even when redirects are configured", async () => {
    const { post } = await loginApp(redirects);
    expect((await post(credentials("alice", "wrong"))).status).toBe(401);
    expect((await post(credentials("alice", PASSWORDS.alice))).status).toBe(200);
  });

  it.each([
    ["a protocol-relative URL", "//evil.example/"],
    ["an absolute URL", "https://evil.example/"],
    ["a backslash trick", "/\\evil.example"],
    ["a relative path", "home"],
    ["a path with a space", "/a b"],
  ])("refuses %s as a redirect target when built", (_label, target) => {
    for (const name of ["successRedirect", "failureRedirect", "logoutRedirect"] as const) {
      expect(() => login({ credentials: nobody, [name]: target }), name).toThrow(
        InvalidOptionsError,
      );
    }
  });
});

describe("failed-login throttling", () => {
  const throttle = { maxFailuresPerUser: 3, maxFailuresPerClient: 1000, windowMs: 60_000 };

  it("refuses further attempts for a username with 429 and an integer Retry-After, even with the right password, until the window passes", async () => {
    const { app, client, post } = await loginApp({ throttle });
    for (let i = 0; i < 3; i++) {
      expect((await post(credentials("alice", `guess-${i}`))).status).toBe(401);
    }
    app.clock.advance(10_500);
    const blocked = await post(credentials("alice", PASSWORDS.alice));
    expect(blocked.status).toBe(429);
    expect(blocked.headers.get("content-type")).toBe("application/problem+json");
    const retryAfter = blocked.headers.get("retry-after") as string;
    expect(retryAfter).toMatch(/^[1-9]\d*$/);
    expect(Number(retryAfter)).toBe(50);
    expect(blocked.headers.getSetCookie()).toEqual([]);
    // The username is compared without case.
    expect((await post(credentials("ALICE", PASSWORDS.alice))).status).toBe(429);
    // Another user is not affected.
    expect((await post(credentials("ada", PASSWORDS.ada))).status).toBe(200);

    app.clock.advance(49_000); // 500 ms before the window ends
    const last = await post(credentials("alice", PASSWORDS.alice));
    expect(last.status).toBe(429);
    expect(last.headers.get("retry-after")).toBe("1");
    app.clock.advance(500);
    expect((await post(credentials("alice", PASSWORDS.alice))).status).toBe(200);
    expect((await client.fetch("/")).status).toBe(200);
  });

  it("does not check the password of a throttled attempt", async () => {
    const real = cheapEncoder();
    const spy = {
      hash: (p: string) => real.hash(p),
      verify: vi.fn((p: string, e: string) => real.verify(p, e)),
      needsRehash: (e: string) => real.needsRehash(e),
    };
    const { post } = await loginApp({ throttle }, { encoder: spy });
    for (let i = 0; i < 3; i++) await post(credentials("alice", "wrong"));
    spy.verify.mockClear();
    expect((await post(credentials("alice", "wrong"))).status).toBe(429);
    expect(spy.verify).not.toHaveBeenCalled();
  });

  it("resets the per-user counter after a success", async () => {
    const { post } = await loginApp({ throttle });
    expect((await post(credentials("alice", "wrong-1"))).status).toBe(401);
    expect((await post(credentials("alice", "wrong-2"))).status).toBe(401);
    expect((await post(credentials("alice", PASSWORDS.alice))).status).toBe(200);
    expect((await post(credentials("alice", "wrong-3"))).status).toBe(401);
    expect((await post(credentials("alice", "wrong-4"))).status).toBe(401);
    expect((await post(credentials("alice", PASSWORDS.alice))).status).toBe(200);
  });

  it("throttles per client through the clientKey option", async () => {
    const { post } = await loginApp({
      throttle: { maxFailuresPerUser: 1000, maxFailuresPerClient: 4, windowMs: 60_000 },
      clientKey: (request) => request.headers.get("x-test-client") ?? undefined,
    });
    const from = (client: string) => ({ headers: { "x-test-client": client } });
    for (let i = 0; i < 4; i++) {
      const response = await post(credentials(`user-${i}`, "guess"), JSON_TYPE, from("c1"));
      expect(response.status).toBe(401);
    }
    const blocked = await post(credentials("alice", PASSWORDS.alice), JSON_TYPE, from("c1"));
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await post(credentials("alice", PASSWORDS.alice), JSON_TYPE, from("c2"))).status).toBe(
      200,
    );
  });

  it("does not reset the per-client counter on a success (an attacker's own account must not launder a password-spraying run)", async () => {
    const { post } = await loginApp({
      throttle: { maxFailuresPerUser: 1000, maxFailuresPerClient: 3, windowMs: 60_000 },
      clientKey: (request) => request.headers.get("x-test-client") ?? undefined,
    });
    const attacker = { headers: { "x-test-client": "attacker" } };
    expect((await post(credentials("victim-1", "Summer2024!"), JSON_TYPE, attacker)).status).toBe(
      401,
    );
    expect((await post(credentials("victim-2", "Summer2024!"), JSON_TYPE, attacker)).status).toBe(
      401,
    );
    // The attacker signs in to an account of their own.
    expect((await post(credentials("alice", PASSWORDS.alice), JSON_TYPE, attacker)).status).toBe(
      200,
    );
    expect((await post(credentials("victim-3", "Summer2024!"), JSON_TYPE, attacker)).status).toBe(
      401,
    );
    // Three failures from this client within the window.
    expect((await post(credentials("victim-4", "Summer2024!"), JSON_TYPE, attacker)).status).toBe(
      429,
    );
  });

  it("on a success clears the username's counter and keeps the client's failures, giving back only its own attempt", async () => {
    const store = new MemoryLoginAttemptStore();
    const { app, post } = await loginApp({
      throttle: { maxFailuresPerUser: 3, maxFailuresPerClient: 10, windowMs: 60_000, store },
      clientKey: () => "c1",
    });
    expect((await post(credentials("alice", "wrong-1"))).status).toBe(401);
    expect((await post(credentials("victim", "wrong-2"))).status).toBe(401);
    expect((await post(credentials("alice", PASSWORDS.alice))).status).toBe(200);
    const at = app.clock.now();
    // alice's counter is gone: a fresh budget of 3.
    for (let i = 0; i < 3; i++) {
      await expect(store.consume("user:alice", 3, 60_000, at)).resolves.toMatchObject({
        allowed: true,
      });
    }
    // victim's failure stays.
    await expect(store.consume("user:victim", 2, 60_000, at)).resolves.toMatchObject({
      allowed: true,
    });
    await expect(store.consume("user:victim", 2, 60_000, at)).resolves.toMatchObject({
      allowed: false,
    });
    // The client keeps its two failures; the success itself is not counted.
    await expect(store.consume("client:c1", 3, 60_000, at)).resolves.toMatchObject({
      allowed: true,
    });
    await expect(store.consume("client:c1", 3, 60_000, at)).resolves.toMatchObject({
      allowed: false,
    });
  });

  it("answers 503 within storeTimeoutMs when the store never answers, without checking a password", async () => {
    const stalled: LoginAttemptStore = {
      consume: () => new Promise(() => {}),
      release: () => new Promise(() => {}),
      reset: () => new Promise(() => {}),
    };
    const onStoreError = vi.fn();
    const real = cheapEncoder();
    const verify = vi.fn((p: string, e: string) => real.verify(p, e));
    const { post } = await loginApp(
      { throttle: { store: stalled, storeTimeoutMs: 50, onStoreError } },
      { encoder: { hash: (p) => real.hash(p), verify, needsRehash: (e) => real.needsRehash(e) } },
    );
    const response = await within(post(credentials("alice", PASSWORDS.alice)));
    expect(response.status).toBe(503);
    expect(response.headers.getSetCookie()).toEqual([]);
    expect(onStoreError).toHaveBeenCalledTimes(1);
    expect(verify).not.toHaveBeenCalled();
  });

  it("signs in when the store fails only to give the attempt back, and reports it", async () => {
    const memory = new MemoryLoginAttemptStore();
    const store: LoginAttemptStore = {
      consume: (...args) => memory.consume(...args),
      release: async () => {
        throw new Error("lost");
      },
      reset: async () => {
        throw new Error("lost");
      },
    };
    const onStoreError = vi.fn();
    const { post } = await loginApp({
      throttle: { store, onStoreError },
      clientKey: () => "c1",
    });
    expect((await post(credentials("alice", PASSWORDS.alice))).status).toBe(200);
    expect(onStoreError).toHaveBeenCalledTimes(2);
  });

  it("does not take the per-client throttle key from a request header by default (the TSDoc promises the resolved client address)", async () => {
    const { post } = await loginApp({
      throttle: { maxFailuresPerUser: 1000, maxFailuresPerClient: 3, windowMs: 60_000 },
    });
    const chosen = { headers: { "x-portcullis-never": "203.0.113.7" } };
    for (let i = 0; i < 3; i++) {
      expect((await post(credentials(`user-${i}`, "guess"), JSON_TYPE, chosen)).status).toBe(401);
    }
    // A bare Fetch chain resolved no client address, so no per-client counter may exist.
    expect((await post(credentials("alice", PASSWORDS.alice), JSON_TYPE, chosen)).status).toBe(200);
  });

  it("does not throttle when throttle is false", async () => {
    const { post } = await loginApp({ throttle: false });
    for (let i = 0; i < 25; i++) {
      expect((await post(credentials("alice", `guess-${i}`))).status).toBe(401);
    }
    expect((await post(credentials("alice", PASSWORDS.alice))).status).toBe(200);
  });

  it("shares counters through a given store", async () => {
    const store = new MemoryLoginAttemptStore();
    const { app, post } = await loginApp({ throttle: { ...throttle, store } });
    await post(credentials("alice", "wrong"));
    expect(store.size).toBe(1);
    // One of three attempts spent: two more are allowed, the next is not.
    const at = app.clock.now();
    for (let i = 0; i < 2; i++) {
      await expect(store.consume("user:alice", 3, 60_000, at)).resolves.toMatchObject({
        allowed: true,
      });
    }
    await expect(store.consume("user:alice", 3, 60_000, at)).resolves.toMatchObject({
      allowed: false,
    });
  });

  it.each([
    ["maxFailuresPerUser 0", { maxFailuresPerUser: 0 }],
    ["a fractional maxFailuresPerClient", { maxFailuresPerClient: 1.5 }],
    ["a negative windowMs", { windowMs: -1 }],
    ["a NaN windowMs", { windowMs: Number.NaN }],
    ["a zero storeTimeoutMs", { storeTimeoutMs: 0 }],
    ["a store without consume", { store: {} as LoginAttemptStore }],
    ["a misspelt option", { maxFailuresPerUsr: 3 }],
  ])("refuses %s when built", (_label, options) => {
    expect(() =>
      passwordCredentials({
        findUser: () => undefined,
        throttle: options as PasswordCredentialsOptions["throttle"],
      }),
    ).toThrow(InvalidOptionsError);
  });
});

describe("MemoryLoginAttemptStore", () => {
  const take = (store: MemoryLoginAttemptStore, key: string, now: number, max = 1000) =>
    store.consume(key, max, 60_000, now);

  it("keeps the counter of an account under attack through a flood of made-up usernames", async () => {
    const store = new MemoryLoginAttemptStore({ maxEntries: 100 });
    for (let i = 0; i < 5; i++) await take(store, "user:alice", 0);
    for (let i = 0; i < 10_000; i++) await take(store, `user:made-up-${i}`, 1);
    expect(store.size).toBe(100);
    await expect(store.consume("user:alice", 5, 60_000, 2)).resolves.toEqual({
      allowed: false,
      resetAt: 60_000,
    });
    // Expired counters are the first to go.
    const expiring = new MemoryLoginAttemptStore({ maxEntries: 2 });
    for (let i = 0; i < 3; i++) await expiring.consume("user:old", 1000, 10, 0);
    await take(expiring, "user:a", 0);
    await take(expiring, "user:a", 0);
    await take(expiring, "user:b", 20);
    await expect(expiring.consume("user:a", 2, 60_000, 20)).resolves.toMatchObject({
      allowed: false,
    });
    await expect(expiring.consume("user:b", 2, 60_000, 20)).resolves.toMatchObject({
      allowed: true,
    });
    expect(expiring.size).toBe(2);
  });

  it("stays bounded, and never forgets the counter it has just taken", async () => {
    const store = new MemoryLoginAttemptStore({ maxEntries: 100 });
    for (let i = 0; i < 10_000; i++) await take(store, `user:${i}`, 0);
    expect(store.size).toBeLessThanOrEqual(100);
    await expect(store.consume("user:9999", 1, 60_000, 0)).resolves.toMatchObject({
      allowed: false,
    });
    // Once their window is over, the counters left from the flood go first.
    for (let i = 0; i < 100; i++) await take(store, `later:${i}`, 60_000);
    expect(store.size).toBe(100);
    await expect(store.consume("later:0", 1, 60_000, 60_000)).resolves.toMatchObject({
      allowed: false,
    });
    // A store of one keeps the newest reservation, not an older one.
    const tiny = new MemoryLoginAttemptStore({ maxEntries: 1 });
    await tiny.consume("a", 5, 60_000, 0);
    await tiny.consume("a", 5, 60_000, 0);
    await tiny.consume("b", 1, 60_000, 0);
    await expect(tiny.consume("b", 1, 60_000, 0)).resolves.toMatchObject({ allowed: false });
  });

  it("counts attempts up to max within a window that starts at the first one", async () => {
    const store = new MemoryLoginAttemptStore();
    await expect(store.consume("k", 2, 1000, 0)).resolves.toEqual({ allowed: true, resetAt: 1000 });
    await expect(store.consume("k", 2, 1000, 500)).resolves.toEqual({
      allowed: true,
      resetAt: 1000,
    });
    // Refused attempts are not counted and do not stretch the window.
    await expect(store.consume("k", 2, 1000, 999)).resolves.toEqual({
      allowed: false,
      resetAt: 1000,
    });
    await expect(store.consume("k", 2, 1000, 1000)).resolves.toEqual({
      allowed: true,
      resetAt: 2000,
    });
    await store.reset("k");
    await expect(store.consume("k", 1, 1000, 1000)).resolves.toMatchObject({ allowed: true });
  });

  it("gives an attempt back on release, never below zero", async () => {
    const store = new MemoryLoginAttemptStore();
    await store.consume("k", 2, 1000, 0);
    await store.consume("k", 2, 1000, 0);
    await store.release("k", 10);
    await expect(store.consume("k", 2, 1000, 20)).resolves.toMatchObject({ allowed: true });
    await expect(store.consume("k", 2, 1000, 20)).resolves.toMatchObject({ allowed: false });
    for (let i = 0; i < 5; i++) await store.release("k", 30);
    expect(store.size).toBe(0);
    await store.consume("k", 2, 1000, 40);
    await expect(store.consume("k", 2, 1000, 40)).resolves.toMatchObject({ allowed: true });
    await expect(store.consume("k", 2, 1000, 40)).resolves.toMatchObject({ allowed: false });
  });

  it("lets exactly max of many concurrent attempts through", async () => {
    const store = new MemoryLoginAttemptStore();
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => store.consume("k", 5, 60_000, 0)),
    );
    expect(answers.filter((a) => a.allowed)).toHaveLength(5);
  });

  it.each([0, -1, 2.5, Number.NaN])("refuses maxEntries %s", (maxEntries) => {
    expect(() => new MemoryLoginAttemptStore({ maxEntries })).toThrow(InvalidOptionsError);
  });

  it("refuses a misspelt option, naming it", () => {
    expect(
      () => new MemoryLoginAttemptStore({ maxEntry: 5 } as unknown as { maxEntries: number }),
    ).toThrow(/maxEntry/);
  });
});

describe("password upgrade on login", () => {
  async function upgradeApp() {
    const encoder = createPasswordEncoder({ logN: 10, r: 8, p: 1 });
    const upgrades: Array<{ name: string; hash: string }> = [];
    const built = await loginApp(
      {
        onPasswordUpgrade: (user, hash) => {
          upgrades.push({ name: user.name, hash });
          built.app.users.set(user.name, { ...user, passwordHash: hash });
        },
      },
      { encoder },
    );
    const legacy = await new Pbkdf2PasswordEncoder({ iterations: 1000 }).hash("carol-password");
    built.app.users.set("carol", { name: "carol", authorities: ["USER"], passwordHash: legacy });
    return { ...built, encoder, upgrades, legacy };
  }

  it("hands a fresh {scrypt} hash to onPasswordUpgrade after a login with a {pbkdf2-sha256} hash", async () => {
    const { post, encoder, upgrades, legacy } = await upgradeApp();
    expect(legacy).toMatch(/^\{pbkdf2-sha256\}i=1000\$/);
    expect((await post(credentials("carol", "carol-password"))).status).toBe(200);
    expect(upgrades).toHaveLength(1);
    const [upgrade] = upgrades;
    expect(upgrade?.name).toBe("carol");
    expect(upgrade?.hash).toMatch(/^\{scrypt\}ln=10,r=8,p=1\$/);
    await expect(encoder.verify("carol-password", upgrade?.hash as string)).resolves.toBe(true);
    expect(encoder.needsRehash(upgrade?.hash as string)).toBe(false);
    // The next login uses the upgraded hash and upgrades nothing.
    expect((await post(credentials("carol", "carol-password"))).status).toBe(200);
    expect(upgrades).toHaveLength(1);
  });

  it("does not call onPasswordUpgrade for a current hash or a failed login", async () => {
    const { post, upgrades } = await upgradeApp();
    expect((await post(credentials("alice", PASSWORDS.alice))).status).toBe(200);
    expect((await post(credentials("carol", "wrong"))).status).toBe(401);
    expect(upgrades).toEqual([]);
  });
});

describe("POST /logout", () => {
  it("destroys the session with a valid token: 204, cookie cleared, store entry gone, replay is anonymous", async () => {
    const { app, client } = await loginApp();
    await client.login("alice", PASSWORDS.alice);
    const id = client.sessionId as string;
    const old = `${app.cookieName}=${id}`;
    expect((await client.fetch("/")).status).toBe(200);

    const token = await client.csrf();
    const response = await client.fetch("/logout", { method: "POST", token });
    expect(response.status).toBe(204);
    const cleared = setCookiesOf(response).find((c) => c.name === app.cookieName);
    expect(cleared?.value).toBe("");
    expect(cleared?.attributes.get("max-age")).toBe("0");
    expect(cleared && isDeletion(cleared)).toBe(true);
    expect(response.headers.get("cache-control")).toBe("no-store");
    await expect(app.store.get(id)).resolves.toBeUndefined();
    expect(client.sessionId).toBeUndefined();

    const replay = await app.client().fetch("/", { cookie: old });
    expect(replay.status).toBe(401);
    const replayAdmin = await app.client().fetch("/admin/x", { cookie: old });
    expect(replayAdmin.status).toBe(401);
    // With the old cookie, its token reaches only an empty anonymous session: a logout of nothing.
    const replayLogout = await app
      .client()
      .fetch("/logout", { method: "POST", cookie: old, token });
    expect(replayLogout.status).toBe(204);
    await expect(app.store.get(id)).resolves.toBeUndefined();
    expect((await app.client().fetch("/", { cookie: old })).status).toBe(401);
  });

  it("refuses a logout without a token and keeps the user signed in", async () => {
    const { client } = await loginApp();
    await client.login("alice", PASSWORDS.alice);
    const response = await client.fetch("/logout", { method: "POST" });
    expect(response.status).toBe(403);
    expect((await client.fetch("/")).status).toBe(200);
  });

  it("redirects a form logout to logoutRedirect with 303", async () => {
    const { app, client } = await loginApp({ logoutRedirect: "/bye" });
    await client.login("alice", PASSWORDS.alice);
    const id = client.sessionId as string;
    const token = await client.csrf();
    const response = await client.fetch("/logout", {
      method: "POST",
      headers: { "content-type": FORM_TYPE },
      body: `_csrf=${encodeURIComponent(token)}`,
    });
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("/bye");
    await expect(app.store.get(id)).resolves.toBeUndefined();
    expect((await client.fetch("/")).status).toBe(401);
  });
});

describe("login() options", () => {
  it.each([
    ["no credentials", {}],
    ["findUser instead of credentials", { findUser: () => undefined }],
    ["credentials not built by passwordCredentials()", { credentials: { check: () => {} } }],
    ["a loginPath without a leading slash", { credentials: nobody, loginPath: "login" }],
    ["a logoutPath with a query", { credentials: nobody, logoutPath: "/logout?x" }],
    ["a misspelt option", { credentials: nobody, sucessRedirect: "/" }],
    ["a zero maxBodyBytes", { credentials: nobody, maxBodyBytes: 0 }],
  ])("throws InvalidOptionsError for %s", (_label, options) => {
    expect(() => login(options as unknown as LoginOptions)).toThrow(InvalidOptionsError);
  });

  it("names the misspelt key", () => {
    expect(() =>
      login({ credentials: nobody, logotPath: "/x" } as unknown as LoginOptions),
    ).toThrow(/logotPath/);
  });

  it.each([
    ["no findUser", {}],
    ["a misspelt option", { findUser: (): undefined => undefined, passwordEncodr: {} }],
    ["an encoder without verify", { findUser: (): undefined => undefined, passwordEncoder: {} }],
    ["a clientKey that is no function", { findUser: (): undefined => undefined, clientKey: "ip" }],
  ])("passwordCredentials throws InvalidOptionsError for %s", (_label, options) => {
    expect(() => passwordCredentials(options as unknown as PasswordCredentialsOptions)).toThrow(
      InvalidOptionsError,
    );
  });

  it("cannot be mounted without the session leg or the CSRF leg", () => {
    for (const legs of [{ session: false }, { csrf: false }] as const) {
      expect(() =>
        newHandler(defaultRouter, {
          ...legs,
          login: login({ credentials: nobody }),
          authorization: authz.routes(defaultRules()),
        }),
      ).toThrow(InvalidOptionsError);
    }
  });

  it("serves custom login and logout paths", async () => {
    const encoder = cheapEncoder();
    const hash = await encoder.hash("pw-123");
    const handler = newHandler(defaultRouter, {
      session: sessions(),
      csrf: csrf({ alwaysProtect: ["/auth/in", "/auth/out"] }),
      login: login({
        credentials: passwordCredentials({
          findUser: (name) =>
            name === "bob" ? { name: "bob", authorities: ["USER"], passwordHash: hash } : undefined,
          passwordEncoder: encoder,
        }),
        loginPath: "/auth/in",
        logoutPath: "/auth/out",
      }),
      authorization: authz.routes(defaultRules()),
    });
    const client = new Client(handler, "__Host-portcullis-session");
    const token = await client.csrf();
    const response = await client.fetch("/auth/in", {
      method: "POST",
      token,
      headers: { "content-type": JSON_TYPE },
      body: credentials("bob", "pw-123"),
    });
    expect(response.status).toBe(200);
    expect((await client.fetch("/")).status).toBe(200);
    const out = await client.fetch("/auth/out", { method: "POST", token: await client.csrf() });
    expect(out.status).toBe(204);
    expect((await client.fetch("/")).status).toBe(401);
  });

  it("refuses a sign-in without a CSRF token on paths the CSRF leg was not told about", async () => {
    const encoder = cheapEncoder();
    const hash = await encoder.hash("pw-123");
    const handler = newHandler(defaultRouter, {
      session: sessions(),
      // The default CSRF leg protects /login and /logout only.
      login: login({
        credentials: passwordCredentials({
          findUser: (name) =>
            name === "bob" ? { name: "bob", authorities: ["USER"], passwordHash: hash } : undefined,
          passwordEncoder: encoder,
        }),
        loginPath: "/signin",
      }),
      authorization: authz.routes(defaultRules()),
    });
    const forged = await handler(
      new Request("https://app.example/signin", {
        method: "POST",
        headers: { "content-type": JSON_TYPE },
        body: credentials("bob", "pw-123"),
      }),
    );
    expect(forged.status).toBe(403);
    expect(forged.headers.getSetCookie()).toEqual([]);
    const client = new Client(handler, "__Host-portcullis-session");
    const signedIn = await client.fetch("/signin", {
      method: "POST",
      token: await client.csrf(),
      headers: { "content-type": JSON_TYPE },
      body: credentials("bob", "pw-123"),
    });
    expect(signedIn.status).toBe(200);
  });
});
