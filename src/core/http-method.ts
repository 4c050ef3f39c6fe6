import { InvalidOptionsError } from "./errors.ts";

/** The methods of RFC 9110 and PATCH (RFC 5789): the ones a rule may name without declaring them. */
export const STANDARD_METHODS: readonly string[] = Object.freeze([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "DELETE",
  "CONNECT",
  "OPTIONS",
  "TRACE",
  "PATCH",
]);

// RFC 9110 §9.1: a method is a token.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Whether `method` has the syntax of a method (an RFC 9110 token). */
export function isMethodToken(method: unknown): method is string {
  return typeof method === "string" && TOKEN.test(method);
}

/**
 * The extension methods an option declares (`["PROPFIND"]`): tokens in upper
 * case, since request methods are compared upper-cased.
 */
export function declaredMethods(where: string, declared: unknown): ReadonlySet<string> {
  if (declared === undefined) return new Set();
  if (!Array.isArray(declared))
    throw new InvalidOptionsError(`${where}: extensionMethods must be an array of method names`);
  for (const method of declared as unknown[]) {
    if (!isMethodToken(method) || method !== method.toUpperCase()) {
      throw new InvalidOptionsError(
        `${where}: extensionMethods holds ${JSON.stringify(method)}, which is not a method name in upper case`,
      );
    }
  }
  return new Set(declared as string[]);
}

/**
 * Why a rule may not name `method`, with what to write instead, or `undefined`
 * when it is a standard method or one of `declared`. A misspelt method would
 * make its rule never apply, and the requests it meant fall to a later rule.
 */
export function methodProblem(
  where: string,
  method: string,
  declared: ReadonlySet<string>,
): string | undefined {
  if (STANDARD_METHODS.includes(method) || declared.has(method)) return undefined;
  const quoted = JSON.stringify(method);
  const upper = method.toUpperCase();
  if (upper !== method && (STANDARD_METHODS.includes(upper) || declared.has(upper))) {
    return `${where}: methods are compared in upper case, so ${quoted} could never match: write "${upper}"`;
  }
  const near = STANDARD_METHODS.find((m) => distance(m, upper) <= 2);
  const declare = `declare it: { extensionMethods: ["${upper}"] }`;
  if (near !== undefined) {
    return `${where}: ${quoted} is not an HTTP method of RFC 9110: write "${near}", or if ${quoted} is an extension method your server handles, ${declare}`;
  }
  return `${where}: ${quoted} is neither a method of RFC 9110 nor PATCH (${STANDARD_METHODS.join(", ")}); if it is an extension method your server handles, ${declare}${upper === method ? "" : ` and write "${upper}"`}`;
}

/** Levenshtein distance; both strings are short method names. */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      next[j] = Math.min(
        (row[j] as number) + 1,
        (next[j - 1] as number) + 1,
        (row[j - 1] as number) + cost,
      );
    }
    row = next;
  }
  return row[b.length] as number;
}

/** 405 with `Allow` (RFC 9110 §15.5.6), for a method an endpoint does not serve; never cached. */
export function methodNotAllowed(allow: string): Response {
  return new Response(null, { status: 405, headers: { allow, "cache-control": "no-store" } });
}

/** `methodNotAllowed` naming `allowed` unless the request's method is one of them; else `undefined`. */
export function refuseOtherMethods(
  request: Request,
  allowed: readonly string[],
): Response | undefined {
  return allowed.includes(request.method) ? undefined : methodNotAllowed(allowed.join(", "));
}
