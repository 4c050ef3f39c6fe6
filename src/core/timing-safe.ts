import { sha256 } from "./digest.ts";

/**
 * Compares two secrets in time independent of where they differ and of their
 * lengths: both sides are hashed first, so the loop always runs over 32 bytes
 * (equal SHA-256 digests stand for equal inputs).
 */
export async function timingSafeEqual(
  a: string | Uint8Array,
  b: string | Uint8Array,
): Promise<boolean> {
  const [ha, hb] = await Promise.all([sha256(a), sha256(b)]);
  let diff = 0;
  for (let i = 0; i < ha.length; i++) diff |= (ha[i] as number) ^ (hb[i] as number);
  return diff === 0;
}
