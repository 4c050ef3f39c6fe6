import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import {
  SECURITY_HEADERS_DEFAULTS,
  type SecurityHeadersOptions,
  securityHeaders,
} from "./index.ts";

const ok: Handler = async () => new Response("ok", { headers: { "content-type": "text/plain" } });

function run(
  options: SecurityHeadersOptions | undefined,
  request: Request | string = "http://app.test/",
  handler: Handler = ok,
): Promise<Response> {
  const req = typeof request === "string" ? new Request(request) : request;
  return securityHeaders(options)(handler)(req);
}

const CSP_HTTP =
  "default-src 'self'; base-uri 'self'; font-src 'self' https: data:; form-action 'self'; " +
  "frame-ancestors 'self'; img-src 'self' data:; object-src 'none'; script-src 'self'; " +
  "script-src-attr 'none'; style-src 'self' https: 'unsafe-inline'";

const STATIC_DEFAULTS: Record<string, string> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "SAMEORIGIN",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "origin-agent-cluster": "?1",
  "x-dns-prefetch-control": "off",
  "x-permitted-cross-domain-policies": "none",
  "x-xss-protection": "0",
};

describe("securityHeaders defaults", () => {
  it("sets every default header on a plain-HTTP response, without HSTS", async () => {
    const res = await run(undefined);
    for (const [name, value] of Object.entries(STATIC_DEFAULTS)) {
      expect(res.headers.get(name), name).toBe(value);
    }
    expect(res.headers.get("content-security-policy")).toBe(CSP_HTTP);
    expect(res.headers.has("strict-transport-security")).toBe(false);
    expect(res.headers.has("permissions-policy")).toBe(false);
    expect(res.headers.has("cross-origin-embedder-policy")).toBe(false);
    expect(res.headers.has("content-security-policy-report-only")).toBe(false);
    expect(await res.text()).toBe("ok");
  });

  it("adds HSTS and upgrade-insecure-requests on HTTPS", async () => {
    const res = await run(undefined, "https://app.test/");
    expect(res.headers.get("strict-transport-security")).toBe(
      "max-age=31536000; includeSubDomains",
    );
    expect(res.headers.get("content-security-policy")).toBe(
      `${CSP_HTTP}; upgrade-insecure-requests`,
    );
  });

  it("ignores X-Forwarded-Proto unless trusted", async () => {
    const spoofed = new Request("http://app.test/", { headers: { "x-forwarded-proto": "https" } });
    const res = await run(undefined, spoofed);
    expect(res.headers.has("strict-transport-security")).toBe(false);
    expect(res.headers.get("content-security-policy")).not.toContain("upgrade-insecure-requests");
  });

  it("trusts the last X-Forwarded-Proto value when told to", async () => {
    const behindProxy = (value: string) =>
      run(
        { trustForwardedProto: true },
        new Request("http://app.test/", { headers: { "x-forwarded-proto": value } }),
      );
    expect((await behindProxy("https")).headers.get("strict-transport-security")).toContain(
      "max-age=31536000",
    );
    expect((await behindProxy("http, HTTPS ")).headers.has("strict-transport-security")).toBe(true);
    // The client wrote the first value; the proxy appended the real scheme.
    expect((await behindProxy("https, http")).headers.has("strict-transport-security")).toBe(false);
    expect((await behindProxy("httpsx")).headers.has("strict-transport-security")).toBe(false);
    expect(
      (await run({ trustForwardedProto: true })).headers.has("strict-transport-security"),
    ).toBe(false);
  });

  it("exports defaults matching what is sent", () => {
    expect(SECURITY_HEADERS_DEFAULTS.strictTransportSecurity.maxAge).toBe(31_536_000);
    expect(SECURITY_HEADERS_DEFAULTS.xFrameOptions).toBe("SAMEORIGIN");
    expect(Object.isFrozen(SECURITY_HEADERS_DEFAULTS)).toBe(true);
  });
});

describe("securityHeaders options", () => {
  const removable: [keyof SecurityHeadersOptions, string][] = [
    ["contentSecurityPolicy", "content-security-policy"],
    ["xContentTypeOptions", "x-content-type-options"],
    ["xFrameOptions", "x-frame-options"],
    ["referrerPolicy", "referrer-policy"],
    ["crossOriginOpenerPolicy", "cross-origin-opener-policy"],
    ["crossOriginResourcePolicy", "cross-origin-resource-policy"],
    ["originAgentCluster", "origin-agent-cluster"],
    ["xDnsPrefetchControl", "x-dns-prefetch-control"],
    ["xPermittedCrossDomainPolicies", "x-permitted-cross-domain-policies"],
    ["xXssProtection", "x-xss-protection"],
    ["strictTransportSecurity", "strict-transport-security"],
  ];

  it.each(removable)("%s: false removes %s and only it", async (option, header) => {
    const res = await run({ [option]: false }, "https://app.test/");
    expect(res.headers.has(header)).toBe(false);
    const others = removable.filter(([, h]) => h !== header).map(([, h]) => h);
    for (const other of others) expect(res.headers.has(other), other).toBe(true);
  });

  it("takes other values for each header", async () => {
    const res = await run(
      {
        xFrameOptions: "DENY",
        referrerPolicy: ["no-referrer", "strict-origin-when-cross-origin"],
        crossOriginOpenerPolicy: "same-origin-allow-popups",
        crossOriginResourcePolicy: "cross-origin",
        crossOriginEmbedderPolicy: "require-corp",
        xDnsPrefetchControl: "on",
        xPermittedCrossDomainPolicies: "master-only",
        strictTransportSecurity: { maxAge: 63_072_000, preload: true },
      },
      "https://app.test/",
    );
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer, strict-origin-when-cross-origin");
    expect(res.headers.get("cross-origin-opener-policy")).toBe("same-origin-allow-popups");
    expect(res.headers.get("cross-origin-resource-policy")).toBe("cross-origin");
    expect(res.headers.get("cross-origin-embedder-policy")).toBe("require-corp");
    expect(res.headers.get("x-dns-prefetch-control")).toBe("on");
    expect(res.headers.get("x-permitted-cross-domain-policies")).toBe("master-only");
    expect(res.headers.get("strict-transport-security")).toBe(
      "max-age=63072000; includeSubDomains; preload",
    );
  });

  it("HSTS without subdomains", async () => {
    const res = await run(
      { strictTransportSecurity: { includeSubDomains: false } },
      "https://a.test/",
    );
    expect(res.headers.get("strict-transport-security")).toBe("max-age=31536000");
  });

  it("serializes a Permissions-Policy as a structured dictionary", async () => {
    const res = await run({
      permissionsPolicy: {
        camera: [],
        geolocation: ["self", "https://Maps.example"],
        fullscreen: "*",
        publickeyCredentialsGet: ["self"],
      },
    });
    expect(res.headers.get("permissions-policy")).toBe(
      'camera=(), geolocation=(self "https://maps.example"), fullscreen=*, publickey-credentials-get=(self)',
    );
  });

  it("undefined options fall back to defaults", async () => {
    const res = await run(
      { xFrameOptions: undefined, strictTransportSecurity: undefined },
      "https://a.test/",
    );
    expect(res.headers.get("x-frame-options")).toBe("SAMEORIGIN");
    expect(res.headers.has("strict-transport-security")).toBe(true);
  });
});

describe("securityHeaders validation (build time)", () => {
  const bad: [string, unknown][] = [
    ["unknown option", { xFrameOption: "DENY" }],
    ["options not an object", "strict"],
    ["X-Frame-Options ALLOW-FROM", { xFrameOptions: "ALLOW-FROM https://a.test" }],
    ["X-Frame-Options with CRLF", { xFrameOptions: "DENY\r\nSet-Cookie: a=b" }],
    ["unknown referrer policy", { referrerPolicy: "never" }],
    ["empty referrer list", { referrerPolicy: [] }],
    ["referrer with CRLF", { referrerPolicy: ["no-referrer\r\nx: y"] }],
    ["COOP typo", { crossOriginOpenerPolicy: "same_origin" }],
    ["CORP typo", { crossOriginResourcePolicy: "same" }],
    ["COEP typo", { crossOriginEmbedderPolicy: "require" }],
    ["XSS filter on", { xXssProtection: "1; mode=block" }],
    ["DNS prefetch typo", { xDnsPrefetchControl: "no" }],
    ["cross-domain typo", { xPermittedCrossDomainPolicies: "nothing" }],
    ["non-boolean nosniff", { xContentTypeOptions: "yes" }],
    ["non-boolean agent cluster", { originAgentCluster: 1 }],
    ["non-boolean trustForwardedProto", { trustForwardedProto: "true" }],
    ["HSTS negative max-age", { strictTransportSecurity: { maxAge: -1 } }],
    ["HSTS fractional max-age", { strictTransportSecurity: { maxAge: 1.5 } }],
    ["HSTS max-age as string", { strictTransportSecurity: { maxAge: "31536000" } }],
    ["HSTS preload, short", { strictTransportSecurity: { preload: true, maxAge: 86_400 } }],
    [
      "HSTS preload without subdomains",
      { strictTransportSecurity: { preload: true, includeSubDomains: false } },
    ],
    ["HSTS unknown key", { strictTransportSecurity: { maxage: 10 } }],
    ["HSTS true", { strictTransportSecurity: true }],
    ["permissions: bad feature", { permissionsPolicy: { "cam era": [] } }],
    ["permissions: path origin", { permissionsPolicy: { camera: ["https://a.test/x"] } }],
    ["permissions: quote injection", { permissionsPolicy: { camera: ['https://a.test" x'] } }],
    ["permissions: unquoted keyword", { permissionsPolicy: { camera: "self" } }],
    ["permissions: empty", { permissionsPolicy: {} }],
    ["permissions: twice", { permissionsPolicy: { fooBar: [], "foo-bar": [] } }],
  ];

  it.each(bad)("throws InvalidOptionsError: %s", (_label, options) => {
    expect(() => securityHeaders(options as SecurityHeadersOptions)).toThrow(InvalidOptionsError);
  });
});

describe("securityHeaders on any response", () => {
  it("leaves headers the downstream set alone", async () => {
    const handler: Handler = async () =>
      new Response("x", {
        headers: {
          "content-security-policy": "default-src 'none'",
          "x-frame-options": "DENY",
          "strict-transport-security": "max-age=0",
          "referrer-policy": "origin",
        },
      });
    const res = await run(undefined, "https://app.test/", handler);
    expect(res.headers.get("content-security-policy")).toBe("default-src 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("strict-transport-security")).toBe("max-age=0");
    expect(res.headers.get("referrer-policy")).toBe("origin");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("keeps status, body and every Set-Cookie on the mutated response", async () => {
    const handler: Handler = async () => {
      const headers = new Headers();
      headers.append("set-cookie", "a=1");
      headers.append("set-cookie", "b=2");
      return new Response("teapot", { status: 418, statusText: "Teapot", headers });
    };
    const res = await run(undefined, "http://app.test/", handler);
    expect(res.status).toBe(418);
    expect(res.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(await res.text()).toBe("teapot");
  });

  it("rebuilds an immutable redirect instead of throwing", async () => {
    const redirect = Response.redirect("https://app.test/next", 302);
    expect(() => redirect.headers.set("x", "y")).toThrow(TypeError);
    const res = await run(undefined, "https://app.test/", async () => redirect);
    expect(res).not.toBe(redirect);
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("https://app.test/next");
    expect(res.headers.get("x-frame-options")).toBe("SAMEORIGIN");
    expect(res.headers.get("strict-transport-security")).toContain("max-age=31536000");
  });

  it("handles a fetch() response, whose headers are immutable", async () => {
    const fetched = await fetch("data:text/plain,hello");
    expect(() => fetched.headers.set("x", "y")).toThrow(TypeError);
    const res = await run(undefined, "http://app.test/", async () => fetched);
    expect(res.headers.get("content-type")).toBe("text/plain");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await res.text()).toBe("hello");
  });

  it("returns a network error response unchanged (it cannot be rebuilt)", async () => {
    const error = Response.error();
    const res = await run(undefined, "http://app.test/", async () => error);
    expect(res).toBe(error);
  });

  for (const immutable of [false, true]) {
    it(`does not buffer a streaming body (${immutable ? "immutable" : "mutable"} headers)`, async () => {
      let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
      let pulls = 0;
      const stream = new ReadableStream<Uint8Array>({
        start(c) {
          controller = c;
        },
        pull() {
          pulls++;
        },
      });
      const lockedHeaders = (await fetch("data:text/plain,x")).headers;
      class Locked extends Response {
        override get headers(): Headers {
          return lockedHeaders;
        }
      }
      const handler: Handler = async () => (immutable ? new Locked(stream) : new Response(stream));
      const pending = run(undefined, "http://app.test/", handler);
      // Nothing has been enqueued yet: a leg that read the body would never settle.
      const res = await Promise.race([
        pending,
        new Promise<"stuck">((resolve) => setTimeout(() => resolve("stuck"), 500)),
      ]);
      expect(res).not.toBe("stuck");
      const response = res as Response;
      expect(response.bodyUsed).toBe(false);
      expect(response.headers.get("x-frame-options")).toBe("SAMEORIGIN");
      if (immutable) expect(response).not.toBeInstanceOf(Locked);
      const pullsBeforeRead = pulls;
      const encoder = new TextEncoder();
      controller?.enqueue(encoder.encode("late "));
      controller?.enqueue(encoder.encode("chunks"));
      controller?.close();
      expect(await response.text()).toBe("late chunks");
      expect(pullsBeforeRead).toBeLessThanOrEqual(1); // only the stream's own start-up pull
    });
  }

  it("propagates what the downstream throws (the chain turns it into a 500)", async () => {
    const boom = new Error("boom");
    await expect(
      run(undefined, "http://app.test/", async () => {
        throw boom;
      }),
    ).rejects.toBe(boom);
  });
});
