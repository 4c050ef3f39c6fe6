import {
  CompactSign,
  type CryptoKey,
  compactVerify,
  exportJWK,
  generateKeyPair,
  importJWK,
  importPKCS8,
  importSPKI,
  type JWK,
} from "jose";
import { InvalidOptionsError } from "../core/errors.ts";
import { rejectUnknownKeys } from "../core/options.ts";

/** Asymmetric algorithms a key may be pinned to. */
export type AsymmetricAlgorithm = "EdDSA" | "ES256" | "ES384" | "PS256" | "RS256";
/** Symmetric algorithms, only when asked for by name. */
export type SymmetricAlgorithm = "HS256" | "HS384" | "HS512";
export type JwtAlgorithm = AsymmetricAlgorithm | SymmetricAlgorithm;

const ASYMMETRIC: readonly string[] = ["EdDSA", "ES256", "ES384", "PS256", "RS256"];
const SYMMETRIC: readonly string[] = ["HS256", "HS384", "HS512"];
const HMAC_BYTES: Record<SymmetricAlgorithm, number> = { HS256: 32, HS384: 48, HS512: 64 };
const KID = /^[A-Za-z0-9._~-]{1,64}$/;

/** A key given as a JWK, a PEM string (PKCS#8 private, SPKI public) or an imported `CryptoKey`. */
export type KeyMaterial = JWK | CryptoKey | string;

/** One asymmetric key pair (or only its public half, to keep verifying after rotation). */
export interface AsymmetricKeyInput {
  /** The `kid` header that selects this key; 1-64 URL-safe characters. */
  readonly kid: string;
  /** The one algorithm this key signs and verifies with. */
  readonly alg: AsymmetricAlgorithm;
  /** Omit for a retired key that only verifies tokens it signed earlier. */
  readonly privateKey?: KeyMaterial;
  /** Required unless `privateKey` is a private JWK, whose public half is taken from it. */
  readonly publicKey?: KeyMaterial;
}

/** A shared secret; HMAC tokens can be minted by anyone who can verify them. */
export interface SymmetricKeyInput {
  readonly kid: string;
  readonly alg: SymmetricAlgorithm;
  /** At least 32 bytes (a string is taken as UTF-8). */
  readonly secret: Uint8Array | string;
}

export type KeyInput = AsymmetricKeyInput | SymmetricKeyInput;

/**
 * Options of `importKeySet`.
 *
 * @example
 * ```ts
 * import { importKeySet } from "portcullis/jwt";
 *
 * const keys = await importKeySet({
 *   keys: [
 *     { kid: "2025-06", alg: "EdDSA", privateKey: newPrivatePem, publicKey: newPublicPem },
 *     { kid: "2025-01", alg: "EdDSA", publicKey: oldPublicPem }, // retired: verifies only
 *   ],
 *   signingKid: "2025-06",
 * });
 * ```
 */
export interface KeySetOptions {
  /** Every key that verifies, the signing key included. */
  readonly keys: readonly KeyInput[];
  /**
   * The key new tokens are signed with; it must have a private half or secret.
   *
   * @default the first key in `keys` that can sign
   */
  readonly signingKid?: string;
}

/** An imported key, pinned to its algorithm. */
export interface ImportedKey {
  readonly kid: string;
  readonly alg: JwtAlgorithm;
  readonly verifyKey: CryptoKey | Uint8Array;
  readonly signKey?: CryptoKey | Uint8Array;
  /** The public JWK published in the JWKS; absent for HMAC secrets. */
  readonly publicJwk?: JWK;
}

/** The public keys as a JSON Web Key Set (RFC 7517 §5). */
export interface JsonWebKeySet {
  readonly keys: readonly JWK[];
}

/**
 * Keys imported once, each pinned to one algorithm and named by its `kid`.
 * Rotation: add the new key first (it signs), keep the old one without its
 * private half until the last token it signed has expired.
 */
export class KeySet {
  readonly #byKid: ReadonlyMap<string, ImportedKey>;
  readonly #signing: ImportedKey | undefined;
  readonly #jwks: JsonWebKeySet;

  /** Use `importKeySet` or `generateKeySet`. */
  private constructor(keys: readonly ImportedKey[], signingKid: string | undefined) {
    this.#byKid = new Map(keys.map((key) => [key.kid, key]));
    this.#signing =
      signingKid === undefined
        ? keys.find((key) => key.signKey !== undefined)
        : this.#byKid.get(signingKid);
    this.#jwks = Object.freeze({
      keys: Object.freeze(
        keys.flatMap((key) => (key.publicJwk === undefined ? [] : [Object.freeze(key.publicJwk)])),
      ),
    });
  }

  /** @internal */
  static create(keys: readonly ImportedKey[], signingKid: string | undefined): KeySet {
    return new KeySet(keys, signingKid);
  }

  /** The key a token's `kid` names, or `undefined`. */
  key(kid: string): ImportedKey | undefined {
    return this.#byKid.get(kid);
  }

  /** The key new tokens are signed with, or `undefined` for a verify-only set. */
  get signingKey(): ImportedKey | undefined {
    return this.#signing;
  }

  /** The public keys, for a `jwks_uri`. HMAC secrets are never listed. */
  jwks(): JsonWebKeySet {
    return this.#jwks;
  }
}

/** Imports every key once; throws `InvalidOptionsError` on anything unusable. */
export async function importKeySet(options: KeySetOptions): Promise<KeySet> {
  rejectUnknownKeys("importKeySet", options, ["keys", "signingKid"]);
  if (!Array.isArray(options?.keys) || options.keys.length === 0)
    throw new InvalidOptionsError("importKeySet: keys must be a non-empty array");
  const seen = new Set<string>();
  const imported: ImportedKey[] = [];
  for (const input of options.keys) {
    if (typeof input?.kid !== "string" || !KID.test(input.kid))
      throw new InvalidOptionsError(
        "importKeySet: every key needs a kid of 1-64 URL-safe characters",
      );
    if (seen.has(input.kid))
      throw new InvalidOptionsError(`importKeySet: kid ${JSON.stringify(input.kid)} is used twice`);
    seen.add(input.kid);
    imported.push(await importOne(input));
  }
  if (options.signingKid !== undefined) {
    const key = imported.find((candidate) => candidate.kid === options.signingKid);
    if (key?.signKey === undefined)
      throw new InvalidOptionsError(
        `importKeySet: signingKid ${JSON.stringify(options.signingKid)} names no key with a private half or secret`,
      );
  }
  return KeySet.create(imported, options.signingKid);
}

/**
 * A fresh key pair (EdDSA unless another asymmetric algorithm is named), the
 * private half not extractable. Tokens it signs die with the process: for
 * several instances or restarts, import persistent keys instead.
 */
export async function generateKeySet(
  options: { readonly alg?: AsymmetricAlgorithm; readonly kid?: string } = {},
): Promise<KeySet> {
  rejectUnknownKeys("generateKeySet", options, ["alg", "kid"]);
  const alg = options.alg ?? "EdDSA";
  if (!ASYMMETRIC.includes(alg))
    throw new InvalidOptionsError(`generateKeySet: alg must be one of ${ASYMMETRIC.join(", ")}`);
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: false });
  return importKeySet({
    keys: [
      {
        kid: options.kid ?? `${alg.toLowerCase()}-${Date.now().toString(36)}`,
        alg,
        privateKey,
        publicKey,
      },
    ],
  });
}

async function importOne(input: KeyInput): Promise<ImportedKey> {
  const { kid, alg } = input;
  if (SYMMETRIC.includes(alg)) {
    rejectUnknownKeys(`importKeySet: key ${kid}`, input, ["kid", "alg", "secret"]);
    const { secret } = input as SymmetricKeyInput;
    const bytes = typeof secret === "string" ? new TextEncoder().encode(secret) : secret;
    // RFC 7518 §3.2: at least as long as the hash's output.
    const least = HMAC_BYTES[alg as SymmetricAlgorithm];
    if (!(bytes instanceof Uint8Array) || bytes.length < least)
      throw new InvalidOptionsError(
        `importKeySet: key ${kid}: an ${alg} secret needs at least ${least} bytes`,
      );
    // A copy of our own: slice() on a Node Buffer is a view, which a caller wiping its buffer would empty.
    const copy = new Uint8Array(bytes);
    return { kid, alg, verifyKey: copy, signKey: copy };
  }
  if (!ASYMMETRIC.includes(alg))
    throw new InvalidOptionsError(
      `importKeySet: key ${kid}: alg must be one of ${[...ASYMMETRIC, ...SYMMETRIC].join(", ")}`,
    );
  rejectUnknownKeys(`importKeySet: key ${kid}`, input, ["kid", "alg", "privateKey", "publicKey"]);
  const { privateKey, publicKey } = input as AsymmetricKeyInput;
  const asymmetric = alg as AsymmetricAlgorithm;
  try {
    const signKey =
      privateKey === undefined ? undefined : await toCryptoKey(privateKey, asymmetric, "private");
    const publicMaterial = publicKey ?? publicHalfOf(privateKey);
    if (publicMaterial === undefined)
      throw new InvalidOptionsError(
        `importKeySet: key ${kid}: give publicKey (it cannot be derived from a PEM or CryptoKey private key)`,
      );
    const verifyKey = await toCryptoKey(publicMaterial, asymmetric, "public");
    if (verifyKey.type !== "public")
      throw new InvalidOptionsError(`importKeySet: key ${kid}: publicKey is not a public key`);
    if (signKey !== undefined && signKey.type !== "private")
      throw new InvalidOptionsError(`importKeySet: key ${kid}: privateKey is not a private key`);
    for (const key of [verifyKey, signKey]) {
      const bits = (key?.algorithm as { modulusLength?: number } | undefined)?.modulusLength;
      if (bits !== undefined && bits < 2048)
        throw new InvalidOptionsError(
          `importKeySet: key ${kid}: an RSA key needs at least 2048 bits, not ${bits}`,
        );
    }
    if (signKey !== undefined && !(await pairs(signKey, verifyKey, asymmetric)))
      throw new InvalidOptionsError(
        `importKeySet: key ${kid}: privateKey and publicKey are not one key pair`,
      );
    const { kty, crv, x, y, n, e } = await exportJWK(verifyKey);
    const publicJwk = Object.fromEntries(
      Object.entries({ kty, crv, x, y, n, e, kid, alg, use: "sig" }).filter(
        ([, value]) => value !== undefined,
      ),
    ) as JWK;
    return { kid, alg, verifyKey, signKey, publicJwk };
  } catch (error) {
    if (error instanceof InvalidOptionsError) throw error;
    throw new InvalidOptionsError(`importKeySet: key ${kid} cannot be used with ${alg}`, {
      cause: error,
    });
  }
}

async function toCryptoKey(
  material: KeyMaterial,
  alg: AsymmetricAlgorithm,
  half: "private" | "public",
): Promise<CryptoKey> {
  if (typeof material === "string") {
    return half === "private"
      ? importPKCS8(material, alg)
      : importSPKI(material, alg, { extractable: true });
  }
  if (isCryptoKey(material)) {
    if (!fitsAlgorithm(material, alg))
      throw new InvalidOptionsError(`the CryptoKey is not a ${alg} key`);
    return material;
  }
  if (half === "public" && "d" in material)
    throw new InvalidOptionsError("a public key must not carry the private parameter d");
  const key = await importJWK({ ...material, ext: half === "public" }, alg, {
    extractable: half === "public",
  });
  if (key instanceof Uint8Array)
    throw new InvalidOptionsError("an asymmetric key cannot be a secret");
  return key;
}

function publicHalfOf(privateKey: KeyMaterial | undefined): JWK | undefined {
  if (privateKey === undefined || typeof privateKey === "string" || isCryptoKey(privateKey))
    return undefined;
  const {
    d: _d,
    p: _p,
    q: _q,
    dp: _dp,
    dq: _dq,
    qi: _qi,
    oth: _oth,
    key_ops: _ops,
    ...rest
  } = privateKey as JWK & { oth?: unknown };
  return rest;
}

/** Whether a token `signKey` signs is one `verifyKey` verifies: a mismatched pair signs nothing usable. */
async function pairs(
  signKey: CryptoKey,
  verifyKey: CryptoKey,
  alg: AsymmetricAlgorithm,
): Promise<boolean> {
  const probe = await new CompactSign(new TextEncoder().encode("portcullis key probe"))
    .setProtectedHeader({ alg })
    .sign(signKey);
  try {
    await compactVerify(probe, verifyKey, { algorithms: [alg] });
    return true;
  } catch {
    return false;
  }
}

// What Web Crypto calls each algorithm's keys; a key made for one must not be pinned to another.
function fitsAlgorithm(key: CryptoKey, alg: AsymmetricAlgorithm): boolean {
  const algorithm = key.algorithm as { name: string; namedCurve?: string; hash?: { name: string } };
  switch (alg) {
    case "EdDSA":
      return algorithm.name === "Ed25519";
    case "ES256":
      return algorithm.name === "ECDSA" && algorithm.namedCurve === "P-256";
    case "ES384":
      return algorithm.name === "ECDSA" && algorithm.namedCurve === "P-384";
    case "PS256":
      return algorithm.name === "RSA-PSS" && algorithm.hash?.name === "SHA-256";
    case "RS256":
      return algorithm.name === "RSASSA-PKCS1-v1_5" && algorithm.hash?.name === "SHA-256";
  }
}

function isCryptoKey(value: unknown): value is CryptoKey {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as CryptoKey).type === "string" &&
    typeof (value as CryptoKey).algorithm === "object"
  );
}
