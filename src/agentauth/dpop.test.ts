/**
 * DPoP settings are checked once, and capability tokens carry the key
 * binding (`cnf.jkt`) they are minted with, and no malformed one.
 */
import { describe, expect, it } from "vitest";
import { InvalidOptionsError, JwtInvalidError } from "../core/errors.ts";
import { generateKeySet } from "../jwt/keys.ts";
import { jwtSigner } from "../jwt/sign.ts";
import { dpopSettings } from "./dpop.ts";
import { CAPABILITY_TOKEN_TYPE, capabilityTokens } from "./token.ts";

const ISSUER = "https://agents.example";
const EXECUTE = `${ISSUER}/capability/execute`;
const JKT = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs";
const clock = { clockToleranceSeconds: 5, now: Date.now };

describe("dpopSettings", () => {
  it("defaults: ES256 and EdDSA (with Ed25519), not required, grants bound, 60 s, no nonces", () => {
    const settings = dpopSettings({}, clock);
    expect(settings.algorithms).toEqual(["ES256", "EdDSA", "Ed25519"]);
    expect(settings.required).toBe(false);
    expect(settings.bindGrant).toBe(true);
    expect(settings.proofMaxAgeSeconds).toBe(60);
    expect(settings.nonces).toBeUndefined();
  });

  it("refuses unknown keys, naming them, and bad values, when built", () => {
    expect(() => dpopSettings({ requried: true } as never, clock)).toThrow(/"requried"/);
    expect(() =>
      dpopSettings({ nonce: { secret: "s".repeat(32), rotateSecs: 5 } } as never, clock),
    ).toThrow(/dpop\.nonce.*"rotateSecs"/);
    for (const bad of [
      { algorithms: ["HS256"] },
      { algorithms: ["none"] },
      { algorithms: [] },
      { required: "yes" },
      { bindGrant: 1 },
      { proofMaxAgeSeconds: 0 },
      { proofMaxAgeSeconds: 301 },
      { nonce: { secret: "short" } },
      { nonce: { secret: "s".repeat(32), required: "true" } },
      { nonce: { secret: "s".repeat(32), rotateSeconds: 1 } },
      { nonce: "secret" },
    ])
      expect(() => dpopSettings(bad as never, clock), JSON.stringify(bad)).toThrow(
        InvalidOptionsError,
      );
    expect(() => dpopSettings(null as never, clock)).toThrow(InvalidOptionsError);
  });
});

describe("capability tokens bound to a key", () => {
  it("carry cnf.jkt when minted with jkt, and none otherwise", async () => {
    const tokens = capabilityTokens({
      keys: await generateKeySet(),
      issuer: ISSUER,
      executeUrl: EXECUTE,
    });
    const input = { principalId: "agent-1", grantId: "g-1", capabilities: ["a"] };
    const bound = await tokens.mint({ ...input, jkt: JKT });
    expect((await tokens.verify(bound.token, EXECUTE)).cnf).toEqual({ jkt: JKT });
    const plain = await tokens.mint(input);
    expect((await tokens.verify(plain.token, EXECUTE)).cnf).toBeUndefined();
    await expect(tokens.mint({ ...input, jkt: "not-a-thumbprint" })).rejects.toThrow(TypeError);
  });

  it("are refused when cnf is anything but one 43-character base64url jkt", async () => {
    const keys = await generateKeySet();
    const tokens = capabilityTokens({ keys, issuer: ISSUER, executeUrl: EXECUTE });
    const sign = jwtSigner({ keys, typ: CAPABILITY_TOKEN_TYPE, issuer: ISSUER, ttlSeconds: 60 });
    for (const cnf of [
      { jkt: `${JKT}=` },
      { jkt: JKT.slice(1) },
      { jkt: 42 },
      { jkt: JKT, x5t: "abc" },
      {},
      "jkt",
      null,
    ]) {
      const { token } = await sign({
        subject: "agent-1",
        audience: EXECUTE,
        claims: { client_id: "agent-1", grant_id: "g-1", capabilities: ["a"], scope: "a", cnf },
      });
      await expect(tokens.verify(token, EXECUTE), JSON.stringify(cnf)).rejects.toBeInstanceOf(
        JwtInvalidError,
      );
    }
  });
});
