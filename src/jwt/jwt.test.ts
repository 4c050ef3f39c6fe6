import { exportJWK, exportPKCS8, exportSPKI, generateKeyPair, jwtVerify, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { base64url } from "../core/encoding.ts";
import { InvalidOptionsError, JwtInvalidError } from "../core/errors.ts";
import { generateKeySet, importKeySet, type KeySet } from "./keys.ts";
import { jwtSigner } from "./sign.ts";
import { jwtVerifier } from "./verify.ts";

const ISSUER = "https://issuer.test";
const TYP = "example-capability+jwt";
const AUD = "https://issuer.test/capability/execute";

let pair: Awaited<ReturnType<typeof generateKeyPair>>;
let keys: KeySet;

beforeAll(async () => {
  pair = await generateKeyPair("EdDSA", { extractable: true });
  keys = await importKeySet({
    keys: [{ kid: "k1", alg: "EdDSA", privateKey: pair.privateKey, publicKey: pair.publicKey }],
  });
});

const text = new TextEncoder();
const segment = (value: unknown) => base64url(text.encode(JSON.stringify(value)));

/** Signs any header and payload, however wrong, with a raw Web Crypto call. */
async function forge(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  key: CryptoKey = pair.privateKey,
): Promise<string> {
  const input = `${segment(header)}.${segment(payload)}`;
  const signature = await crypto.subtle.sign("Ed25519", key, text.encode(input));
  return `${input}.${base64url(new Uint8Array(signature))}`;
}

function claims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: ISSUER,
    sub: "agent-1",
    aud: AUD,
    iat: now,
    exp: now + 60,
    jti: "j1",
    ...overrides,
  };
}

const goodHeader = { alg: "EdDSA", typ: TYP, kid: "k1" };

async function reason(token: unknown, verifier = jwtVerifier({ keys, typ: TYP, issuer: ISSUER })) {
  try {
    await verifier(token as string, { audience: AUD });
  } catch (error) {
    expect(error).toBeInstanceOf(JwtInvalidError);
    expect((error as JwtInvalidError).code).toBe("ERR_JWT_INVALID");
    return (error as JwtInvalidError).reason;
  }
  return "accepted";
}

describe("jwtSigner and jwtVerifier", () => {
  it("round-trips every required claim and the private ones", async () => {
    const sign = jwtSigner({ keys, typ: TYP, issuer: ISSUER, ttlSeconds: 90 });
    const signed = await sign({ subject: "agent-1", audience: AUD, claims: { scope: "a b" } });
    const verified = await jwtVerifier({ keys, typ: TYP, issuer: ISSUER })(signed.token, {
      audience: AUD,
    });
    expect(verified.claims).toMatchObject({ iss: ISSUER, sub: "agent-1", aud: AUD, scope: "a b" });
    expect(verified.claims.exp - verified.claims.iat).toBe(90);
    expect(verified.claims.jti).toBe(signed.jti);
    expect(signed.jti.length).toBeGreaterThanOrEqual(22); // 128 random bits
    expect(verified.kid).toBe("k1");
  });

  it("accepts a well-formed forged-by-us control token, so the refusals below are meaningful", async () => {
    expect(await reason(await forge(goodHeader, claims()))).toBe("accepted");
  });

  it("refuses a token signed by another key under the same kid", async () => {
    const other = await generateKeyPair("EdDSA");
    expect(await reason(await forge(goodHeader, claims(), other.privateKey))).toBe("signature");
  });

  it("refuses a tampered payload", async () => {
    const token = await forge(goodHeader, claims());
    const [h, , s] = token.split(".");
    expect(await reason(`${h}.${segment(claims({ sub: "admin" }))}.${s}`)).toBe("signature");
  });

  it("refuses alg none, with or without a signature", async () => {
    const unsigned = `${segment({ ...goodHeader, alg: "none" })}.${segment(claims())}`;
    expect(await reason(`${unsigned}.`)).toBe("malformed");
    expect(await reason(`${unsigned}.AAAA`)).toBe("header");
  });

  it("refuses a token re-signed with HS256 using the public key as the HMAC secret", async () => {
    const jwk = await exportJWK(pair.publicKey);
    for (const secret of [text.encode(JSON.stringify(jwk)), text.encode(jwk.x as string)]) {
      const hmac = await crypto.subtle.importKey(
        "raw",
        secret,
        { name: "HMAC", hash: "SHA-256" },
        false,
        ["sign"],
      );
      const input = `${segment({ ...goodHeader, alg: "HS256" })}.${segment(claims())}`;
      const mac = new Uint8Array(await crypto.subtle.sign("HMAC", hmac, text.encode(input)));
      expect(await reason(`${input}.${base64url(mac)}`)).toBe("header");
    }
  });

  it("refuses a token re-signed with another asymmetric algorithm", async () => {
    const es = await generateKeyPair("ES256");
    const token = await new SignJWT(claims())
      .setProtectedHeader({ alg: "ES256", typ: TYP, kid: "k1" })
      .sign(es.privateKey);
    expect(await reason(token)).toBe("header");
  });

  it("refuses embedded or remote keys and any crit, even when the signature holds", async () => {
    const jwk = await exportJWK(pair.publicKey);
    for (const extra of [
      { jwk },
      { jku: "https://attacker.test/jwks" },
      { x5u: "https://attacker.test/cert" },
      { x5c: ["MIIB"] },
      { crit: ["exp"], exp: 1 },
      { crit: ["urn:example:unknown"], "urn:example:unknown": true },
    ]) {
      expect(await reason(await forge({ ...goodHeader, ...extra }, claims()))).toBe("header");
    }
  });

  it("judges each token by its own header when one verifier sees many", async () => {
    const verifier = jwtVerifier({ keys, typ: TYP, issuer: ISSUER });
    const good = await forge(goodHeader, claims());
    const jwk = await exportJWK(pair.publicKey);
    for (const header of [
      { ...goodHeader, jwk },
      { ...goodHeader, typ: "JWT" },
      { ...goodHeader, kid: "k2" },
      { ...goodHeader, alg: "ES256" },
    ]) {
      expect(await reason(good, verifier)).toBe("accepted");
      expect(await reason(await forge(header, claims()), verifier)).not.toBe("accepted");
    }
    // A forged token reusing the good header's exact encoding still needs its own signature.
    const [encoded, , signature] = good.split(".");
    expect(
      await reason(`${encoded}.${segment(claims({ sub: "mallory" }))}.${signature}`, verifier),
    ).toBe("signature");
  });

  it("refuses an unknown or missing kid", async () => {
    expect(await reason(await forge({ ...goodHeader, kid: "k2" }, claims()))).toBe("unknown_key");
    const { kid: _kid, ...noKid } = goodHeader;
    expect(await reason(await forge(noKid, claims()))).toBe("unknown_key");
  });

  it("refuses a wrong or missing typ, including the generic JWT", async () => {
    expect(await reason(await forge({ ...goodHeader, typ: "JWT" }, claims()))).toBe("header");
    expect(await reason(await forge({ ...goodHeader, typ: "at+jwt" }, claims()))).toBe("header");
    expect(await reason(await forge({ ...goodHeader, typ: `application/${TYP}` }, claims()))).toBe(
      "header",
    );
    const { typ: _typ, ...noTyp } = goodHeader;
    expect(await reason(await forge(noTyp, claims()))).toBe("header");
  });

  it("refuses a wrong, multi-valued or missing aud", async () => {
    expect(await reason(await forge(goodHeader, claims({ aud: `${AUD}/other` })))).toBe("claims");
    expect(await reason(await forge(goodHeader, claims({ aud: [AUD] })))).toBe("claims");
    expect(await reason(await forge(goodHeader, claims({ aud: [AUD, "https://x.test"] })))).toBe(
      "claims",
    );
    expect(await reason(await forge(goodHeader, claims({ aud: undefined })))).toBe("claims");
  });

  it("refuses a wrong issuer and every missing required claim", async () => {
    expect(await reason(await forge(goodHeader, claims({ iss: "https://evil.test" })))).toBe(
      "claims",
    );
    for (const name of ["iss", "sub", "iat", "exp", "jti"]) {
      expect(await reason(await forge(goodHeader, claims({ [name]: undefined }))), name).toBe(
        "claims",
      );
    }
    expect(await reason(await forge(goodHeader, claims({ sub: "" })))).toBe("claims");
    expect(await reason(await forge(goodHeader, claims({ jti: 7 })))).not.toBe("accepted");
  });

  it("refuses an expired token beyond the tolerance and accepts one within it", async () => {
    const now = Math.floor(Date.now() / 1000);
    const verifier = jwtVerifier({ keys, typ: TYP, issuer: ISSUER, clockToleranceSeconds: 30 });
    expect(await reason(await forge(goodHeader, claims({ exp: now - 31 })), verifier)).toBe(
      "expired",
    );
    expect(await reason(await forge(goodHeader, claims({ exp: now - 20 })), verifier)).toBe(
      "accepted",
    );
  });

  it("refuses a token not yet valid or issued in the future", async () => {
    const now = Math.floor(Date.now() / 1000);
    expect(await reason(await forge(goodHeader, claims({ nbf: now + 60 })))).toBe("not_yet_valid");
    expect(
      await reason(await forge(goodHeader, claims({ iat: now + 60, exp: now + 120 }))),
    ).not.toBe("accepted");
    const lenient = jwtVerifier({ keys, typ: TYP, issuer: ISSUER, clockToleranceSeconds: 30 });
    expect(
      await reason(await forge(goodHeader, claims({ iat: now + 20, exp: now + 80 })), lenient),
    ).toBe("accepted");
    expect(
      await reason(await forge(goodHeader, claims({ iat: now + 45, exp: now + 80 })), lenient),
    ).toBe("claims");
  });

  it("refuses an oversized token before parsing it", async () => {
    const verifier = jwtVerifier({ keys, typ: TYP, issuer: ISSUER, maxTokenLength: 512 });
    const big = await forge(goodHeader, claims({ pad: "x".repeat(600) }));
    expect(await reason(big, verifier)).toBe("too_large");
    expect(await reason(`${"A".repeat(600)}.B.C`, verifier)).toBe("too_large");
  });

  it("maps every malformed input to the one typed error", async () => {
    const good = await forge(goodHeader, claims());
    const [h, p, s] = good.split(".") as [string, string, string];
    for (const token of [
      "",
      "a.b",
      "a.b.c.d",
      `${h}.${p}`,
      `${h}..${s}`,
      `!!!.${p}.${s}`,
      `${base64url(text.encode("not json"))}.${p}.${s}`,
      `${segment([1, 2])}.${p}.${s}`,
      `${segment("str")}.${p}.${s}`,
      `${base64url(new Uint8Array([0xff, 0xfe]))}.${p}.${s}`,
      `${h}.${base64url(text.encode("not json"))}.${s}`,
      `${h}.${p}.${s}x`,
      `${h} .${p}.${s}`,
      42,
      null,
      undefined,
      {},
    ]) {
      expect(await reason(token), String(token)).not.toBe("accepted");
    }
    expect(await reason(await forge(goodHeader, claims({ exp: "soon" })))).not.toBe("accepted");
    expect(await reason(await forge(goodHeader, claims({ iat: Number.MAX_VALUE })))).not.toBe(
      "accepted",
    );
  });

  it("throws a TypeError, not a pass, when the caller forgets the audience", async () => {
    const verify = jwtVerifier({ keys, typ: TYP, issuer: ISSUER });
    const token = await forge(goodHeader, claims());
    await expect(verify(token, {} as { audience: string })).rejects.toThrow(TypeError);
  });
});

describe("keys", () => {
  it("rotates: the new key signs, the retired public key still verifies its tokens", async () => {
    const oldPair = await generateKeyPair("ES256", { extractable: true });
    const oldKeys = await importKeySet({
      keys: [
        { kid: "old", alg: "ES256", privateKey: oldPair.privateKey, publicKey: oldPair.publicKey },
      ],
    });
    const oldToken = (
      await jwtSigner({ keys: oldKeys, typ: TYP, issuer: ISSUER })({ subject: "a", audience: AUD })
    ).token;
    const rotated = await importKeySet({
      keys: [
        { kid: "new", alg: "EdDSA", privateKey: pair.privateKey, publicKey: pair.publicKey },
        { kid: "old", alg: "ES256", publicKey: await exportJWK(oldPair.publicKey) },
      ],
    });
    const newToken = (
      await jwtSigner({ keys: rotated, typ: TYP, issuer: ISSUER })({ subject: "a", audience: AUD })
    ).token;
    const verify = jwtVerifier({ keys: rotated, typ: TYP, issuer: ISSUER });
    expect((await verify(oldToken, { audience: AUD })).kid).toBe("old");
    expect((await verify(newToken, { audience: AUD })).kid).toBe("new");
    expect(rotated.jwks().keys.map((key) => [key.kid, key.alg, key.use])).toEqual([
      ["new", "EdDSA", "sig"],
      ["old", "ES256", "sig"],
    ]);
    for (const key of rotated.jwks().keys) expect(key).not.toHaveProperty("d");
  });

  it("imports JWK and PEM material and verifies with plain jose against the published JWKS", async () => {
    const es = await generateKeyPair("ES256", { extractable: true });
    const fromJwk = await importKeySet({
      keys: [{ kid: "jwk", alg: "ES256", privateKey: await exportJWK(es.privateKey) }],
    });
    const fromPem = await importKeySet({
      keys: [
        {
          kid: "pem",
          alg: "ES256",
          privateKey: await exportPKCS8(es.privateKey),
          publicKey: await exportSPKI(es.publicKey),
        },
      ],
    });
    for (const set of [fromJwk, fromPem]) {
      const { token } = await jwtSigner({ keys: set, typ: TYP, issuer: ISSUER })({
        subject: "a",
        audience: AUD,
      });
      const jwk = set.jwks().keys[0];
      expect(jwk).not.toHaveProperty("d");
      const { importJWK } = await import("jose");
      await expect(jwtVerify(token, await importJWK(jwk as never, "ES256"))).resolves.toBeTruthy();
    }
  });

  it("generates an EdDSA set by default and never lists HMAC secrets", async () => {
    const generated = await generateKeySet();
    expect(generated.signingKey?.alg).toBe("EdDSA");
    const hmac = await importKeySet({ keys: [{ kid: "h", alg: "HS256", secret: "s".repeat(32) }] });
    expect(hmac.jwks().keys).toEqual([]);
    const { token } = await jwtSigner({ keys: hmac, typ: TYP, issuer: ISSUER })({
      subject: "a",
      audience: AUD,
    });
    await expect(
      jwtVerifier({ keys: hmac, typ: TYP, issuer: ISSUER })(token, { audience: AUD }),
    ).resolves.toBeTruthy();
  });

  it("throws on unusable key configuration when imported", async () => {
    const bad: unknown[] = [
      {},
      { keys: [] },
      { keys: [{ kid: "a", alg: "none", secret: "x".repeat(32) }] },
      { keys: [{ kid: "a", alg: "HS256", secret: "short" }] },
      { keys: [{ kid: "a b", alg: "HS256", secret: "x".repeat(32) }] },
      { keys: [{ kid: "a", alg: "EdDSA" }] },
      { keys: [{ kid: "a", alg: "EdDSA", privateKey: pair.privateKey }] },
      {
        keys: [{ kid: "a", alg: "ES256", privateKey: pair.privateKey, publicKey: pair.publicKey }],
      },
      { keys: [{ kid: "a", alg: "EdDSA", publicKey: pair.privateKey }] },
      {
        keys: [{ kid: "a", alg: "EdDSA", publicKey: pair.publicKey, privatekey: pair.privateKey }],
      },
      {
        keys: [
          { kid: "a", alg: "HS256", secret: "x".repeat(32) },
          { kid: "a", alg: "HS256", secret: "y".repeat(32) },
        ],
      },
      { keys: [{ kid: "a", alg: "EdDSA", publicKey: pair.publicKey }], signingKid: "a" },
      { keys: [{ kid: "a", alg: "HS256", secret: "x".repeat(32) }], signingKid: "b" },
      { keys: [{ kid: "a", alg: "HS256", secret: "x".repeat(32) }], signingkid: "a" },
    ];
    for (const options of bad) {
      await expect(importKeySet(options as never), JSON.stringify(options)).rejects.toThrow(
        InvalidOptionsError,
      );
    }
  });

  it("throws on bad signer and verifier options when built", () => {
    const base = { keys, typ: TYP, issuer: ISSUER };
    for (const options of [
      { ...base, typ: "JWT" },
      { ...base, typ: "" },
      { ...base, issuer: "issuer" },
      { ...base, clockToleranceSeconds: 31 },
      { ...base, clockToleranceSeconds: -1 },
      { ...base, maxTokenLength: 10 },
      { ...base, audience: AUD },
    ]) {
      expect(() => jwtVerifier(options as never), JSON.stringify(options.typ)).toThrow(
        InvalidOptionsError,
      );
    }
    expect(() => jwtSigner({ ...base, ttlSeconds: 0 })).toThrow(InvalidOptionsError);
    expect(() => jwtSigner({ ...base, ttl: 5 } as never)).toThrow(InvalidOptionsError);
    expect(() => jwtSigner({ ...base, now: "x" } as never)).toThrow(InvalidOptionsError);
    expect(() => jwtVerifier({ ...base, now: 123 } as never)).toThrow(InvalidOptionsError);
  });

  it("keeps its own copy of an HMAC secret, whatever the caller does to its buffer", async () => {
    const secret = new Uint8Array(Buffer.from("k".repeat(32)));
    const node = Buffer.from("k".repeat(32)); // Buffer#slice is a view, not a copy
    for (const given of [secret, node]) {
      const set = await importKeySet({ keys: [{ kid: "h", alg: "HS256", secret: given }] });
      given.fill(0);
      const forged = await new SignJWT({ sub: "admin" })
        .setProtectedHeader({ alg: "HS256", kid: "h", typ: TYP })
        .setIssuer(ISSUER)
        .setAudience(AUD)
        .setIssuedAt()
        .setExpirationTime("1m")
        .sign(new Uint8Array(32));
      await expect(
        jwtVerifier({ keys: set, typ: TYP, issuer: ISSUER })(forged, { audience: AUD }),
      ).rejects.toMatchObject({ reason: "signature" });
    }
  });

  it("refuses short HMAC secrets per hash, small RSA keys and mismatched pairs when imported", async () => {
    // jose will not make one; Web Crypto will.
    const weak = (await crypto.subtle.generateKey(
      {
        name: "RSASSA-PKCS1-v1_5",
        modulusLength: 1024,
        publicExponent: new Uint8Array([1, 0, 1]),
        hash: "SHA-256",
      },
      true,
      ["sign", "verify"],
    )) as CryptoKeyPair;
    const other = await generateKeyPair("EdDSA", { extractable: true });
    for (const options of [
      { keys: [{ kid: "a", alg: "HS384", secret: "x".repeat(47) }] },
      { keys: [{ kid: "a", alg: "HS512", secret: "x".repeat(63) }] },
      {
        keys: [{ kid: "a", alg: "RS256", privateKey: weak.privateKey, publicKey: weak.publicKey }],
      },
      { keys: [{ kid: "a", alg: "RS256", publicKey: await exportSPKI(weak.publicKey) }] },
      {
        keys: [{ kid: "a", alg: "EdDSA", privateKey: pair.privateKey, publicKey: other.publicKey }],
      },
    ]) {
      await expect(importKeySet(options as never)).rejects.toThrow(InvalidOptionsError);
    }
    await expect(
      importKeySet({ keys: [{ kid: "a", alg: "HS512", secret: "x".repeat(64) }] }),
    ).resolves.toBeTruthy();
  });

  it("keeps the token's claims out of a failure's cause", async () => {
    const { token } = await jwtSigner({ keys, typ: TYP, issuer: ISSUER })({
      subject: "a",
      audience: AUD,
      claims: { ssn: "123-45-6789" },
    });
    const error = await jwtVerifier({ keys, typ: TYP, issuer: "https://other.example" })(token, {
      audience: AUD,
    }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(JwtInvalidError);
    const { inspect } = await import("node:util");
    expect(inspect(error, { depth: 5 })).not.toContain("123-45-6789");
  });
});
