import { describe, expect, it } from "vitest";
import {
  addChallenge,
  challenge,
  DEFAULT_CHALLENGE,
  forbiddenResponse,
  quotedString,
  unauthorizedResponse,
} from "./challenge.ts";
import { problemResponse } from "./problem.ts";

describe("problemResponse", () => {
  it("answers RFC 9457 problem details that cannot be cached", async () => {
    const response = problemResponse(400, { detail: "The request path is not acceptable." });
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(response.headers.get("cache-control")).toBe("no-store");
    await expect(response.json()).resolves.toEqual({
      type: "about:blank",
      title: "Bad Request",
      status: 400,
      detail: "The request path is not acceptable.",
    });
  });

  it("keeps a cache-control header the caller chose", () => {
    const response = problemResponse(429, { headers: { "cache-control": "private" } });
    expect(response.headers.get("cache-control")).toBe("private");
  });
});

describe("unauthorizedResponse", () => {
  it("offers the default challenge when no authenticator registered one", async () => {
    const response = unauthorizedResponse(new Request("http://h/"));
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe(DEFAULT_CHALLENGE);
    await expect(response.json()).resolves.toEqual({
      type: "about:blank",
      title: "Unauthorized",
      status: 401,
    });
  });

  it("offers every registered challenge once, in registration order", () => {
    const request = new Request("http://h/");
    addChallenge(request, 'Basic realm="a"');
    addChallenge(request, 'Bearer realm="b"');
    addChallenge(request, 'Basic realm="a"');
    const response = unauthorizedResponse(request);
    expect(response.headers.get("www-authenticate")).toBe('Basic realm="a", Bearer realm="b"');
  });
});

describe("forbiddenResponse", () => {
  it("answers 403 problem details without a challenge", async () => {
    const response = forbiddenResponse();
    expect(response.status).toBe(403);
    expect(response.headers.has("www-authenticate")).toBe(false);
    await expect(response.json()).resolves.toEqual({
      type: "about:blank",
      title: "Forbidden",
      status: 403,
    });
  });
});

describe("quotedString", () => {
  it("escapes quotes and backslashes", () => {
    expect(quotedString('a "b" \\ c')).toBe('"a \\"b\\" \\\\ c"');
  });

  it("allows a horizontal tab", () => {
    expect(quotedString("a\tb")).toBe('"a\tb"');
  });

  it.each(["a\rb", "a\nb", "a\u0000b", "a\u007fb"])("rejects control characters (%j)", (value) => {
    expect(() => quotedString(value)).toThrow(TypeError);
  });
});

describe("challenge", () => {
  it("writes the scheme, then each param with a value, in order, quoted", () => {
    expect(challenge("DPoP", { error: undefined, algs: "ES256 EdDSA", scope: 'a "b"' })).toBe(
      'DPoP algs="ES256 EdDSA", scope="a \\"b\\""',
    );
    expect(challenge("Bearer", { error: "insufficient_scope", scope: "x" })).toBe(
      'Bearer error="insufficient_scope", scope="x"',
    );
  });

  it("is the scheme alone without params", () => {
    expect(challenge("Bearer")).toBe("Bearer");
    expect(challenge("Bearer", { error: undefined })).toBe("Bearer");
  });

  it("refuses a value no quoted-string may carry", () => {
    expect(() => challenge("Basic", { realm: "a\r\nSet-Cookie: x" })).toThrow(TypeError);
  });
});
