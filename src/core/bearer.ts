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

const BEARER_OR_DPOP = /^(?:bearer|dpop) +([A-Za-z0-9._~+/-]+=*) *$/i;

/**
 * The token of `Authorization` under `Bearer` or `DPoP` (RFC 9449 §7.1), `null`
 * when neither scheme is presented, `undefined` when the header is malformed.
 */
export function bearerOrDpopToken(request: Request): string | null | undefined {
  const header = request.headers.get("authorization");
  if (header === null || !/^(?:bearer|dpop)(?: |$)/i.test(header)) return null;
  return BEARER_OR_DPOP.exec(header)?.[1];
}
