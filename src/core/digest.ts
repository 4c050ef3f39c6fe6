import { base64url } from "./encoding.ts";

const encoder = new TextEncoder();

/** SHA-256 of `value` (a string is UTF-8 encoded first), on Web Crypto. */
export async function sha256(value: string | Uint8Array): Promise<Uint8Array> {
  const bytes = typeof value === "string" ? encoder.encode(value) : value;
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}

/** SHA-256 of `text`, base64url without padding: how stores key a secret they must not hold. */
export async function sha256Base64url(text: string): Promise<string> {
  return base64url(await sha256(text));
}

/** SHA-256 of `text`, lower-case hex. */
export async function sha256Hex(text: string): Promise<string> {
  let hex = "";
  for (const byte of await sha256(text)) hex += byte.toString(16).padStart(2, "0");
  return hex;
}
