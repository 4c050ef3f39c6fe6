import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "./errors.ts";
import { httpsUrlOption, isHttpsOrLoopback, issuerUrlOption } from "./url.ts";

describe("the https-URL rule", () => {
  it("takes https anywhere and http only on loopback", () => {
    for (const ok of [
      "https://a.example/",
      "http://localhost:3000/",
      "http://127.0.0.1/",
      "http://[::1]/",
    ])
      expect(isHttpsOrLoopback(new URL(ok)), ok).toBe(true);
    for (const bad of ["http://a.example/", "http://localhost.a.example/", "ftp://localhost/"])
      expect(isHttpsOrLoopback(new URL(bad)), bad).toBe(false);
  });

  it("refuses, naming the option, what may not be published", () => {
    expect(() => httpsUrlOption("x: url", "/relative")).toThrow(/^x: url must be an absolute URL/);
    expect(() => httpsUrlOption("x: url", "http://a.example/")).toThrow(/^x: url must use https/);
    expect(() => httpsUrlOption("x: url", "https://u:p@a.example/")).toThrow(InvalidOptionsError);
    expect(() => httpsUrlOption("x: url", "https://a.example/#f")).toThrow(/no fragment/);
    expect(httpsUrlOption("x: url", "https://A.example")).toBe("https://a.example/");
    expect(() => issuerUrlOption("x", "https://a.example/?q")).toThrow(
      /^x: issuer must have no query/,
    );
  });
});
