/** The largest `DPoP` header accepted, in bytes; longer ones are refused before parsing. */
export const MAX_DPOP_PROOF_BYTES = 4096;

/**
 * The `DPoP` header (RFC 9449 §4.3): `null` when absent, `undefined` when
 * repeated or longer than `MAX_DPOP_PROOF_BYTES`. One home for the token
 * endpoint and the resource side alike.
 */
export function dpopHeader(request: Request): string | null | undefined {
  const value = request.headers.get("dpop");
  if (value === null) return null;
  // Repeated headers arrive joined by commas, which no compact JWS contains.
  if (value.length > MAX_DPOP_PROOF_BYTES || value.includes(",")) return undefined;
  return value;
}
