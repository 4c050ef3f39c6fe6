import { describe, expect, it } from "vitest";
import { isDeletion, setCookiesOf } from "../../test/support/cookie-jar.ts";
import { type Client, PASSWORDS, testApp } from "../../test/support/session-app.ts";
import { randomToken } from "../core/encoding.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { type CsrfOptions, csrf } from "./index.ts";

const encode = (text: string) => new TextEncoder().encode(text);
const BOUNDARY = "----portcullis-test-7MA4YWxkTrZu0gW";

function multipart(fields: Record<string, string>, boundary = BOUNDARY): string {
  let body = "";
  for (const [name, value] of Object.entries(fields)) {
    body += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  }
  return `${body}--${boundary}--\r\n`;
}

/** A client holding a live (anonymous) session and a token for it. */
async function withSession(options: CsrfOptions = {}) {
  const app = await testApp({ csrf: options });
  const client = app.client();
  const token = await client.csrf();
  return { app, client, token };
}

/** Rejects when `promise` has not settled within `ms`: a hung request fails the test instead of timing it out. */
function within<T>(promise: Promise<T>, ms = 2000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no response within ${ms} ms (request hangs)`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function echo(response: Response) {
  return (await response.json()) as { method: string; contentType: string | null; body: string };
}

const METHODS = ["POST", "PUT", "PATCH", "DELETE", "post", "patch", "PROPFIND"] as const;
const CONTENT_TYPES: ReadonlyArray<[string, string | undefined, string]> = [
  ["missing", undefined, "payload"],
  ["TEXT/PLAIN", "TEXT/PLAIN", "payload"],
  ["application/json; charset=utf-8", "application/json; charset=utf-8", '{"a":1}'],
  ["application/x-www-form-urlencoded", "application/x-www-form-urlencoded", "note=hello"],
  [
    "multipart/form-data; boundary=…",
    `multipart/form-data; boundary=${BOUNDARY}`,
    multipart({ note: "hello" }),
  ],
];
const MATRIX = METHODS.flatMap((method) =>
  CONTENT_TYPES.map(([label, type, body]) => [method, label, type, body] as const),
);

describe("which requests are checked", () => {
  it.each(MATRIX)(
    "%s with content type %s is refused without a token and passes with a valid header token",
    async (method, _label, type, body) => {
      const { client, token } = await withSession();
      const headers: Record<string, string> = type === undefined ? {} : { "content-type": type };
      const refused = await client.fetch("/api/echo", { method, headers, body: encode(body) });
      expect(refused.status).toBe(403);
      expect(refused.headers.get("content-type")).toBe("application/problem+json");

      const passed = await client.fetch("/api/echo", {
        method,
        headers,
        token,
        body: encode(body),
      });
      expect(passed.status).toBe(200);
      const echoed = await echo(passed);
      expect(echoed.method.toUpperCase()).toBe(method.toUpperCase());
      expect(echoed.body).toBe(body);
    },
  );

  it.each(["GET", "HEAD", "OPTIONS"])("lets a safe %s through without a token", async (method) => {
    const { client } = await withSession();
    const response = await client.fetch("/api/echo", { method });
    expect(response.status).toBe(200);
  });
});

describe("where the token may come from", () => {
  it("accepts the token in the _csrf urlencoded field and leaves the body readable downstream", async () => {
    const { client, token } = await withSession();
    const body = `note=hello%20world&_csrf=${encodeURIComponent(token)}&tail=${"x".repeat(2000)}`;
    const response = await client.fetch("/api/echo", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body,
    });
    expect(response.status).toBe(200);
    const echoed = await echo(response);
    expect(echoed.body).toBe(body);
  });

  it("accepts the token in the _csrf multipart field and leaves the body readable downstream", async () => {
    const { client, token } = await withSession();
    const body = multipart({ note: "hello", _csrf: token, tail: "y".repeat(2000) });
    const response = await client.fetch("/api/echo", {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
      body,
    });
    expect(response.status).toBe(200);
    const echoed = await echo(response);
    expect(echoed.body).toBe(body);
  });

  it("does not look for the field in a JSON or text body", async () => {
    const { client, token } = await withSession();
    for (const [type, body] of [
      ["application/json", JSON.stringify({ _csrf: token })],
      ["text/plain", `_csrf=${token}`],
    ] as const) {
      const response = await client.fetch("/api/echo", {
        method: "POST",
        headers: { "content-type": type },
        body,
      });
      expect(response.status, type).toBe(403);
    }
  });

  it("answers (403, within 2 s) a urlencoded form longer than maxFormBytes instead of hanging", async () => {
    const { client, token } = await withSession({ maxFormBytes: 1024 });
    const response = await within(
      client.fetch("/api/echo", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `_csrf=${encodeURIComponent(token)}&pad=${"p".repeat(2048)}`,
      }),
    );
    expect(response.status).toBe(403);
  });

  it("answers (403, within 2 s) a 100 kB multipart upload with the _csrf field, past the default 64 KiB, instead of hanging", async () => {
    const { client, token } = await withSession();
    const response = await within(
      client.fetch("/api/echo", {
        method: "POST",
        headers: { "content-type": `multipart/form-data; boundary=${BOUNDARY}` },
        body: multipart({ _csrf: token, file: "f".repeat(100_000) }),
      }),
    );
    expect(response.status).toBe(403);
  });

  it("refuses a malformed multipart body without a 500", async () => {
    const { client, token } = await withSession();
    const response = await client.fetch("/api/echo", {
      method: "POST",
      headers: { "content-type": "multipart/form-data; boundary=nope" },
      body: `--other\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${token}`,
    });
    expect(response.status).toBe(403);
  });

  it("honours custom header and field names", async () => {
    const { client, token } = await withSession({ headerName: "X-Token", parameterName: "tok" });
    const viaHeader = await client.fetch("/api/echo", {
      method: "POST",
      headers: { "x-token": token },
      body: "a",
    });
    expect(viaHeader.status).toBe(200);
    const viaDefault = await client.fetch("/api/echo", { method: "POST", token, body: "a" });
    expect(viaDefault.status).toBe(403);
    const viaField = await client.fetch("/api/echo", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `tok=${encodeURIComponent(token)}`,
    });
    expect(viaField.status).toBe(200);
  });
});

describe("bad tokens", () => {
  async function otherSessionsToken(client: Client) {
    const other = (await testApp()).client();
    void client;
    return other.csrf();
  }

  const badTokens: Array<[string, (token: string, client: Client) => Promise<string> | string]> = [
    ["a wrong token of the right shape", () => `${randomToken(16)}.${randomToken(32)}`],
    [
      "a token with one MAC character changed",
      (t) => t.slice(0, -3) + (t.at(-3) === "A" ? "B" : "A") + t.slice(-2),
    ],
    ["a token with a changed salt", (t) => (t[0] === "A" ? "B" : "A") + t.slice(1)],
    ["a token from another session", async (_t, client) => otherSessionsToken(client)],
    ["bad base64", () => "!!!!!!!!!!!!!!!!!!!!!!.@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"],
    ["the empty string", () => ""],
    ["a lone dot", () => "."],
    ["the salt alone", (t) => t.slice(0, t.indexOf("."))],
    ["the MAC alone", (t) => t.slice(t.indexOf(".") + 1)],
    ["a 10 kB token", (t) => `${t}${"A".repeat(10_240)}`],
    ["the token twice", (t) => `${t},${t}`],
    ["the session id itself", (_t, client) => client.sessionId as string],
  ];

  it.each(badTokens)("refuses %s with a 403 problem", async (_label, make) => {
    const { client, token } = await withSession();
    const bad = await make(token, client);
    const viaHeader = await client.fetch("/api/echo", { method: "POST", token: bad, body: "a" });
    expect(viaHeader.status).toBe(403);
    expect(viaHeader.headers.get("content-type")).toBe("application/problem+json");
    const viaField = await client.fetch("/api/echo", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `_csrf=${encodeURIComponent(bad)}`,
    });
    expect(viaField.status).toBe(403);
    // The genuine token still works: nothing was consumed or locked.
    const ok = await client.fetch("/api/echo", { method: "POST", token, body: "a" });
    expect(ok.status).toBe(200);
  });
});

describe("method override", () => {
  it("still checks a POST that claims to be a GET through X-HTTP-Method-Override", async () => {
    const { client } = await withSession();
    const response = await client.fetch("/api/echo", {
      method: "POST",
      headers: { "x-http-method-override": "GET" },
      body: "a",
    });
    expect(response.status).toBe(403);
  });

  it.each([
    ["X-HTTP-Method-Override: DELETE", { "x-http-method-override": "DELETE" }, ""],
    ["X-HTTP-Method: PUT", { "x-http-method": "PUT" }, ""],
    ["X-Method-Override: patch", { "x-method-override": "patch" }, ""],
    ["X-HTTP-Method-Override: ' delete '", { "x-http-method-override": " delete " }, ""],
    ["?_method=DELETE", {}, "?_method=DELETE"],
    ["?_method=delete", {}, "?_method=delete"],
    ["?_method=GET&_method=DELETE", {}, "?_method=GET&_method=DELETE"],
    ["?%5Fmethod=DELETE", {}, "?%5Fmethod=DELETE"],
    ["?_%6Dethod=delete", {}, "?_%6Dethod=delete"],
    ["X-HTTP-Method-Override: GET, DELETE", { "x-http-method-override": "GET, DELETE" }, ""],
  ])("checks a GET that asks for another method with %s", async (_label, headers, query) => {
    const { client, token } = await withSession();
    const refused = await client.fetch(`/api/echo${query}`, { headers });
    expect(refused.status).toBe(403);
    const passed = await client.fetch(`/api/echo${query}`, { headers, token });
    expect(passed.status).toBe(200);
  });

  it("checks an OPTIONS whose form body asks for POST", async () => {
    const { client, token } = await withSession();
    const ask = (withToken: boolean) =>
      client.fetch("/api/echo", {
        method: "OPTIONS",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "_method=POST&amount=100",
        ...(withToken ? { token } : {}),
      });
    expect((await ask(false)).status).toBe(403);
    expect((await ask(true)).status).not.toBe(403);
  });

  it("lets a GET whose override names a safe method through", async () => {
    const { client } = await withSession();
    const response = await client.fetch("/api/echo?_method=HEAD", {
      headers: { "x-http-method-override": "GET" },
    });
    expect(response.status).toBe(200);
  });
});

describe("Fetch Metadata and Origin", () => {
  const trusted: CsrfOptions = {
    trustedOrigins: ["https://partner.example", "https://blog.app.example"],
  };

  it.each([
    [
      "cross-site from a foreign origin",
      { "sec-fetch-site": "cross-site", origin: "https://evil.example" },
      {},
    ],
    ["cross-site without an Origin", { "sec-fetch-site": "cross-site" }, trusted],
    [
      "cross-site from an untrusted origin while others are trusted",
      { "sec-fetch-site": "cross-site", origin: "https://evil.example" },
      trusted,
    ],
    [
      "same-site from an untrusted sibling",
      { "sec-fetch-site": "same-site", origin: "https://blog.app.example" },
      {},
    ],
    ["an unknown Sec-Fetch-Site value", { "sec-fetch-site": "bogus" }, {}],
    ["Origin null", { origin: "null" }, {}],
    ["Origin null even when same-site", { "sec-fetch-site": "same-site", origin: "null" }, trusted],
    ["a foreign Origin", { origin: "https://evil.example" }, {}],
    ["the own host over http", { origin: "http://app.example" }, {}],
    ["the own host on another port", { origin: "https://app.example:8443" }, {}],
    ["a look-alike suffix", { origin: "https://app.example.evil.example" }, {}],
    [
      "an Origin matching X-Forwarded-Host/Proto (never trusted)",
      {
        origin: "https://evil.example",
        "x-forwarded-host": "evil.example",
        "x-forwarded-proto": "https",
      },
      {},
    ],
    [
      "an Origin matching a Forwarded host (never trusted)",
      { origin: "https://evil.example", forwarded: "host=evil.example;proto=https" },
      {},
    ],
  ])("refuses %s even with a valid token", async (_label, headers, options) => {
    const { client, token } = await withSession(options as CsrfOptions);
    const response = await client.fetch("/api/echo", {
      method: "POST",
      headers: headers as Record<string, string>,
      token,
      body: "a",
    });
    expect(response.status).toBe(403);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
  });

  it.each([
    [
      "cross-site from a trusted origin",
      { "sec-fetch-site": "cross-site", origin: "https://partner.example" },
    ],
    [
      "same-site from a trusted sibling",
      { "sec-fetch-site": "same-site", origin: "https://blog.app.example" },
    ],
    ["same-origin", { "sec-fetch-site": "same-origin", origin: "https://app.example" }],
    ["the server's own Origin without Fetch Metadata", { origin: "https://app.example" }],
    ["a non-browser client (no Origin, no Fetch Metadata)", {}],
  ])("passes %s with a valid token", async (_label, headers) => {
    const { client, token } = await withSession(trusted);
    const response = await client.fetch("/api/echo", {
      method: "POST",
      headers: headers as Record<string, string>,
      token,
      body: "a",
    });
    expect(response.status).toBe(200);
  });

  it("still wants the token for a trusted or same-origin request", async () => {
    const { client } = await withSession(trusted);
    for (const headers of [
      { "sec-fetch-site": "same-origin", origin: "https://app.example" },
      { "sec-fetch-site": "cross-site", origin: "https://partner.example" },
    ]) {
      const response = await client.fetch("/api/echo", { method: "POST", headers, body: "a" });
      expect(response.status).toBe(403);
    }
  });

  it("refuses to be built with a trusted origin that is not a bare origin", () => {
    for (const origin of ["https://partner.example/path", "null", "not a url", "file:///etc"]) {
      expect(() => csrf({ trustedOrigins: [origin] }), origin).toThrow(InvalidOptionsError);
    }
  });
});

describe("requests without a session cookie", () => {
  it("exempts a bearer call from the token check: a cross-site form cannot attach an Authorization header, and there is no session to ride on", async () => {
    const app = await testApp();
    const response = await app.client().fetch("/api/echo", {
      method: "POST",
      headers: { authorization: "Bearer xyz", "content-type": "application/json" },
      body: "{}",
    });
    expect(response.status).toBe(200);
  });

  it.each([
    ["cross-site", { "sec-fetch-site": "cross-site", origin: "https://evil.example" }],
    ["same-site", { "sec-fetch-site": "same-site", origin: "https://blog.app.example" }],
    ["Origin null", { origin: "null" }],
    ["a foreign Origin", { origin: "https://evil.example" }],
  ])(
    "still applies the Fetch Metadata check to a bearer call: %s is refused",
    async (_label, headers) => {
      const app = await testApp();
      const response = await app.client().fetch("/api/echo", {
        method: "POST",
        headers: { authorization: "Bearer xyz", ...headers },
        body: "{}",
      });
      expect(response.status).toBe(403);
    },
  );

  it.each(["/login", "/LOGIN", "/login/", "//login", "/logout", "/Logout/"])(
    "requires a session and a token for POST %s even without a session cookie (login CSRF)",
    async (path) => {
      const app = await testApp();
      const attacker = app.client();
      const attackersToken = await attacker.csrf();
      const victim = app.client();
      for (const token of [undefined, attackersToken]) {
        const response = await victim.fetch(path, {
          method: "POST",
          ...(token === undefined ? {} : { token }),
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "alice", password: PASSWORDS.alice }),
        });
        expect(response.status).toBe(403);
      }
      expect(victim.sessionId).toBeUndefined();
    },
  );

  it("refuses a login whose form carries a token for another session", async () => {
    const app = await testApp();
    const attacker = app.client();
    const token = await attacker.csrf();
    const victim = app.client();
    await victim.csrf();
    const response = await victim.fetch("/login", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `username=alice&password=${PASSWORDS.alice}&_csrf=${encodeURIComponent(token)}`,
    });
    expect(response.status).toBe(403);
    expect((await victim.fetch("/")).status).toBe(401);
  });
});

describe("the token endpoint", () => {
  it("answers GET /csrf with {token, headerName, parameterName}, no-store, and a session id cookie, writing nothing to the store", async () => {
    const app = await testApp();
    const client = app.client();
    const response = await client.fetch("/csrf");
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("content-type")).toContain("application/json");
    const body = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["headerName", "parameterName", "token"]);
    expect(body.headerName).toBe("x-csrf-token");
    expect(body.parameterName).toBe("_csrf");
    expect(body.token).toMatch(/^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    const cookies = setCookiesOf(response).filter((c) => c.name === app.cookieName);
    expect(cookies).toHaveLength(1);
    expect(client.sessionId).toBeDefined();
    // The id keys the token; nothing is stored until the application saves data.
    await expect(app.store.get(client.sessionId as string)).resolves.toBeUndefined();
    expect(app.store.size).toBe(0);
    const used = await client.fetch("/api/echo", { method: "POST", token: body.token as string });
    expect(used.status).toBe(200);
    expect(app.store.size).toBe(0);
  });

  it("hands out a different token on every call, all of which verify, and keeps the session", async () => {
    const { client, token } = await withSession();
    const id = client.sessionId;
    const tokens = [token];
    for (let i = 0; i < 4; i++) {
      const response = await client.fetch("/csrf");
      expect(response.headers.getSetCookie()).toEqual([]);
      tokens.push(((await response.json()) as { token: string }).token);
    }
    expect(new Set(tokens).size).toBe(tokens.length);
    expect(client.sessionId).toBe(id);
    for (const t of tokens) {
      const response = await client.fetch("/api/echo", { method: "POST", token: t, body: "a" });
      expect(response.status).toBe(200);
    }
  });

  it("answers the configured tokenPath and none when tokenPath is false", async () => {
    const custom = (await testApp({ csrf: { tokenPath: "/auth/token" } })).client();
    expect((await custom.fetch("/auth/token")).status).toBe(200);
    const none = await testApp({ csrf: { tokenPath: false } });
    const response = await none.client().fetch("/csrf");
    expect(response.status).toBe(401);
    expect(setCookiesOf(response).filter((c) => !isDeletion(c))).toEqual([]);
  });

  it("is not answered for POST", async () => {
    const app = await testApp();
    const response = await app.client().fetch("/csrf", { method: "POST" });
    expect(response.status).not.toBe(200);
  });
});

describe("csrf() options", () => {
  it.each([
    ["a header name with a space", { headerName: "x csrf" }],
    ["an empty header name", { headerName: "" }],
    ["an empty parameter name", { parameterName: "" }],
    ["a negative maxFormBytes", { maxFormBytes: -1 }],
    ["a fractional maxFormBytes", { maxFormBytes: 1.5 }],
    ["a tokenPath without a leading slash", { tokenPath: "csrf" }],
    ["an alwaysProtect pattern without a leading slash", { alwaysProtect: ["login"] }],
  ])("throws InvalidOptionsError for %s", (_label, options) => {
    expect(() => csrf(options as CsrfOptions)).toThrow(InvalidOptionsError);
  });
});
