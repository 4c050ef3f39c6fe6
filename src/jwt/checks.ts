import { fromBase64url } from "../core/encoding.ts";
import { InvalidOptionsError } from "../core/errors.ts";

// A media-type-like name: what `typ` must look like to say what a token is for.
const TYP = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;

export function checkTyp(where: string, typ: unknown): string {
  if (typeof typ !== "string" || !TYP.test(typ) || typ.toLowerCase() === "jwt")
    throw new InvalidOptionsError(
      `${where}: typ must name what the token is for (e.g. "example+jwt"), not be generic`,
    );
  return typ;
}

export function checkIssuer(where: string, issuer: unknown): string {
  if (typeof issuer !== "string" || !URL.canParse(issuer))
    throw new InvalidOptionsError(`${where}: issuer must be an absolute URL`);
  return issuer;
}

export function positiveSeconds(where: string, name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 31_536_000)
    throw new InvalidOptionsError(`${where}: ${name} must be a whole number of seconds, 1 or more`);
  return value;
}

const SEGMENT = /^[A-Za-z0-9_-]+$/;

/**
 * The protected header of a compact JWS (three base64url segments), parsed as
 * a JSON object; anything else calls `fail`.
 */
export function compactJwsHeader(
  token: string,
  fail: (message: string, cause?: unknown) => never,
): Record<string, unknown> {
  const segments = token.split(".");
  if (segments.length !== 3 || !segments.every((part) => SEGMENT.test(part)))
    fail("the token is not a compact JWS");
  const bytes = fromBase64url(segments[0] as string);
  if (bytes === undefined) fail("the header is not base64url");
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (error) {
    fail("the header is not JSON", error);
  }
  if (typeof header !== "object" || header === null || Array.isArray(header))
    fail("the header is not a JSON object");
  return header as Record<string, unknown>;
}
