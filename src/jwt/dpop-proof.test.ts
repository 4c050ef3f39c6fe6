/**
 * DPoP proofs (RFC 9449 §4.3): proofs the `dpop` package makes pass, and every
 * proof that breaks one rule is refused, with the reason of the rule it broke.
 */
import * as dpop from "dpop";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { base64url } from "../core/encoding.ts";
import {
  DpopNonceRequiredError,
  DpopProofInvalidError,
  InvalidOptionsError,
} from "../core/errors.ts";
import { dpopNonces } from "./dpop-nonce.ts";
import { type DpopProofVerifierOptions, dpopProofVerifier } from "./dpop-proof.ts";

const URL_ = "https://api.example/capability/execute";
const TOKEN = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl";
const SECRET = "a-nonce-secret-of-at-least-32-characters";

let es256: dpop.KeyPair;
let ed25519: dpop.KeyPair;
let other: dpop.KeyPair;

beforeAll(async () => {
  es256 = await dpop.generateKeyPair("ES256", { extractable: true });
  ed25519 = await dpop.generateKeyPair("Ed25519");
  other = await dpop.generateKeyPair("ES256");
});

const text = new TextEncoder();
const segment = (value: unknown) => base64url(text.encode(JSON.stringify(value)));
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Signs any header and payload, however wrong, with a raw ES256 Web Crypto call. */
async function forge(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  key: CryptoKey = es256.privateKey,
): Promise<string> {
  const input = `${segment(header)}.${segment(payload)}`;
  const signature = await crypto.subtle.sign(
    { name: "ECDSA", hash: "SHA-256" },
    key,
    text.encode(input),
  );
  return `${input}.${base64url(new Uint8Array(signature))}`;
}

async function goodHeader(): Promise<Record<string, unknown>> {
  const { kty, crv, x, y } = await exportJWK(es256.publicKey);
  return { typ: "dpop+jwt", alg: "ES256", jwk: { kty, crv, x, y } };
}

function goodPayload(): Record<string, unknown> {
  return { jti: crypto.randomUUID(), htm: "POST", htu: URL_, iat: nowSeconds() };
}

const expected = { method: "POST", url: URL_ };

async function refusal(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("the proof was accepted");
}

async function refusedFor(
  proof: string | Promise<string>,
  reason: string,
  options: DpopProofVerifierOptions = {},
  expectation: Parameters<ReturnType<typeof dpopProofVerifier>>[1] = expected,
) {
  const error = await refusal(dpopProofVerifier(options)(await proof, expectation));
  expect(error).toBeInstanceOf(DpopProofInvalidError);
  expect((error as DpopProofInvalidError).code).toBe("ERR_DPOP_PROOF_INVALID");
  expect((error as DpopProofInvalidError).reason).toBe(reason);
}

describe("dpopProofVerifier accepts", () => {
  it("an ES256 proof from the dpop package, with its key's RFC 7638 thumbprint", async () => {
    const proof = await dpop.generateProof(es256, URL_, "POST");
    const verified = await dpopProofVerifier()(proof, expected);
    expect(verified.jkt).toBe(await dpop.calculateThumbprint(es256.publicKey));
    expect(verified.alg).toBe("ES256");
    expect(verified.jti.length).toBeGreaterThanOrEqual(16);
  });

  it('an Ed25519 proof signed with alg "Ed25519" when "EdDSA" is allowed, and alg "EdDSA"', async () => {
    const proof = await dpop.generateProof(ed25519, URL_, "POST");
    expect(JSON.parse(atob(proof.split(".")[0] as string)).alg).toBe("Ed25519");
    const verify = dpopProofVerifier({ algorithms: ["EdDSA"] });
    expect((await verify(proof, expected)).jkt).toBe(
      await dpop.calculateThumbprint(ed25519.publicKey),
    );
    const pair = await generateKeyPair("EdDSA");
    const jwk = await exportJWK(pair.publicKey);
    const eddsa = await new SignJWT({ jti: crypto.randomUUID(), htm: "POST", htu: URL_ })
      .setIssuedAt()
      .setProtectedHeader({ alg: "EdDSA", typ: "dpop+jwt", jwk })
      .sign(pair.privateKey);
    expect((await verify(eddsa, expected)).alg).toBe("EdDSA");
  });

  it("an htu with query and fragment, or another spelling of the same URL", async () => {
    const verify = dpopProofVerifier();
    for (const htu of [
      `${URL_}?a=1#frag`,
      "HTTPS://API.EXAMPLE:443/capability/execute",
      "https://api.example/capability/x/../execute",
    ])
      await verify(await dpop.generateProof(es256, htu, "POST"), expected);
    await verify(await dpop.generateProof(es256, URL_, "POST"), {
      ...expected,
      url: `${URL_}?ignored=1`,
    });
  });

  it("a proof carrying the token's hash and the token's key", async () => {
    const proof = await dpop.generateProof(es256, URL_, "POST", undefined, TOKEN);
    const jkt = await dpop.calculateThumbprint(es256.publicKey);
    await dpopProofVerifier()(proof, { ...expected, accessToken: TOKEN, jkt });
  });
});

describe("dpopProofVerifier refuses", () => {
  it("another method or another URL", async () => {
    await refusedFor(dpop.generateProof(es256, URL_, "GET"), "htm");
    await refusedFor(dpop.generateProof(es256, URL_, "post"), "htm");
    await refusedFor(dpop.generateProof(es256, "https://api.example/other", "POST"), "htu");
    await refusedFor(
      dpop.generateProof(es256, "http://api.example/capability/execute", "POST"),
      "htu",
    );
    await refusedFor(
      dpop.generateProof(es256, "https://api.example:8443/capability/execute", "POST"),
      "htu",
    );
    await refusedFor(forge(await goodHeader(), { ...goodPayload(), htu: "not a url" }), "htu");
  });

  it("a proof without ath, or for another token, when a token is presented", async () => {
    const exp = { ...expected, accessToken: TOKEN };
    await refusedFor(dpop.generateProof(es256, URL_, "POST"), "ath", {}, exp);
    await refusedFor(
      dpop.generateProof(es256, URL_, "POST", undefined, `${TOKEN}x`),
      "ath",
      {},
      exp,
    );
  });

  it("a proof by another key than the token's", async () => {
    const jkt = await dpop.calculateThumbprint(es256.publicKey);
    await refusedFor(
      dpop.generateProof(other, URL_, "POST", undefined, TOKEN),
      "jkt",
      {},
      {
        ...expected,
        accessToken: TOKEN,
        jkt,
      },
    );
  });

  it("an iat older than the window, or in the future beyond the tolerance", async () => {
    const verify = { maxAgeSeconds: 60, clockToleranceSeconds: 5 };
    await refusedFor(
      forge(await goodHeader(), { ...goodPayload(), iat: nowSeconds() - 67 }),
      "iat",
      verify,
    );
    await refusedFor(
      forge(await goodHeader(), { ...goodPayload(), iat: nowSeconds() + 7 }),
      "iat",
      verify,
    );
    await refusedFor(forge(await goodHeader(), { ...goodPayload(), iat: "now" }), "claims", verify);
    await refusedFor(
      forge(await goodHeader(), { ...goodPayload(), iat: undefined }),
      "claims",
      verify,
    );
    // Just inside both edges.
    const ok = dpopProofVerifier(verify);
    await ok(
      await forge(await goodHeader(), { ...goodPayload(), iat: nowSeconds() - 63 }),
      expected,
    );
    await ok(
      await forge(await goodHeader(), { ...goodPayload(), iat: nowSeconds() + 4 }),
      expected,
    );
  });

  it("a jti shorter than 16 or longer than 256 characters, or none", async () => {
    await refusedFor(
      forge(await goodHeader(), { ...goodPayload(), jti: "short-jti-15chr" }),
      "claims",
    );
    await refusedFor(
      forge(await goodHeader(), { ...goodPayload(), jti: "j".repeat(257) }),
      "claims",
    );
    await refusedFor(forge(await goodHeader(), { ...goodPayload(), jti: undefined }), "claims");
  });

  it("a private key in the header", async () => {
    const { d } = await exportJWK(es256.privateKey);
    await refusedFor(
      forge(
        { ...(await goodHeader()), jwk: { ...((await goodHeader()).jwk as object), d } },
        goodPayload(),
      ),
      "key",
    );
    await refusedFor(
      forge(
        { ...(await goodHeader()), jwk: { ...((await goodHeader()).jwk as object), k: "AAAA" } },
        goodPayload(),
      ),
      "key",
    );
  });

  it("alg none, HS256, an algorithm not configured, and a key of another type", async () => {
    const payload = segment(goodPayload());
    const none = `${segment({ ...(await goodHeader()), alg: "none" })}.${payload}.AAAA`;
    await refusedFor(none, "header");
    const secret = text.encode("a".repeat(32));
    const hs = await new SignJWT(goodPayload())
      .setProtectedHeader({
        alg: "HS256",
        typ: "dpop+jwt",
        jwk: { kty: "oct", k: "YWFh" } as never,
      })
      .sign(secret);
    await refusedFor(hs, "header");
    await refusedFor(dpop.generateProof(ed25519, URL_, "POST"), "header", {
      algorithms: ["ES256"],
    });
    const { kty, crv, x } = await exportJWK(ed25519.publicKey);
    await refusedFor(
      forge({ ...(await goodHeader()), jwk: { kty, crv, x } }, goodPayload()),
      "key",
    );
  });

  it("a typ other than dpop+jwt", async () => {
    await refusedFor(forge({ ...(await goodHeader()), typ: "jwt" }, goodPayload()), "header");
    await refusedFor(forge({ ...(await goodHeader()), typ: "DPoP+JWT" }, goodPayload()), "header");
    await refusedFor(forge({ ...(await goodHeader()), typ: undefined }, goodPayload()), "header");
  });

  it("a key by reference (jku, x5u, x5c, kid only) and an unknown crit", async () => {
    const header = await goodHeader();
    await refusedFor(
      forge({ ...header, jku: "https://evil.example/jwks" }, goodPayload()),
      "header",
    );
    await refusedFor(
      forge({ ...header, x5u: "https://evil.example/cert" }, goodPayload()),
      "header",
    );
    await refusedFor(forge({ ...header, x5c: ["AAAA"] }, goodPayload()), "header");
    await refusedFor(forge({ ...header, crit: ["exp"], exp: 1 }, goodPayload()), "header");
    await refusedFor(forge({ typ: "dpop+jwt", alg: "ES256", kid: "k1" }, goodPayload()), "key");
  });

  it("a bad signature, a proof that is not a compact JWS, and one over 4096 bytes", async () => {
    const proof = await dpop.generateProof(es256, URL_, "POST");
    const [h, p] = proof.split(".");
    const forged = await forge(await goodHeader(), goodPayload(), other.privateKey);
    await refusedFor(forged, "signature");
    await refusedFor(`${h}.${p}`, "malformed");
    await refusedFor(`${h}.${p}.sig.extra`, "malformed");
    await refusedFor("a".repeat(5000), "too_large");
    const padded = forge(await goodHeader(), { ...goodPayload(), pad: "x".repeat(3000) });
    await refusedFor(padded, "too_large");
  });

  it("every failure of the library below as the one error (TypeErrors included)", async () => {
    // A malformed EC point: jose's import throws; it surfaces as a refused proof.
    const header = await goodHeader();
    const bad = { ...(header.jwk as object), x: "AAAA" };
    await refusedFor(forge({ ...header, jwk: bad }, goodPayload()), "malformed");
    const rsa = { typ: "dpop+jwt", alg: "RS256", jwk: { kty: "RSA", n: "AQAB", e: "AQAB" } };
    await refusedFor(forge(rsa, goodPayload()), "malformed", { algorithms: ["RS256"] });
  });
});

describe("nonces", () => {
  const verifier = (t = Date.now, requireNonce = true) =>
    dpopProofVerifier({ nonces: dpopNonces({ secret: SECRET, now: t }), requireNonce, now: t });

  it("accept the current and the previous slot's nonce, from any instance sharing the secret", async () => {
    const issuing = dpopNonces({ secret: SECRET, rotateSeconds: 60 });
    const nonce = await issuing.current();
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{54}$/);
    expect(await issuing.current()).toBe(nonce);
    await verifier()(await dpop.generateProof(es256, URL_, "POST", nonce), expected);
    const later = () => Date.now() + 60_000;
    expect(await dpopNonces({ secret: SECRET, now: later }).check(nonce)).toBe(true);
  });

  it("refuse a missing, stale or forged nonce with DpopNonceRequiredError", async () => {
    const verify = verifier();
    const missing = await refusal(verify(await dpop.generateProof(es256, URL_, "POST"), expected));
    expect(missing).toBeInstanceOf(DpopNonceRequiredError);
    expect((missing as DpopNonceRequiredError).code).toBe("ERR_DPOP_NONCE_REQUIRED");
    const old = await dpopNonces({ secret: SECRET, now: () => Date.now() - 120_000 }).current();
    const otherSecret = await dpopNonces({ secret: `${SECRET}-other` }).current();
    const current = await dpopNonces({ secret: SECRET }).current();
    const tampered = `${current.slice(0, 20)}${current[20] === "A" ? "B" : "A"}${current.slice(21)}`;
    for (const nonce of [old, otherSecret, tampered, "short", "x".repeat(54)]) {
      const error = await refusal(
        verify(await dpop.generateProof(es256, URL_, "POST", nonce), expected),
      );
      expect(error, nonce).toBeInstanceOf(DpopNonceRequiredError);
    }
  });

  it("are checked when carried even if not required; a proof too old without one is sent for one", async () => {
    const verify = verifier(Date.now, false);
    await verify(await dpop.generateProof(es256, URL_, "POST"), expected);
    const forged = await dpop.generateProof(es256, URL_, "POST", "x".repeat(54));
    expect(await refusal(verify(forged, expected))).toBeInstanceOf(DpopNonceRequiredError);
    const stale = await forge(await goodHeader(), { ...goodPayload(), iat: nowSeconds() - 600 });
    expect(await refusal(verify(stale, expected))).toBeInstanceOf(DpopNonceRequiredError);
    // Without nonces, a carried nonce is one this server never issued.
    await refusedFor(dpop.generateProof(es256, URL_, "POST", "x".repeat(54)), "claims");
  });
});

describe("options", () => {
  it("refuse unknown keys, symmetric and none algorithms, and bad bounds when built", () => {
    expect(() => dpopProofVerifier({ algoritms: ["ES256"] } as never)).toThrow(/algoritms/);
    for (const algorithms of [["HS256"], ["none"], [], "ES256"])
      expect(() => dpopProofVerifier({ algorithms } as never)).toThrow(InvalidOptionsError);
    expect(() => dpopProofVerifier({ maxAgeSeconds: 0 })).toThrow(InvalidOptionsError);
    expect(() => dpopProofVerifier({ clockToleranceSeconds: 31 })).toThrow(InvalidOptionsError);
    expect(() => dpopProofVerifier({ requireNonce: true })).toThrow(/needs nonces/);
    expect(() => dpopNonces({ secret: "short" })).toThrow(InvalidOptionsError);
    expect(() => dpopNonces({ secret: SECRET, rotateSecond: 5 } as never)).toThrow(/rotateSecond/);
  });
});
