/** The device flow's pieces check their options when built, naming the key the caller wrote. */
import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "../src/core/index.ts";
import {
  authorizationServer,
  DeviceAuthorizationService,
  MemoryAuthorizationCodeStore,
  MemoryClientStore,
  MemoryRefreshTokenStore,
} from "../src/oauth2/index.ts";

const verificationUri = "https://api.example/device";

function message(build: () => unknown): string {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionsError);
    return (error as Error).message;
  }
  throw new Error("built");
}

describe("DeviceAuthorizationService options", () => {
  it("refuses a wrong-code store without its methods when built, not on the first entry", () => {
    expect(
      message(
        () =>
          new DeviceAuthorizationService({
            verificationUri,
            userCodeAttempts: { store: {} as never },
          }),
      ),
    ).toMatch(/^DeviceAuthorizationService: userCodeAttempts: store must implement/);
  });

  it("names itself for a verificationUri that is not https", () => {
    expect(
      message(() => new DeviceAuthorizationService({ verificationUri: "http://api.example/d" })),
    ).toMatch(/^DeviceAuthorizationService: verificationUri must use https/);
  });

  it.each([
    [{ lifetimeSeconds: 0 }, /^DeviceAuthorizationService: lifetimeSeconds /],
    [
      { userCodeAttempts: { windowMs: 10 } },
      /^DeviceAuthorizationService: userCodeAttempts\.windowMs /,
    ],
    [{ now: 5 }, /^DeviceAuthorizationService: now must be a function/],
  ])("%j", (bad, expected) => {
    expect(
      message(() => new DeviceAuthorizationService({ verificationUri, ...bad } as never)),
    ).toMatch(expected);
  });
});

describe("authorizationServer options", () => {
  const base = {
    issuer: "https://api.example",
    service: new DeviceAuthorizationService({ verificationUri }),
    clients: new MemoryClientStore(),
    scopes: ["read"],
    issueAccessToken: async () => ({ accessToken: "t", expiresIn: 60 }),
  };
  const codeGrant = {
    codes: new MemoryAuthorizationCodeStore(),
    refreshTokens: new MemoryRefreshTokenStore(),
    issue: async () => ({ accessToken: "t", expiresIn: 60 }),
    revokeGrant: async () => {},
  };

  it.each([
    [{ paths: { token: "token" } }, /^authorizationServer: paths\.token must be an absolute path/],
    [{ paths: { token: "/oauth/device_authorization" } }, /two endpoints share a path/],
    [
      { maxBodyBytes: 100 },
      /^authorizationServer: maxBodyBytes must be a whole number, 512 or more/,
    ],
    [{ issuer: "https://api.example/?x=1" }, /^authorizationServer: issuer must have no query/],
    [{ clientCredentials: "yes" }, /^authorizationServer: clientCredentials must be a function/],
    [
      { protectedResources: "https://api.example/run" },
      /^authorizationServer: protectedResources must be an array of URLs/,
    ],
    [
      { protectedResources: ["https://api.example/run", "http://api.example/run"] },
      /^authorizationServer: protectedResources\[1\] must use https/,
    ],
    [
      { protectedResources: ["/run"] },
      /^authorizationServer: protectedResources\[0\] must be an absolute URL/,
    ],
    // The flag of old: the documents are read by the server now, so it needs the resolver.
    [
      { authorizationCode: { ...codeGrant, clientMetadataDocuments: true } },
      /^authorizationServer: authorizationCode: clientMetadataDocuments must come from clientMetadataDocuments\(\)/,
    ],
    [
      {
        authorizationCode: {
          ...codeGrant,
          clientMetadataDocuments: { resolve: async () => ({}) },
        },
      },
      /clientMetadataDocuments must come from clientMetadataDocuments\(\)/,
    ],
  ])("%j", (bad, expected) => {
    expect(message(() => authorizationServer({ ...base, ...bad } as never))).toMatch(expected);
  });
});
