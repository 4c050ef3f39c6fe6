/** base64url without padding (RFC 4648 §5), on web-standard APIs only. */
export function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i] as number);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

// Each base64url character's 6 bits, -1 for every other character code below 128.
const SEXTETS = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++)
  SEXTETS["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".charCodeAt(i)] = i;

/**
 * Decodes base64url without padding; `undefined` when malformed (a character
 * outside the alphabet, or a length that leaves a lone character). Trailing
 * bits are dropped, as `atob` does. One pass, no intermediate strings: token
 * checks decode three segments per request.
 */
export function fromBase64url(text: string): Uint8Array | undefined {
  const length = text.length;
  const tail = length % 4;
  if (tail === 1) return undefined;
  const bytes = new Uint8Array((length * 3) >> 2);
  const whole = length - tail;
  let out = 0;
  for (let i = 0; i < whole; i += 4) {
    const quad =
      (sextet(text, i) << 18) |
      (sextet(text, i + 1) << 12) |
      (sextet(text, i + 2) << 6) |
      sextet(text, i + 3);
    // A character outside the alphabet is -1, which sets the sign bit.
    if (quad < 0) return undefined;
    bytes[out++] = quad >> 16;
    bytes[out++] = (quad >> 8) & 0xff;
    bytes[out++] = quad & 0xff;
  }
  if (tail > 0) {
    const quad =
      (sextet(text, whole) << 18) |
      (sextet(text, whole + 1) << 12) |
      (tail === 3 ? sextet(text, whole + 2) << 6 : 0);
    if (quad < 0) return undefined;
    bytes[out++] = quad >> 16;
    if (tail === 3) bytes[out] = (quad >> 8) & 0xff;
  }
  return bytes;
}

function sextet(text: string, at: number): number {
  const code = text.charCodeAt(at);
  return code < 128 ? (SEXTETS[code] as number) : -1;
}

/** `length` random bytes from Web Crypto, base64url-encoded. */
export function randomToken(length = 32): string {
  return base64url(crypto.getRandomValues(new Uint8Array(length)));
}
