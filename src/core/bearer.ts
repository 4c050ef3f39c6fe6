const BEARER = /^bearer +([A-Za-z0-9._~+/-]+=*) *$/i;

/**
 * The bearer token of `Authorization` (RFC 6750 §2.1), `null` when none is
 * presented, `undefined` when the header says Bearer but is malformed.
 */
export function bearerToken(request: Request): string | null | undefined {
  const header = request.headers.get("authorization");
  if (header === null || !/^bearer(?: |$)/i.test(header)) return null;
  return BEARER.exec(header)?.[1];
}
