import { bindValue, type ContextSource, contextFrom, createContextKey } from "./context.ts";
import { problemResponse } from "./problem.ts";

/**
 * The `WWW-Authenticate` challenges of the authenticators in front of this
 * request. A 401 offers each of them, so a client learns how it may sign in.
 */
export const CHALLENGES = createContextKey<readonly string[]>("portcullis.challenges");

/** Used when no authenticator registered a challenge (cookie sessions have no registered scheme). */
export const DEFAULT_CHALLENGE = 'Session realm="portcullis"';

/** Adds a challenge for the authenticators behind this point of the chain. */
export function addChallenge(request: object, challenge: string): void {
  const current = contextFrom(request).get(CHALLENGES) ?? [];
  if (!current.includes(challenge)) bindValue(request, CHALLENGES, [...current, challenge]);
}

/** A 401 problem response carrying every challenge registered for `source`. */
export function unauthorizedResponse(
  source: ContextSource,
  fallbackChallenge = DEFAULT_CHALLENGE,
): Response {
  const challenges = contextFrom(source).get(CHALLENGES);
  const headers = new Headers();
  if (challenges === undefined || challenges.length === 0) {
    headers.set("www-authenticate", fallbackChallenge);
  } else {
    for (const challenge of challenges) headers.append("www-authenticate", challenge);
  }
  return problemResponse(401, { headers });
}

/** A 403 problem response. */
export function forbiddenResponse(): Response {
  return problemResponse(403);
}

/**
 * One `WWW-Authenticate` challenge (RFC 9110 §11.6.1): the scheme, then each
 * auth-param that has a value, in the order given, as a quoted-string. Every
 * challenge the library sends is written here.
 */
export function challenge(
  scheme: string,
  params: Readonly<Record<string, string | undefined>> = {},
): string {
  const written: string[] = [];
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) written.push(`${name}=${quotedString(value)}`);
  return written.length === 0 ? scheme : `${scheme} ${written.join(", ")}`;
}

/** Quotes `value` as an RFC 9110 quoted-string; throws on characters no quoted-string may carry. */
export function quotedString(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point.
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) {
    throw new TypeError("a quoted-string cannot carry control characters");
  }
  return `"${value.replace(/[\\"]/g, "\\$&")}"`;
}
