import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import {
  type ContentSecurityPolicyOptions,
  cspNonce,
  DEFAULT_CSP_DIRECTIVES,
  securityHeaders,
} from "./index.ts";

async function policy(
  csp: ContentSecurityPolicyOptions,
  url = "http://app.test/",
  handler: Handler = async () => new Response("ok"),
): Promise<Response> {
  return securityHeaders({ contentSecurityPolicy: csp })(handler)(new Request(url));
}

function directives(header: string | null): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const part of (header ?? "").split(";")) {
    const [name, ...values] = part.trim().split(" ");
    if (name) map.set(name, values);
  }
  return map;
}

describe("Content-Security-Policy directives", () => {
  it("merges given directives over the defaults, camelCase or kebab-case", async () => {
    const res = await policy({
      directives: {
        scriptSrc: ["'self'", "https://cdn.example"],
        "connect-src": "'self' wss://live.example",
        frameAncestors: ["'none'"],
      },
    });
    const map = directives(res.headers.get("content-security-policy"));
    expect(map.get("script-src")).toEqual(["'self'", "https://cdn.example"]);
    expect(map.get("connect-src")).toEqual(["'self'", "wss://live.example"]);
    expect(map.get("frame-ancestors")).toEqual(["'none'"]);
    expect(map.get("object-src")).toEqual(["'none'"]);
  });

  it("drops a default directive given false or null", async () => {
    const res = await policy({ directives: { styleSrc: false, "img-src": null } });
    const map = directives(res.headers.get("content-security-policy"));
    expect(map.has("style-src")).toBe(false);
    expect(map.has("img-src")).toBe(false);
    expect(map.has("default-src")).toBe(true);
  });

  it("uses only the given directives without defaults", async () => {
    const res = await policy(
      { useDefaults: false, directives: { defaultSrc: ["'none'"], sandbox: true } },
      "https://app.test/",
    );
    expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
  });

  it("upgrade-insecure-requests: HTTPS only by default, forced or dropped on request", async () => {
    expect((await policy({})).headers.get("content-security-policy")).not.toContain("upgrade");
    const forced = await policy({ directives: { upgradeInsecureRequests: true } });
    expect(forced.headers.get("content-security-policy")).toMatch(/; upgrade-insecure-requests$/);
    const dropped = await policy(
      { directives: { upgradeInsecureRequests: false } },
      "https://app.test/",
    );
    expect(dropped.headers.get("content-security-policy")).not.toContain("upgrade");
  });

  it("report-only uses its own header and leaves upgrade-insecure-requests out", async () => {
    const res = await policy({ reportOnly: true }, "https://app.test/");
    expect(res.headers.has("content-security-policy")).toBe(false);
    const value = res.headers.get("content-security-policy-report-only");
    expect(value).toContain("default-src 'self'");
    expect(value).not.toContain("upgrade-insecure-requests");
  });

  it("the defaults are frozen and documented as chosen", () => {
    expect(Object.isFrozen(DEFAULT_CSP_DIRECTIVES)).toBe(true);
    expect(DEFAULT_CSP_DIRECTIVES["frame-ancestors"]).toEqual(["'self'"]);
    expect(DEFAULT_CSP_DIRECTIVES["script-src-attr"]).toEqual(["'none'"]);
  });

  const bad: [string, ContentSecurityPolicyOptions | unknown][] = [
    ["CRLF in a source", { directives: { scriptSrc: ["'self'\r\nX-Evil: 1"] } }],
    ["LF in a string value", { directives: { scriptSrc: "'self'\nx" } }],
    ["a semicolon smuggling a directive", { directives: { imgSrc: ["* ; script-src *"] } }],
    ["a semicolon in one source", { directives: { imgSrc: ["https://a.test;script-src"] } }],
    ["a comma starting a second policy", { directives: { imgSrc: ["https://a.test,b"] } }],
    ["a non-ASCII source", { directives: { imgSrc: ["https://é.test"] } }],
    ["an unknown directive", { directives: { scriptSource: ["'self'"] } }],
    ["a typo'd directive", { directives: { "script-scr": ["'self'"] } }],
    ["an upper-case kebab name", { directives: { "Script-Src": ["'self'"] } }],
    [
      "the same directive twice",
      { directives: { scriptSrc: ["'self'"], "script-src": ["'self'"] } },
    ],
    ["an unquoted self", { directives: { scriptSrc: ["self"] } }],
    ["an unquoted unsafe-inline", { directives: { styleSrc: ["unsafe-inline"] } }],
    ["a broken quote", { directives: { scriptSrc: ["'self"] } }],
    ["'none' next to other sources", { directives: { objectSrc: ["'none'", "'self'"] } }],
    ["an empty list", { directives: { scriptSrc: [] } }],
    ["an empty string", { directives: { scriptSrc: "" } }],
    ["true on a source directive", { directives: { scriptSrc: true } }],
    ["a number", { directives: { scriptSrc: 1 } }],
    ["a fixed nonce", { directives: { scriptSrc: ["'nonce-abc'"] } }],
    ["upgrade-insecure-requests with sources", { directives: { upgradeInsecureRequests: ["x"] } }],
    ["no directives at all", { useDefaults: false }],
    ["an unknown option", { nonces: true }],
    ["a non-boolean nonce", { nonce: "yes" }],
    ["directives as an array", { directives: [] }],
    ["nonce into script-src 'none'", { nonce: true, directives: { scriptSrc: ["'none'"] } }],
    [
      "nonce without any script or style directive",
      { nonce: true, useDefaults: false, directives: { imgSrc: ["'self'"] } },
    ],
    ["true as the whole option", true],
  ];

  it.each(bad)("throws InvalidOptionsError at build time: %s", (_label, csp) => {
    expect(() =>
      securityHeaders({ contentSecurityPolicy: csp as ContentSecurityPolicyOptions }),
    ).toThrow(InvalidOptionsError);
  });
});

describe("CSP nonces", () => {
  it("puts a fresh nonce per request into script-src and style-src, readable downstream", async () => {
    const seen: (string | undefined)[] = [];
    const handler: Handler = async (request) => {
      seen.push(cspNonce(request));
      return new Response(`<script nonce="${cspNonce(request)}"></script>`);
    };
    const leg = securityHeaders({ contentSecurityPolicy: { nonce: true } })(handler);
    const first = await leg(new Request("http://app.test/"));
    const second = await leg(new Request("http://app.test/"));
    const [a, b] = seen;
    expect(a).toMatch(/^[0-9a-f]{32}$/); // 128 bits, hex
    expect(b).toMatch(/^[0-9a-f]{32}$/);
    expect(a).not.toBe(b);
    for (const [res, nonce] of [
      [first, a],
      [second, b],
    ] as const) {
      const map = directives(res.headers.get("content-security-policy"));
      expect(map.get("script-src")).toEqual(["'self'", `'nonce-${nonce}'`]);
      expect(map.get("style-src")).toEqual([
        "'self'",
        "https:",
        "'unsafe-inline'",
        `'nonce-${nonce}'`,
      ]);
      expect(map.get("default-src")).toEqual(["'self'"]);
      expect(map.get("script-src-attr")).toEqual(["'none'"]);
    }
    expect(await first.text()).toBe(`<script nonce="${a}"></script>`);
  });

  it("falls back to default-src when script-src and style-src are dropped", async () => {
    let nonce: string | undefined;
    const res = await policy(
      { nonce: true, directives: { scriptSrc: false, styleSrc: false } },
      "https://app.test/",
      async (request) => {
        nonce = cspNonce(request);
        return new Response("ok");
      },
    );
    const header = res.headers.get("content-security-policy") ?? "";
    expect(header.startsWith(`default-src 'self' 'nonce-${nonce}'; base-uri`)).toBe(true);
    expect(header.split("'nonce-").length).toBe(2); // once only
    expect(header).toMatch(/; upgrade-insecure-requests$/);
  });

  it("keeps the nonce well placed when the nonce directive is the last one", async () => {
    let nonce: string | undefined;
    const res = await policy(
      {
        nonce: true,
        useDefaults: false,
        directives: { defaultSrc: "'self'", scriptSrc: "'self'", styleSrc: "'self'" },
      },
      "https://app.test/",
      async (request) => {
        nonce = cspNonce(request);
        return new Response("ok");
      },
    );
    expect(res.headers.get("content-security-policy")).toBe(
      `default-src 'self'; script-src 'self' 'nonce-${nonce}'; style-src 'self' 'nonce-${nonce}'`,
    );
  });

  it("binds no nonce when nonces are off", async () => {
    let nonce: string | undefined = "unset";
    const res = await policy({}, "http://app.test/", async (request) => {
      nonce = cspNonce(request);
      return new Response("ok");
    });
    expect(nonce).toBeUndefined();
    expect(res.headers.get("content-security-policy")).not.toContain("nonce");
  });

  it("cspNonce is undefined for a request the leg never saw", () => {
    expect(cspNonce(new Request("http://app.test/"))).toBeUndefined();
  });
});
