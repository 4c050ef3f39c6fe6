import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "../src/core/errors.ts";
import { parseOrigin, serializedOriginOf } from "../src/core/origin.ts";
import { cors } from "../src/cors/cors.ts";
import { csrf } from "../src/csrf/csrf.ts";

// One table for every leg that takes origins: they must agree on each entry.
const accepted: Array<[string, string]> = [
  ["https://app.example.com", "https://app.example.com"],
  ["https://app.example.com/", "https://app.example.com"],
  ["HTTPS://App.Example.com", "https://app.example.com"],
  ["http://localhost:3000", "http://localhost:3000"],
  ["http://127.0.0.1:8080/", "http://127.0.0.1:8080"],
  ["https://[::1]:8443", "https://[::1]:8443"],
];
const refused = [
  "https://app.example.com/app",
  "https://app.example.com//",
  "https://app.example.com?x",
  "https://app.example.com#x",
  "https://app.example.com:443",
  "http://app.example.com:80",
  "https://user@app.example.com",
  "https://*.example.com",
  "ftp://app.example.com",
  "app.example.com",
  "null",
  "",
  "https://app example.com",
];

describe("one origin parser for cors and csrf", () => {
  it.each(accepted)("accepts %s as %s in both legs", (value, serialized) => {
    expect(parseOrigin("test", value)).toBe(serialized);
    expect(() => cors({ origin: value })).not.toThrow();
    expect(() => csrf({ trustedOrigins: [value] })).not.toThrow();
  });

  it.each(refused)("refuses %s in both legs, when built", (value) => {
    expect(serializedOriginOf(value)).toBeUndefined();
    expect(() => cors({ origin: value })).toThrow(InvalidOptionsError);
    expect(() => csrf({ trustedOrigins: [value] })).toThrow(InvalidOptionsError);
  });

  it("matches a browser's Origin against an origin configured with a trailing slash", async () => {
    const ok = async () => new Response("ok");
    const origin = "https://app.example.com";
    const allowCors = cors({ origin: `${origin}/` })(ok);
    const fromApp = await allowCors(
      new Request("https://api.example.com/x", { headers: { origin } }),
    );
    expect(fromApp.headers.get("access-control-allow-origin")).toBe(origin);

    const guarded = csrf({ trustedOrigins: [`${origin}/`] })(ok);
    const post = (from: string) =>
      guarded(
        new Request("https://api.example.com/x", {
          method: "POST",
          headers: { origin: from, "sec-fetch-site": "same-site" },
        }),
      );
    expect((await post(origin)).status).toBe(200);
    expect((await post("https://evil.example.com")).status).toBe(403);
  });
});
