import { base64url, fromBase64url } from "../core/encoding.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { timingSafeEqual } from "../core/timing-safe.ts";

/**
 * Options of `dpopNonces`.
 *
 * @example
 * ```ts
 * import { dpopNonces } from "portcullis/jwt";
 *
 * // The same secret on every instance: a nonce one issues, the others accept.
 * const nonces = dpopNonces({ secret: process.env.DPOP_NONCE_SECRET!, rotateSeconds: 60 });
 * ```
 */
export interface DpopNoncesOptions {
  /** HMAC key shared by every instance: a string of 32 or more characters, or 32 or more bytes. */
  readonly secret: string | Uint8Array;
  /**
   * Length of a nonce's time slot, in seconds (10 to 3600); a nonce is accepted in its slot and the next.
   *
   * @default 60
   */
  readonly rotateSeconds?: number;
  /**
   * Clock, in milliseconds since the epoch.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/** Server-issued DPoP nonces (RFC 9449 §8, §9), stateless. */
export interface DpopNonces {
  /** The nonce of the current slot, for the `DPoP-Nonce` header. */
  current(): Promise<string>;
  /** Whether `nonce` is one of the current or the previous slot. */
  check(nonce: string): Promise<boolean>;
}

const SLOT_BYTES = 8;
const NONCE_LENGTH = 54; // base64url of 8 slot bytes and a 32-byte HMAC

/**
 * Stateless nonces: `base64url(slot ‖ HMAC-SHA256(secret, slot))` with
 * `slot = floor(now / rotateSeconds)`. No state is shared between instances
 * beyond the secret, and none is kept: a nonce is recomputed to be checked.
 */
export function dpopNonces(options: DpopNoncesOptions): DpopNonces {
  rejectUnknownKeys("dpopNonces", options, ["secret", "rotateSeconds", "now"]);
  const secret = options.secret;
  const bytes = typeof secret === "string" ? new TextEncoder().encode(secret) : secret;
  if (
    !(bytes instanceof Uint8Array) ||
    (typeof secret === "string" ? secret.length : bytes.length) < 32
  )
    throw new InvalidOptionsError(
      "dpopNonces: secret must be a string of 32 or more characters, or 32 or more bytes",
    );
  const rotateSeconds = options.rotateSeconds ?? 60;
  if (!Number.isInteger(rotateSeconds) || rotateSeconds < 10 || rotateSeconds > 3600)
    throw new InvalidOptionsError(
      "dpopNonces: rotateSeconds must be a whole number from 10 to 3600",
    );
  const now = options.now ?? Date.now;
  if (typeof now !== "function")
    throw new InvalidOptionsError("dpopNonces: now must be a function");
  const key = crypto.subtle.importKey(
    "raw",
    bytes.slice() as Uint8Array<ArrayBuffer>,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  // One slot's nonce is kept: it is asked for on every DPoP answer.
  let cached: { slot: number; nonce: Promise<string> } | undefined;

  const nonceOf = (slot: number): Promise<string> => {
    if (cached?.slot === slot) return cached.nonce;
    const nonce = sign(key, slot);
    cached = { slot, nonce };
    return nonce;
  };
  const slotNow = () => Math.floor(now() / 1000 / rotateSeconds);

  return Object.freeze({
    current: () => nonceOf(slotNow()),
    async check(nonce: string): Promise<boolean> {
      if (typeof nonce !== "string" || nonce.length !== NONCE_LENGTH) return false;
      const decoded = fromBase64url(nonce);
      if (decoded === undefined || decoded.length !== SLOT_BYTES + 32) return false;
      const slot = readSlot(decoded);
      const current = slotNow();
      if (slot !== current && slot !== current - 1) return false;
      return timingSafeEqual(nonce, await sign(key, slot));
    },
  });
}

async function sign(key: Promise<CryptoKey>, slot: number): Promise<string> {
  const slotBytes = new Uint8Array(SLOT_BYTES);
  new DataView(slotBytes.buffer).setBigUint64(0, BigInt(slot));
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", await key, slotBytes));
  const joined = new Uint8Array(SLOT_BYTES + mac.length);
  joined.set(slotBytes);
  joined.set(mac, SLOT_BYTES);
  return base64url(joined);
}

function readSlot(bytes: Uint8Array): number {
  const value = new DataView(bytes.buffer, bytes.byteOffset, SLOT_BYTES).getBigUint64(0);
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? -1 : Number(value);
}
