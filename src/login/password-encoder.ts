import { scryptAsync } from "@noble/hashes/scrypt.js";
import { base64url, fromBase64url } from "../core/encoding.ts";
import { InvalidOptionsError } from "../core/errors.ts";

/**
 * Hashes and checks passwords. Encoded hashes start with their algorithm id
 * (`{scrypt}…`, `{pbkdf2-sha256}…`), so a store can hold several generations
 * and `needsRehash` tells when a stored hash should be upgraded.
 */
export interface PasswordEncoder {
  hash(password: string): Promise<string>;
  verify(password: string, encoded: string): Promise<boolean>;
  /** True when `encoded` uses another algorithm or weaker parameters than this encoder's. */
  needsRehash(encoded: string): boolean;
}

export interface ScryptParameters {
  /**
   * log2 of the CPU/memory cost N.
   *
   * @default 15 (N = 32 768)
   */
  readonly logN?: number;
  /**
   * Block size.
   *
   * @default 8
   */
  readonly r?: number;
  /**
   * Parallelism.
   *
   * @default 3 (with logN 15, the cost OWASP lists as a minimum)
   */
  readonly p?: number;
}

type NodeScrypt = (
  password: string,
  salt: Uint8Array,
  keylen: number,
  options: { N: number; r: number; p: number; maxmem: number },
  callback: (error: Error | null, key: Uint8Array) => void,
) => void;

// Node's native scrypt is several times faster than any JavaScript one; it is
// looked up at run time so this module still loads on runtimes without it.
const nativeScrypt: NodeScrypt | undefined = (() => {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const mod = proc?.getBuiltinModule?.("node:crypto") as { scrypt?: NodeScrypt } | undefined;
  return typeof mod?.scrypt === "function" ? mod.scrypt : undefined;
})();

const KEY_BYTES = 32;
const SALT_BYTES = 16;

async function scrypt(
  password: string,
  salt: Uint8Array,
  N: number,
  r: number,
  p: number,
): Promise<Uint8Array> {
  const maxmem = 256 * N * r + 1024 * 1024;
  if (nativeScrypt !== undefined) {
    const native = nativeScrypt;
    return new Promise((resolve, reject) =>
      native(password.normalize("NFKC"), salt, KEY_BYTES, { N, r, p, maxmem }, (error, key) =>
        error ? reject(error) : resolve(new Uint8Array(key)),
      ),
    );
  }
  return scryptAsync(password.normalize("NFKC"), salt, { N, r, p, dkLen: KEY_BYTES, maxmem });
}

/** scrypt (RFC 7914): `{scrypt}ln=15,r=8,p=3$<salt>$<hash>`. */
export class ScryptPasswordEncoder implements PasswordEncoder {
  static readonly id = "scrypt";
  readonly #logN: number;
  readonly #r: number;
  readonly #p: number;

  constructor(parameters: ScryptParameters = {}) {
    this.#logN = parameters.logN ?? 15;
    this.#r = parameters.r ?? 8;
    this.#p = parameters.p ?? 3;
    const problem = scryptCostProblem(this.#logN, this.#r, this.#p);
    if (problem !== undefined) throw new InvalidOptionsError(`scrypt: ${problem}`);
  }

  async hash(password: string): Promise<string> {
    const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES));
    const key = await scrypt(password, salt, 2 ** this.#logN, this.#r, this.#p);
    return `{scrypt}ln=${this.#logN},r=${this.#r},p=${this.#p}$${base64url(salt)}$${base64url(key)}`;
  }

  async verify(password: string, encoded: string): Promise<boolean> {
    const parsed = parseScrypt(encoded);
    if (parsed === undefined) return false;
    const key = await scrypt(password, parsed.salt, 2 ** parsed.logN, parsed.r, parsed.p);
    return constantTimeEqual(key, parsed.key);
  }

  needsRehash(encoded: string): boolean {
    const parsed = parseScrypt(encoded);
    return (
      parsed === undefined || parsed.logN < this.#logN || parsed.r < this.#r || parsed.p < this.#p
    );
  }
}

/** Most memory one scrypt check may take (128·N·r bytes): 256 MiB. */
const MAX_SCRYPT_MEMORY = 256 * 1024 * 1024;
/** Most work one check may take (N·r·p): 16 times the default's. */
const MAX_SCRYPT_WORK = 2 ** 15 * 8 * 3 * 16;

function scryptCostProblem(logN: number, r: number, p: number): string | undefined {
  if (![logN, r, p].every((v) => Number.isSafeInteger(v) && v >= 1))
    return "logN, r and p must be positive integers";
  if (logN > 24 || r > 64 || p > 16) return "logN at most 24, r at most 64, p at most 16";
  const N = 2 ** logN;
  if (128 * N * r > MAX_SCRYPT_MEMORY) return "128·N·r must stay within 256 MiB";
  if (N * r * p > MAX_SCRYPT_WORK) return "N·r·p must stay within 16 times the default cost";
  return undefined;
}

function parseScrypt(encoded: string) {
  const m =
    /^\{scrypt\}ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(
      encoded,
    );
  if (m === null) return undefined;
  const logN = Number(m[1]);
  const r = Number(m[2]);
  const p = Number(m[3]);
  const salt = fromBase64url(m[4] as string);
  const key = fromBase64url(m[5] as string);
  // A tampered hash must not make one check cost gigabytes or minutes.
  if (scryptCostProblem(logN, r, p) !== undefined || !salt || !key || key.length !== KEY_BYTES) {
    return undefined;
  }
  return { logN, r, p, salt, key };
}

/** PBKDF2-HMAC-SHA256 on Web Crypto: `{pbkdf2-sha256}i=600000$<salt>$<hash>`. For FIPS settings and older hashes. */
export class Pbkdf2PasswordEncoder implements PasswordEncoder {
  static readonly id = "pbkdf2-sha256";
  readonly #iterations: number;

  /** `iterations` default 600 000 (OWASP's figure for PBKDF2-HMAC-SHA256). */
  constructor(options: { readonly iterations?: number } = {}) {
    this.#iterations = options.iterations ?? 600_000;
    if (
      !Number.isSafeInteger(this.#iterations) ||
      this.#iterations < 1 ||
      this.#iterations > 10_000_000
    ) {
      throw new InvalidOptionsError("pbkdf2 iterations must be an integer from 1 to 10 000 000");
    }
  }

  async hash(password: string): Promise<string> {
    const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES));
    const key = await pbkdf2(password, salt, this.#iterations);
    return `{pbkdf2-sha256}i=${this.#iterations}$${base64url(salt)}$${base64url(key)}`;
  }

  async verify(password: string, encoded: string): Promise<boolean> {
    const parsed = parsePbkdf2(encoded);
    if (parsed === undefined) return false;
    return constantTimeEqual(await pbkdf2(password, parsed.salt, parsed.iterations), parsed.key);
  }

  needsRehash(encoded: string): boolean {
    const parsed = parsePbkdf2(encoded);
    return parsed === undefined || parsed.iterations < this.#iterations;
  }
}

function parsePbkdf2(encoded: string) {
  const m = /^\{pbkdf2-sha256\}i=(\d{1,8})\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(encoded);
  if (m === null) return undefined;
  const iterations = Number(m[1]);
  const salt = fromBase64url(m[2] as string);
  const key = fromBase64url(m[3] as string);
  if (iterations < 1 || iterations > 10_000_000 || !salt || !key || key.length !== KEY_BYTES)
    return undefined;
  return { iterations, salt, key };
}

async function pbkdf2(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const material = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(password.normalize("NFKC")),
    "PBKDF2",
    false,
    ["deriveBits"],
  );
  const bits = await crypto.subtle.deriveBits(
    { name: "PBKDF2", hash: "SHA-256", salt: salt as Uint8Array<ArrayBuffer>, iterations },
    material,
    KEY_BYTES * 8,
  );
  return new Uint8Array(bits);
}

function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}

/**
 * Hashes with one encoder and verifies with any it knows, chosen by the id in
 * front of the stored hash. `needsRehash` is true for every hash not made by
 * the current encoder with its current parameters.
 */
export class DelegatingPasswordEncoder implements PasswordEncoder {
  readonly #current: string;
  readonly #encoders: ReadonlyMap<string, PasswordEncoder>;

  constructor(current: string, encoders: Readonly<Record<string, PasswordEncoder>>) {
    this.#encoders = new Map(Object.entries(encoders));
    if (!this.#encoders.has(current))
      throw new InvalidOptionsError(`no encoder registered for id ${JSON.stringify(current)}`);
    this.#current = current;
  }

  hash(password: string): Promise<string> {
    return (this.#encoders.get(this.#current) as PasswordEncoder).hash(password);
  }

  async verify(password: string, encoded: string): Promise<boolean> {
    const encoder = this.#encoders.get(idOf(encoded) ?? "");
    return encoder === undefined ? false : encoder.verify(password, encoded);
  }

  needsRehash(encoded: string): boolean {
    return (
      idOf(encoded) !== this.#current ||
      (this.#encoders.get(this.#current) as PasswordEncoder).needsRehash(encoded)
    );
  }
}

function idOf(encoded: string): string | undefined {
  return /^\{([a-z0-9-]{1,32})\}/.exec(encoded)?.[1];
}

/** scrypt for new hashes; verifies scrypt and PBKDF2-SHA256 hashes. */
export function createPasswordEncoder(scryptParameters: ScryptParameters = {}): PasswordEncoder {
  return new DelegatingPasswordEncoder(ScryptPasswordEncoder.id, {
    [ScryptPasswordEncoder.id]: new ScryptPasswordEncoder(scryptParameters),
    [Pbkdf2PasswordEncoder.id]: new Pbkdf2PasswordEncoder(),
  });
}
