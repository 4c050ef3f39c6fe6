import { describe, expect, it, vi } from "vitest";
import { routes } from "../authz/routes.ts";
import { anyRequest } from "../authz/rules.ts";
import { newHandler } from "../chain/new-chain.ts";
import { authenticationFrom, isAuthenticated, mustAuthentication } from "../core/authentication.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { type BasicAuthOptions, type BasicAuthUser, basicAuth, parseBasic } from "./basic-auth.ts";

const utf8 = new TextEncoder();

/** Base64 of the UTF-8 bytes of `text` (btoa alone only takes Latin-1). */
function base64(bytes: Uint8Array | string): string {
  const data = typeof bytes === "string" ? utf8.encode(bytes) : bytes;
  let binary = "";
  for (const byte of data) binary += String.fromCharCode(byte);
  return btoa(binary);
}

const basic = (username: string, password: string) => `Basic ${base64(`${username}:${password}`)}`;

const USERS: Record<string, BasicAuthUser> = {
  alice: { name: "alice", authorities: ["USER"], password: "wonderland" },
  jöran: { name: "jöran", authorities: ["USER"], password: "pässwörd" },
  colon: { name: "colon", authorities: ["USER"], password: "a:b:c" },
};

function setup(options: Partial<BasicAuthOptions> = {}) {
  const verifyPassword = vi.fn(async (presented: string, stored: string) => presented === stored);
  const findUser = vi.fn(async (name: string) => USERS[name]);
  const downstream = vi.fn(async (request: Request) => {
    const auth = mustAuthentication(request);
    return Response.json({ name: auth.name, authorities: auth.authorities });
  });
  const handler = basicAuth({ findUser, verifyPassword, ...options })(downstream);
  const call = (authorization?: string, headers: Record<string, string> = {}) =>
    handler(
      new Request("http://h/api", {
        headers: authorization === undefined ? headers : { ...headers, authorization },
      }),
    );
  return { handler, call, downstream, findUser, verifyPassword };
}

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
    const handler = basicAuth({ findUser: (n) => USERS[n] })(async (request) => {
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
    const { call, verifyPassword } = setup();
    expect((await call(basic("colon", "a:b:c"))).status).toBe(200);
    expect(verifyPassword).toHaveBeenCalledWith("a:b:c", "a:b:c");
  });

  it("checks passwords in constant time by default", async () => {
    const handler = basicAuth({ findUser: (n) => USERS[n] })(async () => new Response("ok"));
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
    ["base64 of a bad length", "Basic YWxpY2U6d29uZGVybGFuZ"],
    ["padding in the middle", "Basic YQ==YQ=="],
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
    const { call, verifyPassword, findUser, downstream } = setup({
      findUser: async () => ({ name: "long", authorities: [], password: long }),
    });
    const response = await call(basic("long", long));
    expect(response.status).toBe(401);
    expect(verifyPassword).not.toHaveBeenCalled();
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
    const handler = basicAuth({ findUser: (n) => USERS[n], required: false })(async (request) => {
      seen = request;
      return new Response("ok");
    });
    const response = await handler(
      new Request("http://h/", { headers: { authorization: "Bearer x" } }),
    );
    expect(response.status).toBe(200);
    expect(seen && isAuthenticated(seen)).toBe(false);
  });

  it("passes a request without credentials on as anonymous when not required", async () => {
    const seen: boolean[] = [];
    const handler = basicAuth({ findUser: (n) => USERS[n], required: false })(async (request) => {
      seen.push(isAuthenticated(request));
      return new Response("ok");
    });
    expect((await handler(new Request("http://h/"))).status).toBe(200);
    expect(seen).toEqual([false]);
  });
});

describe("basicAuth: failed logins", () => {
  it("answers 401 to a wrong password after checking it once", async () => {
    const { call, verifyPassword, downstream } = setup();
    expect((await call(basic("alice", "guess"))).status).toBe(401);
    expect(verifyPassword).toHaveBeenCalledTimes(1);
    expect(verifyPassword).toHaveBeenCalledWith("guess", "wonderland");
    expect(downstream).not.toHaveBeenCalled();
  });

  it("answers 401 to an unknown user after checking the password against a stand-in", async () => {
    const { call, verifyPassword, downstream } = setup({ unknownUserPassword: "{stand-in}hash" });
    expect((await call(basic("mallory", "guess"))).status).toBe(401);
    expect(verifyPassword).toHaveBeenCalledTimes(1);
    expect(verifyPassword).toHaveBeenCalledWith("guess", "{stand-in}hash");
    expect(downstream).not.toHaveBeenCalled();
  });

  it("checks a password for unknown users with the default stand-in as well", async () => {
    const { call, verifyPassword } = setup();
    expect((await call(basic("mallory", "guess"))).status).toBe(401);
    expect(verifyPassword).toHaveBeenCalledTimes(1);
    expect(verifyPassword).toHaveBeenCalledWith("guess", expect.any(String));
  });

  it("refuses an unknown user even when the password equals the stand-in", async () => {
    const { call } = setup({ unknownUserPassword: "stand-in" });
    expect((await call(basic("mallory", "stand-in"))).status).toBe(401);
  });

  it("answers 401 when verifyPassword returns a truthy value other than true", async () => {
    const { call, downstream } = setup({
      verifyPassword: async () => "yes" as unknown as boolean,
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
      expect(() => basicAuth({ findUser: () => undefined, realm })).toThrow(InvalidOptionsError);
    },
  );

  it("offers the Basic challenge on the chain's 401 when not required", async () => {
    const handler = newHandler(() => new Response("ok"), {
      authentication: basicAuth({ findUser: (n) => USERS[n], required: false, realm: "api" }),
      authorization: routes([anyRequest().authenticated()]),
      onError: () => {},
    });
    const response = await handler(new Request("http://h/"));
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe('Basic realm="api", charset="UTF-8"');
  });

  it("does not offer the Basic challenge to page navigations when not required", async () => {
    const handler = newHandler(() => new Response("ok"), {
      authentication: basicAuth({ findUser: (n) => USERS[n], required: false }),
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
  it("throws InvalidOptionsError without findUser", () => {
    expect(() => basicAuth({} as BasicAuthOptions)).toThrow(InvalidOptionsError);
    expect(() => basicAuth(undefined as unknown as BasicAuthOptions)).toThrow(InvalidOptionsError);
  });

  it("throws InvalidOptionsError for a verifyPassword that is not a function", () => {
    expect(() =>
      basicAuth({
        findUser: () => undefined,
        verifyPassword: "plain" as unknown as BasicAuthOptions["verifyPassword"],
      }),
    ).toThrow(InvalidOptionsError);
  });
});
