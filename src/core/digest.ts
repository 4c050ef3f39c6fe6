import { base64url } from "./encoding.ts";
import { nodeBuiltin } from "./node-builtin.ts";

const encoder = new TextEncoder();
const ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
type TextDigest = (data: string, encoding: "base64url" | "hex") => string;

interface NodeHash {
  update(data: string | Uint8Array): NodeHash;
  digest(): Uint8Array;
  digest(encoding: "base64url" | "hex"): string;
}
interface NodeCrypto {
  createHash?: (algorithm: "sha256") => NodeHash;
  /** One-shot digest (Node 20.12+), cheaper than a hash object for short input. */
  hash?: (algorithm: "sha256", data: string, encoding: "base64url" | "hex") => string;
}

// node:crypto's hash, where the runtime offers it without an import (never on Workers). Web
// Crypto's digest answers through a job and a promise, which costs far more than hashing a
// short string; the digests are the same.
const node: { createHash: NonNullable<NodeCrypto["createHash"]>; text: TextDigest } | undefined =
  (() => {
    try {
      const crypto = nodeBuiltin("node:crypto") as NodeCrypto | undefined;
      const createHash = crypto?.createHash;
      if (typeof createHash !== "function") return undefined;
      const oneShot = crypto?.hash;
      const text: TextDigest =
        typeof oneShot === "function"
          ? (data, encoding) => oneShot("sha256", data, encoding)
          : (data, encoding) => createHash("sha256").update(data).digest(encoding);
      // Checked once: a runtime whose stand-in hashes differently is not used.
      return text("abc", "hex") === ABC && createHash("sha256").update("abc").digest("hex") === ABC
        ? { createHash, text }
        : undefined;
    } catch {
      return undefined;
    }
  })();

/** SHA-256 of `value` (a string is UTF-8 encoded first). */
export async function sha256(value: string | Uint8Array): Promise<Uint8Array> {
  if (node !== undefined) {
    const digest = node.createHash("sha256").update(value).digest();
    return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);
  }
  const bytes = typeof value === "string" ? encoder.encode(value) : value;
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}

/** SHA-256 of `text`, base64url without padding: how stores key a secret they must not hold. */
export async function sha256Base64url(text: string): Promise<string> {
  return sha256Base64urlNow(text) ?? base64url(await sha256(text));
}

/**
 * `sha256Base64url` within the call, where the runtime hashes synchronously;
 * `undefined` elsewhere (then await `sha256Base64url`).
 */
export function sha256Base64urlNow(text: string): string | undefined {
  return node?.text(text, "base64url");
}

/** SHA-256 of `text`, lower-case hex. */
export async function sha256Hex(text: string): Promise<string> {
  if (node !== undefined) return node.text(text, "hex");
  let hex = "";
  for (const byte of await sha256(text)) hex += byte.toString(16).padStart(2, "0");
  return hex;
}
