const encoder = new TextEncoder();

/**
 * Compares two secrets in time independent of where they differ and of their
 * lengths: both sides are hashed first, so the loop always runs over 32 bytes
 * (equal SHA-256 digests stand for equal inputs).
 */
export async function timingSafeEqual(
  a: string | Uint8Array,
  b: string | Uint8Array,
): Promise<boolean> {
  const [ha, hb] = await Promise.all([digest(a), digest(b)]);
  let diff = 0;
  for (let i = 0; i < ha.length; i++) diff |= (ha[i] as number) ^ (hb[i] as number);
  return diff === 0;
}

async function digest(value: string | Uint8Array): Promise<Uint8Array> {
  const bytes = typeof value === "string" ? encoder.encode(value) : value;
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}
