import { sha256Base64url } from "../core/digest.ts";
import { timingSafeEqual } from "../core/timing-safe.ts";

/**
 * PKCE (RFC 7636), S256 only: `plain` would hand the verifier to anyone who
 * sees the authorization request (OAuth 2.1 §4.1.1, RFC 9700 §2.1.1).
 */

/** A S256 `code_challenge`: base64url of a SHA-256 digest, 43 characters. */
export function isCodeChallenge(value: unknown): value is string {
  return typeof value === "string" && /^[A-Za-z0-9_-]{43}$/.test(value);
}

/** A `code_verifier`: 43 to 128 unreserved characters (RFC 7636 §4.1). */
export function isCodeVerifier(value: unknown): value is string {
  return typeof value === "string" && /^[A-Za-z0-9._~-]{43,128}$/.test(value);
}

/** Whether `verifier` hashes to `challenge`, compared in constant time. */
export async function verifierMatches(verifier: unknown, challenge: string): Promise<boolean> {
  if (!isCodeVerifier(verifier)) return false;
  return timingSafeEqual(await sha256Base64url(verifier), challenge);
}
