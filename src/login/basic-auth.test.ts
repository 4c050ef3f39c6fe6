import { describe, expect, it, vi } from "vitest";
import { plainTextEncoder } from "../../test/support/plain-text-encoder.ts";
import { routes } from "../authz/routes.ts";
import { anyRequest } from "../authz/rules.ts";
import { newHandler } from "../chain/new-chain.ts";
import { authenticationFrom, isAuthenticated, mustAuthentication } from "../core/authentication.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { type BasicAuthOptions, basicAuth, parseBasic } from "./basic-auth.ts";
import {
  type LoginAttemptStore,
  type LoginUser,
  type PasswordCredentialsOptions,
  passwordCredentials,
  ScryptPasswordEncoder,
} from "./index.ts";

const utf8 = new TextEncoder();

/** Base64 of the UTF-8 bytes of `text` (btoa alone only takes Latin-1). */
function base64(bytes: Uint8Array | string): string {
  const data = typeof bytes === "string" ? utf8.encode(bytes) : bytes;
  let binary = "";
  for (const byte of data) binary += String.fromCharCode(byte);
  return btoa(binary);
}

const basic = (username: string, password: string) => `Basic ${base64(`${username}:${password}`)}`;

const USERS: Record<string, LoginUser> = {
  alice: { name: "alice", authorities: ["USER"], passwordHash: "{plain}wonderland" },
  jöran: { name: "jöran", authorities: ["USER"], passwordHash: "{plain}pässwörd" },
  colon: { name: "colon", authorities: ["USER"], passwordHash: "{plain}a:b:c" },
};

/** An encoder whose every call is recorded. */
function spyEncoder() {
  const plain = plainTextEncoder();
  return {
    hash: vi.fn((password: string) => plain.hash(password)),
    verify: vi.fn((password: string, encoded: string) => plain.verify(password, encoded)),
    needsRehash: vi.fn((encoded: string) => plain.needsRehash(encoded)),
  };
}

function setup(
  options: Omit<Partial<BasicAuthOptions>, "credentials"> & {
    readonly credentials?: Partial<PasswordCredentialsOptions>;
  } = {},
) {
  const encoder = spyEncoder();
  const findUser = vi.fn(async (name: string) => USERS[name]);
  const downstream = vi.fn(async (request: Request) => {
    const auth = mustAuthentication(request);
    return Response.json({ name: auth.name, authorities: auth.authorities });
  });
  const { credentials: credentialsOptions, ...basicOptions } = options;
  const credentials = passwordCredentials({
    findUser,
    passwordEncoder: encoder,
    ...credentialsOptions,
  });
  const handler = basicAuth({ credentials, ...basicOptions })(downstream);
  const call = (authorization?: string, headers: Record<string, string> = {}) =>
    handler(
      new Request("http://h/api", {
        headers: authorization === undefined ? headers : { ...headers, authorization },
      }),
    );
  return { handler, call, downstream, findUser, encoder, verify: encoder.verify, credentials };
}

const plainCredentials = () =>
  passwordCredentials({ findUser: (n) => USERS[n], passwordEncoder: plainTextEncoder() });

describe("basicAuth: valid credentials", () => {
  it("binds the principal, so mustAuthentication works downstream", async () => {
    const { call, downstream } = setup();
    const response = await call(basic("alice", "wonderland"));
    expect(response.status).toBe(200);
    await expect(response.json()).resolves.toEqual({ name: "alice", authorities: ["USER"] });
    expect(downstream).toHaveBeenCalledTimes(1);
  });

  it("binds an authenticated, non-anonymous principal", async () => {
    let seen: Request | undefined;
    const handler = basicAuth({ credentials: plainCredentials() })(async (request) => {
      seen = request;
      return new Response("ok");
    });
    await handler(
      new Request("http://h/", { headers: { authorization: basic("alice", "wonderland") } }),
    );
    expect(seen && isAuthenticated(seen)).toBe(true);
    expect(seen && authenticationFrom(seen)?.anonymous).toBe(false);
  });

  it("accepts the scheme name in lower case", async () => {
    const { call } = setup();
    expect((await call(`basic ${base64("alice:wonderland")}`)).status).toBe(200);
    expect((await call(`BASIC ${base64("alice:wonderland")}`)).status).toBe(200);
  });

  it("decodes UTF-8 user names and passwords", async () => {
    const { call } = setup();
    expect((await call(basic("jöran", "pässwörd"))).status).toBe(200);
  });

  it("splits at the first colon, so a password may contain colons", async () => {
    const { call, verify } = setup();
    expect((await call(basic("colon", "a:b:c"))).status).toBe(200);
    expect(verify).toHaveBeenCalledWith("a:b:c", "{plain}a:b:c");
  });

  it("verifies password hashes with createPasswordEncoder() by default", async () => {
    const passwordHash = await new ScryptPasswordEncoder({ logN: 10, p: 1 }).hash("wonderland");
    const credentials = passwordCredentials({
      findUser: (name) => (name === "alice" ? { ...USERS.alice, passwordHash } : undefined),
    } as PasswordCredentialsOptions);
    const handler = basicAuth({ credentials })(async () => new Response("ok"));
    const request = (authorization: string) =>
      new Request("http://h/", { headers: { authorization } });
    expect((await handler(request(basic("alice", "wonderland")))).status).toBe(200);
    expect((await handler(request(basic("alice", "wonderlanD")))).status).toBe(401);
  });
});

describe("basicAuth: malformed Authorization headers", () => {
  const cases: [string, string][] = [
    ["the bare scheme", "Basic"],
    ["the scheme and a space", "Basic "],
    ["characters outside base64", "Basic !!!"],
    ["base64 without a colon", `Basic ${base64("alicewonderland")}`],
    ["base64 of invalid UTF-8", `Basic ${base64(new Uint8Array([0x61, 0xff, 0x3a, 0x78]))}`],
    ["an empty user name", `Basic ${base64(":wonderland")}`],
    ["a control character in the user name", `Basic ${base64("ali\u0001ce:wonderland")}`],
    ["a control character in the password", `Basic ${base64("alice:wonder\nland")}`],
    ["DEL in the password", `Basic ${base64("alice:wonder\u007fland")}`],
    ["a control character beside UTF-8", `Basic ${base64("jöran:päss\twörd")}`],
    ["base64 of a bad length", "Basic YWxpY2U6d29uZGVybGFuZ"],
    ["padding in the middle", "Basic YQ==YQ=="],
    ["padding alone", "Basic =="],
    // atob would skip the space and decode the right credentials.
    ["a space inside the token", "Basic YWxpY2U6 d29uZGVybGFuZA=="],
    ["three padding characters", `Basic ${base64("alice:wonderland")}=`],
    [
      "base64url letters",
      `Basic ${base64("alice:wonderland?>").replace(/\+/g, "-").replace(/\//g, "_")}`,
    ],
    ["a character beyond ASCII", `Basic ${base64("alice:wonderland")}é`],
    ["two tokens", `Basic ${base64("alice:wonderland")} ${base64("alice:wonderland")}`],
    ["a 10 kB garbage header", `Basic ${"A".repeat(10_000)}`],
  ];

  it.each(cases)("answers 401 for %s, never 500 and never a throw", async (_label, header) => {
    const { call, downstream } = setup();
    const response = await call(header);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
    expect(downstream).not.toHaveBeenCalled();
  });

  it.each(cases)("answers 401 for %s also when not required", async (_label, header) => {
    const { call, downstream } = setup({ required: false });
    expect((await call(header)).status).toBe(401);
    expect(downstream).not.toHaveBeenCalled();
  });

  it("refuses a 10 kB header carrying otherwise valid credentials without checking them", async () => {
    const long = "p".repeat(10_000);
    const { call, verify, findUser, downstream } = setup();
    const response = await call(basic("long", long));
    expect(response.status).toBe(401);
    expect(verify).not.toHaveBeenCalled();
    expect(findUser).not.toHaveBeenCalled();
    expect(downstream).not.toHaveBeenCalled();
  });

  it("parseBasic returns undefined rather than throwing", () => {
    expect(parseBasic("Basic !!!")).toBeUndefined();
    expect(parseBasic(`Basic ${base64(":x")}`)).toBeUndefined();
    expect(parseBasic(basic("a", ""))).toEqual({ username: "a", password: "" });
  });
});

describe("basicAuth: other schemes and missing credentials", () => {
  it("answers 401 with a Basic challenge when required and no header is sent", async () => {
    const { call, downstream } = setup();
    const response = await call();
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe(
      'Basic realm="portcullis", charset="UTF-8"',
    );
    expect(downstream).not.toHaveBeenCalled();
  });

  it("answers 401 to another scheme when required", async () => {
    const { call, downstream, findUser } = setup();
    expect((await call("Bearer x")).status).toBe(401);
    expect((await call("Basicx YWxpY2U6d29uZGVybGFuZA==")).status).toBe(401);
    expect(downstream).not.toHaveBeenCalled();
    expect(findUser).not.toHaveBeenCalled();
  });

  it("passes another scheme on as anonymous when not required", async () => {
    let seen: Request | undefined;
    const handler = basicAuth({ credentials: plainCredentials(), required: false })(
      async (request) => {
        seen = request;
        return new Response("ok");
      },
    );
    const response = await handler(
      new Request("http://h/", { headers: { authorization: "Bearer x" } }),
    );
    expect(response.status).toBe(200);
    expect(seen && isAuthenticated(seen)).toBe(false);
  });

  it("passes a request without credentials on as anonymous when not required", async () => {
    const seen: boolean[] = [];
    const handler = basicAuth({ credentials: plainCredentials(), required: false })(
      async (request) => {
        seen.push(isAuthenticated(request));
        return new Response("ok");
      },
    );
    expect((await handler(new Request("http://h/"))).status).toBe(200);
    expect(seen).toEqual([false]);
  });
});

describe("basicAuth: failed logins", () => {
  it("answers 401 to a wrong password after checking it once", async () => {
    const { call, verify, downstream } = setup();
    expect((await call(basic("alice", "guess"))).status).toBe(401);
    expect(verify).toHaveBeenCalledTimes(1);
    expect(verify).toHaveBeenCalledWith("guess", "{plain}wonderland");
    expect(downstream).not.toHaveBeenCalled();
  });

  it("checks an unknown user's password against the dummy hash, made once with the credentials' encoder", async () => {
    const { call, encoder, downstream } = setup();
    expect((await call(basic("mallory", "guess"))).status).toBe(401);
    expect(encoder.hash).toHaveBeenCalledTimes(1);
    const dummy = await encoder.hash.mock.results[0]?.value;
    expect(dummy).toMatch(/^\{plain\}/);
    expect(encoder.verify).toHaveBeenCalledTimes(1);
    expect(encoder.verify).toHaveBeenCalledWith("guess", dummy);
    expect(downstream).not.toHaveBeenCalled();
    // Later unknown users reuse it: one verify each, no new hash.
    expect((await call(basic("trent", "guess"))).status).toBe(401);
    expect(encoder.hash).toHaveBeenCalledTimes(1);
    expect(encoder.verify).toHaveBeenLastCalledWith("guess", dummy);
  });

  it("refuses an unknown user even when the password matches the dummy hash", async () => {
    const { call, encoder } = setup();
    await call(basic("mallory", "guess"));
    const dummy = (await encoder.hash.mock.results[0]?.value) as string;
    const password = dummy.slice("{plain}".length);
    expect((await call(basic("mallory", password))).status).toBe(401);
  });

  it("answers 401 when the encoder answers a truthy value other than true", async () => {
    const { call, downstream } = setup({
      credentials: {
        passwordEncoder: {
          ...plainTextEncoder(),
          verify: async () => "yes" as unknown as boolean,
        },
      },
    });
    expect((await call(basic("alice", "anything"))).status).toBe(401);
    expect(downstream).not.toHaveBeenCalled();
  });

  it("answers 401 to wrong credentials also when not required", async () => {
    const { call, downstream } = setup({ required: false });
    expect((await call(basic("alice", "guess"))).status).toBe(401);
    expect((await call(basic("mallory", "guess"))).status).toBe(401);
    expect(downstream).not.toHaveBeenCalled();
  });

  it("answers problem details that do not echo the credentials", async () => {
    const { call } = setup();
    const text = await (await call(basic("alice", "guess-secret"))).text();
    expect(text).not.toContain("alice");
    expect(text).not.toContain("guess-secret");
  });
});

describe("basicAuth: failure throttle", () => {
  it("refuses guesses past the username's budget with 429 and Retry-After, the right password too, without checking", async () => {
    let now = 1_000_000;
    const { call, verify, downstream } = setup({ credentials: { now: () => now } });
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++) statuses.push((await call(basic("alice", `guess-${i}`))).status);
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(new Set(statuses.slice(5))).toEqual(new Set([429]));
    expect(verify).toHaveBeenCalledTimes(5);

    now += 60_000;
    const right = await call(basic("alice", "wonderland"));
    expect(right.status).toBe(429);
    expect(right.headers.get("retry-after")).toBe(String(14 * 60));
    expect(right.headers.get("content-type")).toBe("application/problem+json");
    expect(verify).toHaveBeenCalledTimes(5);
    expect(downstream).not.toHaveBeenCalled();
    // The username is compared without case.
    expect((await call(basic("ALICE", "wonderland"))).status).toBe(429);

    now += 14 * 60_000;
    expect((await call(basic("alice", "wonderland"))).status).toBe(200);
  });

  it("answers 429 also as an authenticator (required: false)", async () => {
    const { call, downstream } = setup({
      required: false,
      credentials: { throttle: { maxFailuresPerUser: 1 } },
    });
    expect((await call(basic("alice", "guess"))).status).toBe(401);
    expect((await call(basic("alice", "wonderland"))).status).toBe(429);
    expect(downstream).not.toHaveBeenCalled();
  });

  it("counts per client through clientKey, and a success keeps the client's failures", async () => {
    const { call } = setup({
      credentials: {
        throttle: { maxFailuresPerUser: 100, maxFailuresPerClient: 3 },
        clientKey: (request) => request.headers.get("x-test-client") ?? undefined,
      },
    });
    const from = { "x-test-client": "c1" };
    expect((await call(basic("victim-1", "x"), from)).status).toBe(401);
    expect((await call(basic("victim-2", "x"), from)).status).toBe(401);
    expect((await call(basic("alice", "wonderland"), from)).status).toBe(200);
    expect((await call(basic("victim-3", "x"), from)).status).toBe(401);
    expect((await call(basic("victim-4", "x"), from)).status).toBe(429);
    expect((await call(basic("alice", "wonderland"), from)).status).toBe(429);
    expect((await call(basic("alice", "wonderland"), { "x-test-client": "c2" })).status).toBe(200);
  });

  it("counts a username's compatibility spellings against its budget (NFKC, then lower case)", async () => {
    const { call } = setup({ credentials: { throttle: { maxFailuresPerUser: 3 } } });
    expect((await call(basic("alice", "guess-1"))).status).toBe(401);
    expect((await call(basic("ＡＬＩＣＥ", "guess-2"))).status).toBe(401);
    expect((await call(basic("Alice", "guess-3"))).status).toBe(401);
    expect((await call(basic("ａｌｉｃｅ", "wonderland"))).status).toBe(429);
    expect((await call(basic("alice", "wonderland"))).status).toBe(429);
  });

  it("does not count an attempt the client's budget refused against the username", async () => {
    const { call, verify } = setup({
      credentials: {
        throttle: { maxFailuresPerUser: 2, maxFailuresPerClient: 1 },
        clientKey: (request) => request.headers.get("x-test-client") ?? undefined,
      },
    });
    expect((await call(basic("alice", "guess-1"), { "x-test-client": "c1" })).status).toBe(401);
    // c1's budget is spent: refused unchecked, so alice keeps her second attempt.
    expect((await call(basic("alice", "guess-2"), { "x-test-client": "c1" })).status).toBe(429);
    expect((await call(basic("alice", "guess-3"), { "x-test-client": "c2" })).status).toBe(401);
    expect((await call(basic("alice", "wonderland"), { "x-test-client": "c3" })).status).toBe(429);
    expect(verify).toHaveBeenCalledTimes(2);
  });

  it("answers 503 within the store timeout when the attempt store fails or never answers, without checking", async () => {
    const failing: LoginAttemptStore = {
      consume: async () => {
        throw new Error("store down: secret-detail");
      },
      release: async () => {},
      reset: async () => {},
    };
    const stalled: LoginAttemptStore = {
      consume: () => new Promise(() => {}),
      release: () => new Promise(() => {}),
      reset: () => new Promise(() => {}),
    };
    for (const store of [failing, stalled]) {
      const onStoreError = vi.fn();
      const { call, verify, downstream } = setup({
        credentials: { throttle: { store, storeTimeoutMs: 50, onStoreError } },
      });
      const response = await within(call(basic("alice", "wonderland")), 2000);
      expect(response.status).toBe(503);
      expect(await response.text()).not.toContain("secret-detail");
      expect(onStoreError).toHaveBeenCalledTimes(1);
      expect(verify).not.toHaveBeenCalled();
      expect(downstream).not.toHaveBeenCalled();
    }
  });

  it("shares one check between concurrent requests with the same credentials", async () => {
    const plain = plainTextEncoder();
    const verify = vi.fn(async (password: string, encoded: string) => {
      await new Promise((resolve) => setTimeout(resolve, 100));
      return plain.verify(password, encoded);
    });
    const { call } = setup({
      credentials: {
        passwordEncoder: { ...plain, verify },
        throttle: { maxFailuresPerUser: 2 },
      },
    });
    // More concurrent requests than the username's budget: a client sending its
    // credentials on parallel calls is not throttled by its own concurrency.
    const statuses = await Promise.all(
      Array.from({ length: 10 }, async () => (await call(basic("alice", "wonderland"))).status),
    );
    expect(statuses).toEqual(Array(10).fill(200));
    expect(verify.mock.calls.length).toBeLessThanOrEqual(2);
  });

  it("answers a failing clientKey with a rejected check, never a throw", async () => {
    const { credentials } = setup({
      credentials: {
        clientKey: () => {
          throw new Error("no client");
        },
      },
    });
    let check: Promise<unknown> | undefined;
    expect(() => {
      check = credentials.check(new Request("http://h/"), "alice", "wonderland");
    }).not.toThrow();
    await expect(check).rejects.toThrow("no client");
  });

  it("shares a running check only with the same password, username and client", async () => {
    const plain = plainTextEncoder();
    const verify = vi.fn(async (password: string, encoded: string) => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      return plain.verify(password, encoded);
    });
    const { call } = setup({
      credentials: {
        passwordEncoder: { ...plain, verify },
        throttle: { maxFailuresPerUser: 100 },
        clientKey: (request) => request.headers.get("x-test-client") ?? undefined,
      },
    });
    const c1 = { "x-test-client": "c1" };
    // Whichever runs first, alone or beside others, a wrong password never gets a right one's answer.
    for (const order of [
      ["wonderland", "wonderlanD", "wonderland", "x"],
      ["wonderlanD", "wonderland", "x", "wonderland"],
    ]) {
      verify.mockClear();
      const statuses = await Promise.all(
        order.map(async (password) => (await call(basic("alice", password), c1)).status),
      );
      expect(statuses).toEqual(order.map((password) => (password === "wonderland" ? 200 : 401)));
      expect(verify).toHaveBeenCalledTimes(3);
    }
    // Another client's request is checked on its own, as is another user's.
    verify.mockClear();
    const statuses = await Promise.all([
      call(basic("alice", "wonderland"), c1),
      call(basic("alice", "wonderland"), { "x-test-client": "c2" }),
      call(basic("jöran", "pässwörd"), c1),
      call(basic("alice", "wonderland"), c1),
    ]);
    expect(statuses.map((response) => response.status)).toEqual([200, 200, 200, 200]);
    expect(verify).toHaveBeenCalledTimes(3);
    // Nothing is left running: the next request is checked afresh.
    expect((await call(basic("alice", "wonderlanD"), c1)).status).toBe(401);
    expect(verify).toHaveBeenCalledTimes(4);
  });
});

/** Rejects when `promise` has not settled within `ms`: a hang fails the test instead of stalling it. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe("basicAuth: challenge", () => {
  it("escapes quotes and backslashes in the realm", async () => {
    const { call } = setup({ realm: 'say "hi" \\ bye' });
    const response = await call();
    expect(response.headers.get("www-authenticate")).toBe(
      'Basic realm="say \\"hi\\" \\\\ bye", charset="UTF-8"',
    );
  });

  it.each(["evil\r\nSet-Cookie: x=1", "a\nb", "a\rb", "a\u0000b"])(
    "throws InvalidOptionsError at build time for the realm %j",
    (realm) => {
      expect(() => basicAuth({ credentials: plainCredentials(), realm })).toThrow(
        InvalidOptionsError,
      );
    },
  );

  it("offers the Basic challenge on the chain's 401 when not required", async () => {
    const handler = newHandler(() => new Response("ok"), {
      authentication: basicAuth({ credentials: plainCredentials(), required: false, realm: "api" }),
      authorization: routes([anyRequest().authenticated()]),
      onError: () => {},
    });
    const response = await handler(new Request("http://h/"));
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe('Basic realm="api", charset="UTF-8"');
  });

  it("does not offer the Basic challenge to page navigations when not required", async () => {
    const handler = newHandler(() => new Response("ok"), {
      authentication: basicAuth({ credentials: plainCredentials(), required: false }),
      authorization: routes([anyRequest().authenticated()]),
      onError: () => {},
    });
    const response = await handler(
      new Request("http://h/", { headers: { "sec-fetch-mode": "navigate" } }),
    );
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate") ?? "").not.toMatch(/Basic/);
  });
});

describe("basicAuth: options", () => {
  it("throws InvalidOptionsError without credentials built by passwordCredentials()", () => {
    for (const options of [
      {},
      undefined,
      { findUser: () => undefined },
      { credentials: { check: async () => ({ outcome: "rejected" }) } },
    ]) {
      expect(() => basicAuth(options as unknown as BasicAuthOptions)).toThrow(InvalidOptionsError);
    }
  });

  it("throws InvalidOptionsError for a removed or misspelt option, naming it", () => {
    const credentials = plainCredentials();
    for (const key of ["verifyPassword", "unknownUserPassword", "requird"]) {
      expect(() => basicAuth({ credentials, [key]: true } as unknown as BasicAuthOptions)).toThrow(
        new RegExp(key),
      );
    }
    expect(() => basicAuth({ credentials, required: "no" } as unknown as BasicAuthOptions)).toThrow(
      InvalidOptionsError,
    );
  });
});
