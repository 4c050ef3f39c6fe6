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
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A compact JWS split in its three segments, with its protected header parsed.
 * Made only by `compactJws`: every segment is base64url (A-Z, a-z, 0-9, `-`,
 * `_`), which the signature checks rely on.
 */
export interface CompactJws {
  readonly header: Record<string, unknown>;
  /** The base64url payload segment. */
  readonly payload: string;
  /** The base64url signature segment. */
  readonly signature: string;
  /** Where the signing input (`header.payload`) ends. */
  readonly signedLength: number;
}

/**
 * The last protected header a reader parsed, by its exact encoding: one
 * issuer's tokens share a header, so it is parsed once, not per token. Only
 * for a caller that never changes the header it is handed.
 */
export interface HeaderMemo {
  encoded: string;
  header: Readonly<Record<string, unknown>>;
}

/**
 * A compact JWS (three base64url segments) whose protected header is a JSON
 * object; anything else calls `fail`. With `memo`, a header encoded exactly as
 * the last one is not parsed again.
 */
export function compactJws(
  token: string,
  fail: (message: string, cause?: unknown) => never,
  memo?: HeaderMemo,
): CompactJws {
  const segments = token.split(".");
  if (segments.length !== 3 || !segments.every((part) => SEGMENT.test(part)))
    fail("the token is not a compact JWS");
  const [encodedHeader, payload, signature] = segments as [string, string, string];
  let header: Record<string, unknown>;
  if (memo !== undefined && memo.encoded === encodedHeader) header = memo.header;
  else {
    header = jsonObject(fromBase64url(encodedHeader), "header", fail);
    if (memo !== undefined) {
      memo.encoded = encodedHeader;
      memo.header = header;
    }
  }
  return { header, payload, signature, signedLength: encodedHeader.length + 1 + payload.length };
}

/** The protected header of a compact JWS, as `compactJws` reads it. */
export function compactJwsHeader(
  token: string,
  fail: (message: string, cause?: unknown) => never,
): Record<string, unknown> {
  return compactJws(token, fail).header;
}

/** Bytes read as strict UTF-8 JSON that must be an object; anything else calls `fail`. */
export function jsonObject(
  bytes: Uint8Array | undefined,
  what: string,
  fail: (message: string, cause?: unknown) => never,
): Record<string, unknown> {
  if (bytes === undefined) fail(`the ${what} is not base64url`);
  let value: unknown;
  try {
    value = JSON.parse(STRICT_UTF8.decode(bytes));
  } catch (error) {
    fail(`the ${what} is not JSON`, error);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    fail(`the ${what} is not a JSON object`);
  return value as Record<string, unknown>;
}
