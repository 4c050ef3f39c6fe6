import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "../core/errors.ts";
import { matchRedirectUri, redirectUriPolicy, redirectUriProblem } from "./redirect-uri.ts";

const WHERE = "agentAuth: authorizationCode: redirectUris";

describe("redirectUriPolicy", () => {
  it("takes named single-label schemes and localhostAnyPort", () => {
    const policy = redirectUriPolicy(WHERE, {
      privateUseSchemes: ["cursor", "my-app", "x+y"],
      localhostAnyPort: true,
    });
    expect([...policy.privateUseSchemes]).toEqual(["cursor", "my-app", "x+y"]);
    expect(policy.localhostAnyPort).toBe(true);
    expect(redirectUriPolicy(WHERE, undefined).privateUseSchemes.size).toBe(0);
    expect(redirectUriPolicy(WHERE, {}).localhostAnyPort).toBe(false);
  });

  it.each([
    ["an http look-alike", ["https2"]],
    ["http itself", ["http"]],
    ["a scheme of the web", ["wss"]],
    ["ftp", ["ftp"]],
    ["a scheme that runs code", ["javascript"]],
    ["one that reads local content", ["file"]],
    ["a reversed domain name (accepted already)", ["com.example.app"]],
    ["upper case", ["Cursor"]],
    ["a scheme with a colon", ["cursor:"]],
    ["an empty name", [""]],
    ["a name that is no string", [42]],
    ["a name too long", ["a".repeat(65)]],
    ["more than 20", Array.from({ length: 21 }, (_, i) => `app${i}`)],
    ["no list", "cursor"],
  ])("refuses %s in privateUseSchemes", (_name, schemes) => {
    expect(() =>
      redirectUriPolicy(WHERE, { privateUseSchemes: schemes as readonly string[] }),
    ).toThrow(InvalidOptionsError);
  });

  it("refuses a misspelt key and a localhostAnyPort that is no boolean", () => {
    expect(() => redirectUriPolicy(WHERE, { localhostAnyPorts: true } as never)).toThrow(
      /localhostAnyPorts/,
    );
    expect(() => redirectUriPolicy(WHERE, { localhostAnyPort: "yes" } as never)).toThrow(
      /localhostAnyPort must be a boolean/,
    );
    expect(() => redirectUriPolicy(WHERE, null as never)).toThrow(InvalidOptionsError);
  });
});

describe("redirectUriProblem under a policy", () => {
  const cursor = redirectUriPolicy(WHERE, { privateUseSchemes: ["cursor"] });
  const ok = (uri: string, policy?: Parameters<typeof redirectUriProblem>[1]) =>
    redirectUriProblem(uri, policy) === undefined;
  it.each([
    // uri, by default, naming cursor, registrable
    ["cursor://anysphere.cursor-retrieval/oauth/callback", false, true, true],
    ["com.example.app:/callback", true, true, true],
    ["myapp:/callback", false, false, true],
    ["https2://evil.example/cb", false, false, false],
    ["ws://127.0.0.1/cb", false, false, false],
    ["javascript:alert(1)", false, false, false],
    ["http://evil.example/cb", false, false, false],
  ])(
    "%s: by default %s, naming cursor %s, registrable %s",
    (uri, byDefault, named, registrable) => {
      expect(ok(uri)).toBe(byDefault);
      expect(ok(uri, cursor)).toBe(named);
      expect(ok(uri, "registrable")).toBe(registrable);
    },
  );
});

describe("matchRedirectUri", () => {
  const anyPort = redirectUriPolicy(WHERE, { localhostAnyPort: true });
  const registered = ["http://localhost:7777/callback", "http://127.0.0.1/cb"];

  it("frees localhost's port only when the policy says so", () => {
    expect(matchRedirectUri(registered, "http://localhost:7777/callback")).toBe(registered[0]);
    expect(matchRedirectUri(registered, "http://localhost:8888/callback")).toBeUndefined();
    expect(matchRedirectUri(registered, "http://localhost:8888/callback", anyPort)).toBe(
      registered[0],
    );
    expect(matchRedirectUri(registered, "http://localhost/callback", anyPort)).toBe(registered[0]);
    // The loopback literals stay free of their port, and apart from localhost.
    expect(matchRedirectUri(registered, "http://127.0.0.1:5555/cb")).toBe(registered[1]);
    expect(matchRedirectUri(registered, "http://localhost:5555/cb", anyPort)).toBeUndefined();
    for (const other of [
      "http://localhost:8888/callback/x",
      "http://localhost:8888\\x/callback",
      "http://LOCALHOST:8888/callback",
      "https://localhost:8888/callback",
    ])
      expect(matchRedirectUri(registered, other, anyPort)).toBeUndefined();
  });

  it("never matches a registered URI the policy refuses", () => {
    const native = ["myapp:/callback"];
    expect(matchRedirectUri(native, "myapp:/callback")).toBeUndefined();
    const named = redirectUriPolicy(WHERE, { privateUseSchemes: ["myapp"] });
    expect(matchRedirectUri(native, "myapp:/callback", named)).toBe("myapp:/callback");
  });
});
