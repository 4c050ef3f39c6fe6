import { type CryptoKey, compactVerify, errors } from "jose";
import { fromBase64url } from "../core/encoding.ts";
import { type JwtFailureReason, JwtInvalidError } from "../core/errors.ts";
import { nodeBuiltin } from "../core/node-builtin.ts";
import type { CompactJws } from "./checks.ts";
import type { ImportedKey, JwtAlgorithm } from "./keys.ts";

/**
 * Checks a compact JWS's signature with one key and answers its payload's
 * bytes; throws `JwtInvalidError` (`malformed` or `signature`). The token's
 * header has already been checked against the key.
 */
export type SignatureCheck = (token: string, jws: CompactJws) => Promise<Uint8Array>;

/**
 * Which implementation checks signatures: `node` is `node:crypto` with
 * KeyObjects, `web` is jose on Web Crypto, `auto` the first where the runtime
 * has `node:crypto` (Node, Bun, Deno), the second elsewhere (Workers).
 */
export type SignatureEngine = "auto" | "node" | "web";

/** Builds, once per key, the check of signatures made with it. */
export function signatureChecks(engine: SignatureEngine): (key: ImportedKey) => SignatureCheck {
  const crypto = engine === "web" ? undefined : nodeCrypto();
  if (engine === "node" && crypto === undefined)
    throw new Error("jwtVerifier: node:crypto is not available here");
  const built = new WeakMap<ImportedKey, SignatureCheck>();
  return (key) => {
    let check = built.get(key);
    if (check === undefined) {
      const native = crypto === undefined ? undefined : nodeCheck(crypto, key);
      if (native === undefined && engine === "node")
        throw new Error(`jwtVerifier: node:crypto cannot verify with key ${key.kid}`);
      check = native ?? webCheck(key);
      built.set(key, check);
    }
    return check;
  };
}

/** jose's compact verification: the signature only, the claims are ours. */
function webCheck(key: ImportedKey): SignatureCheck {
  const options = { algorithms: [key.alg] };
  return async (token) => {
    try {
      return (await compactVerify(token, key.verifyKey as CryptoKey | Uint8Array, options)).payload;
    } catch (error) {
      throw translate(error);
    }
  };
}

function translate(error: unknown): JwtInvalidError {
  let reason: JwtFailureReason = "malformed";
  if (error instanceof errors.JWSSignatureVerificationFailed) reason = "signature";
  else if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported)
    reason = "header";
  return new JwtInvalidError(reason, "the token failed verification", { cause: error });
}

/** What is used of `node:crypto`, typed here so these modules need no Node types. */
interface NodeCrypto {
  readonly KeyObject: { from(key: CryptoKey): NodeKey };
  verify(
    algorithm: string | null,
    data: Uint8Array,
    key: NodeKey | NodeKeyOptions,
    signature: Uint8Array,
    callback: (error: unknown, holds: boolean) => void,
  ): boolean | undefined;
  createHmac(algorithm: string, key: Uint8Array): { update(data: Uint8Array): NodeHmac };
  timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean;
  readonly constants: {
    readonly RSA_PKCS1_PADDING: number;
    readonly RSA_PKCS1_PSS_PADDING: number;
  };
}
interface NodeKey {
  readonly type: string;
}
interface NodeKeyOptions {
  readonly key: NodeKey;
  readonly dsaEncoding?: "ieee-p1363";
  readonly padding?: number;
  readonly saltLength?: number;
}
interface NodeHmac {
  digest(): Uint8Array;
}

/** `node:crypto` where the runtime offers it without an import; never on Workers. */
function nodeCrypto(): NodeCrypto | undefined {
  const crypto = nodeBuiltin("node:crypto") as NodeCrypto | undefined;
  return typeof crypto?.verify === "function" && typeof crypto.KeyObject?.from === "function"
    ? crypto
    : undefined;
}

const ENCODER = new TextEncoder();

/** What is used of `node:buffer`'s `Buffer`. */
interface NodeBuffer {
  from(text: string, encoding: "base64url" | "latin1"): Uint8Array;
}

/** `Buffer` where the runtime that gave `node:crypto` has it too. */
function nodeBuffer(): NodeBuffer | undefined {
  const buffer = (nodeBuiltin("node:buffer") as { Buffer?: NodeBuffer } | undefined)?.Buffer;
  return typeof buffer?.from === "function" ? buffer : undefined;
}

/**
 * Decoders of a JWS's segments. With `Buffer` they run natively, which is only
 * exact on what `compactJws` let through: every segment base64url, so the
 * signing input is ASCII (its Latin-1 bytes are its UTF-8 bytes) and a
 * segment needs no character check, only its length's.
 */
function segmentDecoders(buffer: NodeBuffer | undefined) {
  if (buffer === undefined)
    return {
      bytes: fromBase64url,
      signingInput: (text: string) => ENCODER.encode(text),
    };
  return {
    bytes: (segment: string) =>
      segment.length % 4 === 1 ? undefined : buffer.from(segment, "base64url"),
    signingInput: (text: string) => buffer.from(text, "latin1"),
  };
}

/** The same check on `node:crypto`, or `undefined` when it cannot take this key. */
function nodeCheck(crypto: NodeCrypto, key: ImportedKey): SignatureCheck | undefined {
  let verify: Verify;
  try {
    verify = nodeVerify(crypto, key);
  } catch {
    return undefined;
  }
  const { bytes, signingInput } = segmentDecoders(nodeBuffer());
  // Same order as jose: the signature's encoding, the signature, then the payload's encoding.
  return async (token, jws) => {
    const signature = bytes(jws.signature);
    if (signature === undefined) fail("malformed", "the signature is not base64url");
    let holds = false;
    try {
      holds = await verify(signingInput(token.slice(0, jws.signedLength)), signature);
    } catch (cause) {
      fail("signature", "the signature does not hold", cause);
    }
    if (!holds) fail("signature", "the signature does not hold");
    const payload = bytes(jws.payload);
    if (payload === undefined) fail("malformed", "the payload is not base64url");
    return payload;
  };
}

const HASH: Record<JwtAlgorithm, string> = {
  EdDSA: "",
  ES256: "sha256",
  ES384: "sha384",
  PS256: "sha256",
  RS256: "sha256",
  HS256: "sha256",
  HS384: "sha384",
  HS512: "sha512",
};

type Verify = (data: Uint8Array, signature: Uint8Array) => boolean | Promise<boolean>;

/**
 * Web Crypto's parameters for each algorithm (RFC 7518 §3), in `node:crypto`'s
 * terms. Public-key checks run on the thread pool, as Web Crypto's do, so the
 * event loop goes on meanwhile; an HMAC costs less than the trip there.
 */
function nodeVerify(crypto: NodeCrypto, { alg, verifyKey }: ImportedKey): Verify {
  const hash = HASH[alg];
  if (alg === "HS256" || alg === "HS384" || alg === "HS512") {
    const secret = verifyKey as Uint8Array;
    return (data, signature) => {
      const mac = crypto.createHmac(hash, secret).update(data).digest();
      return mac.length === signature.length && crypto.timingSafeEqual(mac, signature);
    };
  }
  const key = crypto.KeyObject.from(verifyKey as CryptoKey);
  if (key.type !== "public") throw new Error("not a public key");
  const inPool =
    (algorithm: string | null, options: NodeKey | NodeKeyOptions): Verify =>
    (data, signature) =>
      new Promise((resolve, reject) => {
        const answered = crypto.verify(algorithm, data, options, signature, (error, holds) =>
          error ? reject(error) : resolve(holds),
        );
        // A runtime whose verify ignores the callback answers at once instead of never.
        if (typeof answered === "boolean") resolve(answered);
      });
  switch (alg) {
    case "EdDSA":
      return inPool(null, key);
    case "ES256":
    case "ES384":
      return inPool(hash, { key, dsaEncoding: "ieee-p1363" });
    case "RS256":
      return inPool(hash, { key, padding: crypto.constants.RSA_PKCS1_PADDING });
    case "PS256":
      // The salt as long as the digest, as jose asks Web Crypto for.
      return inPool(hash, { key, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 });
  }
}

function fail(reason: JwtFailureReason, message: string, cause?: unknown): never {
  throw new JwtInvalidError(reason, message, cause === undefined ? undefined : { cause });
}
