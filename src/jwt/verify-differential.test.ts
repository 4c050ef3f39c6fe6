/**
 * The two signature engines, `node:crypto` and jose on Web Crypto, and the
 * verifier as it was built on jose's `jwtVerify` alone, given the same
 * thousands of tokens, good and bad, for every algorithm a KeySet takes: all
 * three must accept the same tokens and refuse the others for the same reason.
 */
import * as nodeCrypto from "node:crypto";
import { type CryptoKey, errors, generateKeyPair, type JWTPayload, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { base64url } from "../core/encoding.ts";
import { type JwtFailureReason, JwtInvalidError } from "../core/errors.ts";
import { compactJwsHeader } from "./checks.ts";
import { type ImportedKey, importKeySet, type JwtAlgorithm, type KeySet } from "./keys.ts";
import { type JwtVerifier, verifierOn } from "./verify.ts";

const ISSUER = "https://issuer.test";
const TYP = "example-capability+jwt";
const AUD = "https://issuer.test/capability/execute";
const NOW_MS = 1_700_000_000_500;
const NOW = Math.floor(NOW_MS / 1000);
const TOLERANCE = 5;
const MAX_LENGTH = 4096;
const ALGORITHMS: readonly JwtAlgorithm[] = [
  "EdDSA",
  "ES256",
  "ES384",
  "PS256",
  "RS256",
  "HS256",
  "HS384",
  "HS512",
];

const text = new TextEncoder();
const json = (value: unknown) => base64url(text.encode(JSON.stringify(value)));

/** The verifier as it was: jose's `jwtVerify`, then our own checks. */
function joseReference(keys: KeySet): JwtVerifier {
  const refused = ["jwk", "jku", "x5u", "x5c", "x5t", "x5t#S256", "crit", "b64", "zip"];
  const fail = (reason: JwtFailureReason, message: string): never => {
    throw new JwtInvalidError(reason, message);
  };
  return async (token, { audience }) => {
    if (typeof token !== "string") fail("malformed", "not a string");
    if (token.length > MAX_LENGTH) fail("too_large", "too long");
    const header = compactJwsHeader(token, (message) => fail("malformed", message));
    for (const name of refused) if (Object.hasOwn(header, name)) fail("header", name);
    if (header.typ !== TYP) fail("header", "typ");
    const key = typeof header.kid === "string" ? keys.key(header.kid) : undefined;
    if (key === undefined) return fail("unknown_key", "kid");
    if (header.alg !== key.alg) fail("header", "alg");
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, key.verifyKey as CryptoKey | Uint8Array, {
        algorithms: [key.alg],
        issuer: ISSUER,
        typ: TYP,
        clockTolerance: TOLERANCE,
        requiredClaims: ["iss", "sub", "aud", "iat", "exp", "jti"],
        currentDate: new Date(NOW_MS),
      }));
    } catch (error) {
      let reason: JwtFailureReason = "malformed";
      if (error instanceof errors.JWTExpired) reason = "expired";
      else if (error instanceof errors.JWSSignatureVerificationFailed) reason = "signature";
      else if (error instanceof errors.JWTClaimValidationFailed)
        reason = error.claim === "nbf" ? "not_yet_valid" : "claims";
      else if (
        error instanceof errors.JOSEAlgNotAllowed ||
        error instanceof errors.JOSENotSupported
      )
        reason = "header";
      throw new JwtInvalidError(reason, "failed", { cause: error });
    }
    if (typeof payload.aud !== "string" || payload.aud !== audience) fail("claims", "aud");
    if ((payload.iat as number) > NOW + TOLERANCE) fail("claims", "iat");
    if (typeof payload.sub !== "string" || payload.sub === "") fail("claims", "sub");
    if (typeof payload.jti !== "string" || payload.jti === "") fail("claims", "jti");
    return { claims: payload as never, kid: key.kid, alg: key.alg };
  };
}

/** A signer of raw signing inputs, however wrong, for one algorithm. */
interface Signer {
  readonly sign: (input: string) => Uint8Array;
  /** The same key's signature in another form: DER for ECDSA, another salt for PSS. */
  readonly variant?: (input: string) => Uint8Array;
}

async function keysFor(
  alg: JwtAlgorithm,
): Promise<{ keys: KeySet; signer: Signer; other: Signer }> {
  if (alg.startsWith("HS")) {
    const bytes = { HS256: 32, HS384: 48, HS512: 64 }[alg as "HS256"];
    const secret = nodeCrypto.randomBytes(bytes);
    const otherSecret = nodeCrypto.randomBytes(bytes);
    const hash = `sha${alg.slice(2)}`;
    const hmac = (key: Uint8Array) => (input: string) =>
      new Uint8Array(nodeCrypto.createHmac(hash, key).update(input).digest());
    const keys = await importKeySet({
      keys: [
        { kid: "k1", alg: alg as "HS256", secret },
        { kid: "k2", alg: "HS256", secret: nodeCrypto.randomBytes(32) },
      ],
    });
    return { keys, signer: { sign: hmac(secret) }, other: { sign: hmac(otherSecret) } };
  }
  const asymmetric = alg as "EdDSA";
  const pair = await generateKeyPair(asymmetric, { extractable: true });
  const stranger = await generateKeyPair(asymmetric, { extractable: true });
  const keys = await importKeySet({
    keys: [
      { kid: "k1", alg: asymmetric, privateKey: pair.privateKey, publicKey: pair.publicKey },
      { kid: "k2", alg: alg === "EdDSA" ? "ES256" : "EdDSA", publicKey: await otherPublic(alg) },
    ],
  });
  return {
    keys,
    signer: nodeSigner(alg, pair.privateKey),
    other: nodeSigner(alg, stranger.privateKey),
  };
}

async function otherPublic(alg: JwtAlgorithm): Promise<CryptoKey> {
  return (await generateKeyPair(alg === "EdDSA" ? "ES256" : "EdDSA", { extractable: true }))
    .publicKey;
}

function nodeSigner(alg: JwtAlgorithm, privateKey: CryptoKey): Signer {
  const key = nodeCrypto.KeyObject.from(privateKey);
  const hash = alg === "ES384" ? "sha384" : "sha256";
  const sign =
    (options: nodeCrypto.SignKeyObjectInput | nodeCrypto.SignPrivateKeyInput) => (input: string) =>
      new Uint8Array(nodeCrypto.sign(alg === "EdDSA" ? null : hash, text.encode(input), options));
  switch (alg) {
    case "EdDSA":
      return { sign: sign({ key }) };
    case "ES256":
    case "ES384":
      return {
        sign: sign({ key, dsaEncoding: "ieee-p1363" }),
        variant: sign({ key, dsaEncoding: "der" }),
      };
    case "PS256":
      return {
        sign: sign({ key, padding: nodeCrypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }),
        variant: sign({ key, padding: nodeCrypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 20 }),
      };
    default:
      return {
        sign: sign({ key, padding: nodeCrypto.constants.RSA_PKCS1_PADDING }),
        variant: sign({ key, padding: nodeCrypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }),
      };
  }
}

/** A small seeded generator, so a failure can be run again. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const claims = (overrides: Record<string, unknown> = {}) => ({
  iss: ISSUER,
  sub: "agent-1",
  aud: AUD,
  iat: NOW,
  exp: NOW + 60,
  jti: "j1",
  ...overrides,
});

const without = (value: Record<string, unknown>, name: string) => {
  const { [name]: _gone, ...rest } = value;
  return rest;
};

/** Header and payload changes, each signed properly. */
function signedCases(alg: JwtAlgorithm): readonly [string, unknown, unknown][] {
  const header = { alg, typ: TYP, kid: "k1" };
  const cases: [string, unknown, unknown][] = [["valid", header, claims()]];
  const headers: [string, unknown][] = [
    ["no typ", without(header, "typ")],
    ["typ JWT", { ...header, typ: "JWT" }],
    ["typ other case", { ...header, typ: TYP.toUpperCase() }],
    ["typ application/", { ...header, typ: `application/${TYP}` }],
    ["no kid", without(header, "kid")],
    ["unknown kid", { ...header, kid: "nope" }],
    ["kid of another alg", { ...header, kid: "k2" }],
    ["kid number", { ...header, kid: 1 }],
    ["alg none", { ...header, alg: "none" }],
    ["alg other", { ...header, alg: alg === "HS256" ? "HS384" : "HS256" }],
    ["no alg", without(header, "alg")],
    ["crit", { ...header, crit: ["exp"] }],
    ["b64 false", { ...header, b64: false }],
    ["jwk", { ...header, jwk: { kty: "OKP" } }],
    ["zip", { ...header, zip: "DEF" }],
    ["extra member", { ...header, cty: "x" }],
    ["array", [header]],
    ["string", "header"],
    ["null", null],
  ];
  for (const [name, h] of headers) cases.push([`header ${name}`, h, claims()]);
  const payloads: [string, unknown][] = [
    ["array", [claims()]],
    ["string", "claims"],
    ["number", 42],
    ["null", null],
    ["iss wrong", claims({ iss: "https://other.test" })],
    ["iss number", claims({ iss: 1 })],
    ["aud wrong", claims({ aud: "https://other.test" })],
    ["aud array", claims({ aud: [AUD] })],
    ["sub empty", claims({ sub: "" })],
    ["sub number", claims({ sub: 7 })],
    ["jti empty", claims({ jti: "" })],
    ["jti number", claims({ jti: 7 })],
    ["exp string", claims({ exp: String(NOW + 60) })],
    ["exp null", claims({ exp: null })],
    ["iat string", claims({ iat: String(NOW) })],
    ["iat null", claims({ iat: null })],
    ["nbf string", claims({ nbf: "0" })],
    ["nbf null", claims({ nbf: null })],
    ["nbf past", claims({ nbf: NOW - 10 })],
    ["iat float", claims({ iat: NOW + 0.5 })],
    ["exp float", claims({ exp: NOW - TOLERANCE + 0.5 })],
    ["extra claims", claims({ scope: "a b", nested: { deep: [1, 2] } })],
  ];
  for (const name of ["iss", "sub", "aud", "iat", "exp", "jti"])
    payloads.push([`no ${name}`, without(claims(), name)]);
  // The clock's edges, each side of the tolerance.
  for (let delta = -8; delta <= 8; delta++) {
    payloads.push([`exp now${delta}`, claims({ exp: NOW + delta, iat: NOW - 100 })]);
    payloads.push([`iat now${delta}`, claims({ iat: NOW + delta })]);
    payloads.push([`nbf now${delta}`, claims({ nbf: NOW + delta })]);
  }
  for (const [name, p] of payloads) cases.push([`payload ${name}`, header, p]);
  cases.push(["huge claims", header, claims({ pad: "x".repeat(MAX_LENGTH) })]);
  cases.push(["almost huge claims", header, claims({ pad: "x".repeat(MAX_LENGTH / 2) })]);
  return cases;
}

/** Segment texts that are not what they should be, signed as they are. */
const RAW_SEGMENTS: readonly [string, (good: string) => string][] = [
  ["padded", (good) => `${good}=`],
  ["plus", (good) => `+${good.slice(1)}`],
  ["slash", (good) => `${good.slice(0, -1)}/`],
  ["space", (good) => ` ${good}`],
  ["newline", (good) => `${good}\n`],
  ["one char more", (good) => `${good}A`],
  ["empty", () => ""],
  ["bad utf-8", () => base64url(new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]))],
  ["bom", (good) => base64url(new Uint8Array([0xef, 0xbb, 0xbf, ...atobBytes(good)]))],
  ["not json", () => base64url(text.encode("{not json"))],
  [
    "duplicate keys",
    () => base64url(text.encode(`{"iss":"x",${JSON.stringify(claims()).slice(1)}`)),
  ],
  ["proto key", () => json({ ...claims(), ["__proto__"]: { exp: 0 } })],
  [
    "big number",
    () => base64url(text.encode(JSON.stringify(claims()).replace(/"exp":\d+/, '"exp":1e999'))),
  ],
];

function atobBytes(segment: string): Uint8Array {
  return Uint8Array.from(atob(segment.replace(/-/g, "+").replace(/_/g, "/")), (c) =>
    c.charCodeAt(0),
  );
}

/** Every token of one algorithm: the signed cases, then raw and after-the-fact changes. */
function tokensFor(alg: JwtAlgorithm, signer: Signer, other: Signer): [string, unknown][] {
  const tokens: [string, unknown][] = [];
  const signWith = (input: string, by = signer.sign) => `${input}.${base64url(by(input))}`;
  for (const [name, header, payload] of signedCases(alg))
    tokens.push([name, signWith(`${json(header)}.${json(payload)}`)]);
  const goodHeader = json({ alg, typ: TYP, kid: "k1" });
  const goodPayload = json(claims());
  const valid = signWith(`${goodHeader}.${goodPayload}`);
  for (const [name, change] of RAW_SEGMENTS) {
    tokens.push([`raw payload ${name}`, signWith(`${goodHeader}.${change(goodPayload)}`)]);
    tokens.push([`raw header ${name}`, signWith(`${change(goodHeader)}.${goodPayload}`)]);
  }
  const [h, p, s] = valid.split(".") as [string, string, string];
  tokens.push(["other key's signature", signWith(`${h}.${p}`, other.sign)]);
  if (signer.variant !== undefined)
    tokens.push(["signature variant", signWith(`${h}.${p}`, signer.variant)]);
  tokens.push(["no signature", `${h}.${p}.`]);
  tokens.push(["two segments", `${h}.${p}`]);
  tokens.push(["four segments", `${valid}.${s}`]);
  tokens.push(["trailing dot", `${valid}.`]);
  tokens.push(["leading dot", `.${valid}`]);
  tokens.push(["signature padded", `${valid}=`]);
  tokens.push(["signature plus", `${h}.${p}.${s.replace(/-/g, "+")}`]);
  tokens.push(["signature space", `${h}.${p}. ${s}`]);
  tokens.push(["signature one char more", `${valid}A`]);
  // Characters whose low byte is a base64url character: refused, never read as that byte.
  const beyondLatin1 = (text: string) =>
    String.fromCharCode(0x100 + text.charCodeAt(0)) + text.slice(1);
  tokens.push(["payload char beyond Latin-1", `${h}.${beyondLatin1(p)}.${s}`]);
  tokens.push(["header char beyond Latin-1", `${beyondLatin1(h)}.${p}.${s}`]);
  tokens.push(["signature char beyond Latin-1", `${h}.${p}.${beyondLatin1(s)}`]);
  tokens.push(["signature truncated", valid.slice(0, -4)]);
  tokens.push(["signature doubled", `${valid}${s}`]);
  tokens.push(["not a string", 42]);
  tokens.push(["empty", ""]);
  tokens.push(["huge", `${valid}${"A".repeat(MAX_LENGTH)}`]);
  // Spare bits of the signature's last character: the same bytes, decoded alike or refused alike.
  for (const last of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    tokens.push([`signature last ${last}`, `${valid.slice(0, -1)}${last}`]);
  const rng = random(alg.length * 7919 + alg.charCodeAt(0));
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ ";
  for (let i = 0; i < 260; i++) {
    const at = Math.floor(rng() * valid.length);
    const kind = Math.floor(rng() * 3);
    const char = alphabet[Math.floor(rng() * alphabet.length)] as string;
    const tampered =
      kind === 0
        ? valid.slice(0, at) + char + valid.slice(at + 1)
        : kind === 1
          ? valid.slice(0, at) + char + valid.slice(at)
          : valid.slice(0, at) + valid.slice(at + 1);
    tokens.push([`tampered ${i} at ${at}`, tampered]);
  }
  return tokens;
}

async function verdict(verify: JwtVerifier, token: unknown): Promise<string> {
  try {
    await verify(token as string, { audience: AUD });
    return "accepted";
  } catch (error) {
    return error instanceof JwtInvalidError ? error.reason : `threw ${String(error)}`;
  }
}

describe("the node:crypto and Web Crypto engines decide alike", () => {
  it.each(ALGORITHMS)(
    "%s: every token, the same verdict from both and from jwtVerify",
    async (alg) => {
      const { keys, signer, other } = await keysFor(alg);
      const options = {
        keys,
        typ: TYP,
        issuer: ISSUER,
        clockToleranceSeconds: TOLERANCE,
        maxTokenLength: MAX_LENGTH,
        now: () => NOW_MS,
      };
      const node = verifierOn(options, "node");
      const web = verifierOn(options, "web");
      const reference = joseReference(keys);
      const tokens = tokensFor(alg, signer, other);
      expect(tokens.length).toBeGreaterThan(400);
      const seen = new Map<string, number>();
      const differing: string[] = [];
      for (const [name, token] of tokens) {
        const expected = await verdict(reference, token);
        const byNode = await verdict(node, token);
        const byWeb = await verdict(web, token);
        seen.set(expected, (seen.get(expected) ?? 0) + 1);
        if (byNode !== expected || byWeb !== expected)
          differing.push(`${name}: jwtVerify ${expected}, node ${byNode}, web ${byWeb}`);
      }
      expect(differing).toEqual([]);
      // The cases reach every verdict, so the comparison is not vacuous.
      expect([...seen.keys()].sort()).toEqual(
        [
          "accepted",
          "claims",
          "expired",
          "header",
          "malformed",
          "not_yet_valid",
          "signature",
          "too_large",
          "unknown_key",
        ].sort(),
      );
    },
  );

  it("uses node:crypto for every algorithm here, and both engines return the same claims", async () => {
    for (const alg of ALGORITHMS) {
      const { keys, signer } = await keysFor(alg);
      const key = keys.key("k1") as ImportedKey;
      const options = { keys, typ: TYP, issuer: ISSUER, now: () => NOW_MS };
      const input = `${json({ alg, typ: TYP, kid: "k1" })}.${json(claims())}`;
      const token = `${input}.${base64url(signer.sign(input))}`;
      const byNode = await verifierOn(options, "node")(token, { audience: AUD });
      const byWeb = await verifierOn(options, "web")(token, { audience: AUD });
      expect(byNode).toEqual(byWeb);
      expect(byNode.alg).toBe(key.alg);
    }
  });
});
