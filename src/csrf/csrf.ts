import { bindValue, type ContextSource, contextFrom, createContextKey } from "../core/context.ts";
import { InvalidOptionsError, PortcullisError } from "../core/errors.ts";
import { formField, isUnreadableForm } from "../core/form.ts";
import { directLeg, type FetchHandler, type Middleware } from "../core/handler.ts";
import { OVERRIDE_FORM_BYTES, overrideMethodsWithForm } from "../core/method-override.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { parseOrigin } from "../core/origin.ts";
import { matchPath } from "../core/path.ts";
import { compilePattern, type PathMatcher } from "../core/pattern.ts";
import { problemResponse, unreadableBodyResponse } from "../core/problem.ts";
import { sessionFrom } from "../session/index.ts";
import { droppedCookieNote } from "../session/sessions.ts";
import { issueToken, verifyToken } from "./token.ts";

/**
 * Options of `csrf`.
 *
 * @example
 * ```ts
 * import { csrf, newHandler } from "portcullis";
 *
 * const handler = newHandler(app.fetch, {
 *   csrf: csrf({
 *     trustedOrigins: ["https://app.example.com"], // a front end on another origin
 *     alwaysProtect: ["/login", "/logout", "/signup"],
 *   }),
 *   authorization,
 * });
 * ```
 */
export interface CsrfOptions {
  /**
   * Request header carrying the token.
   *
   * @default "x-csrf-token"
   */
  readonly headerName?: string | undefined;
  /**
   * Form field carrying the token (urlencoded and multipart bodies).
   *
   * @default "_csrf"
   */
  readonly parameterName?: string | undefined;
  /**
   * Path of the token endpoint answering `GET` with JSON, served when the session
   * leg runs; `false` mounts none.
   *
   * @default "/csrf"
   */
  readonly tokenPath?: string | false | undefined;
  /**
   * Origins other than the server's own that may send state-changing requests,
   * exact (`https://app.example.com`). Never derived from forwarded headers:
   * behind a TLS-terminating proxy, list the public origin.
   *
   * @default none — only the server's own origin
   */
  readonly trustedOrigins?: readonly string[] | undefined;
  /**
   * Path patterns that need a session and a token even when the request brings
   * no session cookie, so nobody can be signed in or out by another site.
   *
   * @default ["/login", "/logout"]
   */
  readonly alwaysProtect?: readonly string[] | undefined;
  /**
   * Largest form body searched for the token field, in bytes.
   *
   * @default 65_536 (64 KiB)
   */
  readonly maxFormBytes?: number | undefined;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS", "TRACE"]);

/**
 * CSRF protection (chain leg 5). Every method but GET, HEAD, OPTIONS and TRACE
 * is checked, whatever its case or content type:
 * 1. Fetch Metadata and `Origin`: a cross-site or same-site browser request is
 *    refused unless its origin is trusted;
 * 2. a synchronizer token bound to the session, from the header or form field,
 *    for requests that carry a session cookie and for `alwaysProtect` paths.
 * Requests without a session cookie (bearer-token or API-key calls) skip step
 * 2: a forged cross-site request cannot attach a bearer token, and there is no
 * session it could ride on.
 */
export function csrf(options: CsrfOptions = {}): Middleware {
  rejectUnknownKeys("csrf", options, [
    "headerName",
    "parameterName",
    "tokenPath",
    "trustedOrigins",
    "alwaysProtect",
    "maxFormBytes",
  ]);
  const headerName = headerToken("headerName", options.headerName ?? "x-csrf-token");
  const parameterName = options.parameterName ?? "_csrf";
  if (typeof parameterName !== "string" || parameterName === "")
    throw new InvalidOptionsError("csrf: parameterName must be a non-empty string");
  const tokenPath = options.tokenPath ?? "/csrf";
  const tokenPathMatches = tokenPath === false ? undefined : compilePattern(tokenPath);
  const trusted = new Set(
    (options.trustedOrigins ?? []).map((origin) => parseOrigin("csrf: trustedOrigins", origin)),
  );
  const protectedPaths: PathMatcher[] = (options.alwaysProtect ?? ["/login", "/logout"]).map((p) =>
    compilePattern(p),
  );
  const maxFormBytes = options.maxFormBytes ?? 64 * 1024;
  if (!Number.isSafeInteger(maxFormBytes) || maxFormBytes < 0)
    throw new InvalidOptionsError("csrf: maxFormBytes must be a non-negative integer");

  // Not an async function: a safe request that asks for nothing more (most of them) is handed
  // on with no promise of this leg's own; everything else goes through `check`.
  return directLeg((next) => (request, ...rest) => {
    try {
      const method = request.method.toUpperCase();
      const found = SAFE_METHODS.has(method) ? asksForUnsafeMethod(request) : true;
      if (found !== false || (method === "GET" && asksForToken(request)))
        return check(next, request, rest, method, found);
      return next(request, ...rest);
    } catch (error) {
      return Promise.reject(error);
    }
  });

  function asksForToken(request: Request): boolean {
    return (
      tokenPathMatches?.(matchPath(request) ?? "") === true && sessionFrom(request) !== undefined
    );
  }

  async function check(
    next: FetchHandler,
    request: Request,
    rest: unknown[],
    method: string,
    found: boolean | Promise<boolean | "unreadable">,
  ): Promise<Response> {
    const asks = found instanceof Promise ? await found : found;
    if (asks === "unreadable") return unreadableBodyResponse();
    if (!asks) {
      // Without a session leg there is nothing to bind a token to: the path is the app's.
      if (
        tokenPathMatches !== undefined &&
        method === "GET" &&
        tokenPathMatches(matchPath(request) ?? "") &&
        sessionFrom(request) !== undefined
      ) {
        const token = await csrfToken(request);
        return Response.json(
          { token, headerName, parameterName },
          { headers: { "cache-control": "no-store" } },
        );
      }
      return next(request, ...rest);
    }
    if (!originAllowed(request, trusted)) return refuse("The request's origin is not allowed.");
    const session = sessionFrom(request);
    const path = matchPath(request) ?? "";
    const needsToken =
      session?.fromCookie === true || protectedPaths.some((matches) => matches(path));
    if (!needsToken) return next(request, ...rest);
    // The id the cookie carried, stored or not: a visitor who only fetched a token holds one.
    const id = session?.fromCookie === true ? session.id : undefined;
    if (session === undefined || id === undefined) {
      const note = droppedCookieNote(request);
      return refuse(
        `A session and a CSRF token are required.${note === undefined ? "" : ` ${note}`}`,
      );
    }
    const token =
      request.headers.get(headerName) ?? (await formField(request, parameterName, maxFormBytes));
    if (isUnreadableForm(token)) return unreadableBodyResponse();
    if (token === undefined || token === null || !(await verifyToken(session, id, token))) {
      return refuse("The CSRF token is missing or invalid.");
    }
    bindValue(request, TOKEN_VERIFIED, true);
    return next(request, ...rest);
  }
}

/**
 * A CSRF token for the request's session, for pages that render forms. A
 * visitor without a session gets an id (and its cookie) to bind the token to;
 * nothing is written to the store for it, so a flood of token requests costs
 * the store nothing.
 */
export async function csrfToken(source: ContextSource): Promise<string> {
  const session = sessionFrom(source);
  if (session === undefined)
    throw new PortcullisError("csrf tokens need the session leg in the chain");
  return issueToken(session, await session.ensureId());
}

// Set when this request's CSRF token was checked and held.
const TOKEN_VERIFIED = createContextKey<true>("portcullis.csrf.verified");

/**
 * Whether the CSRF leg checked this request's token and it held. The login
 * endpoint asks, so it stays guarded whatever paths `alwaysProtect` lists.
 */
export function csrfTokenVerified(source: ContextSource): boolean {
  return contextFrom(source).get(TOKEN_VERIFIED) === true;
}

function refuse(detail: string): Response {
  return problemResponse(403, { detail });
}

/**
 * A safe method whose override header, `_method` parameter or `_method` form
 * field asks for another method is treated as unsafe. A promise only when
 * there is a body to read.
 */
function asksForUnsafeMethod(request: Request): boolean | Promise<boolean | "unreadable"> {
  const unsafe = (methods: string[]) => methods.some((method) => !SAFE_METHODS.has(method));
  const found = overrideMethodsWithForm(request, OVERRIDE_FORM_BYTES);
  return found instanceof Promise
    ? found.then((methods) => (Array.isArray(methods) ? unsafe(methods) : "unreadable"))
    : unsafe(found);
}

function originAllowed(request: Request, trusted: ReadonlySet<string>): boolean {
  const site = request.headers.get("sec-fetch-site");
  const origin = request.headers.get("origin");
  if (site === "same-origin" || site === "none") return true;
  if (site === "same-site" || site === "cross-site")
    return origin !== null && trusted.has(origin.toLowerCase());
  if (site !== null) return false;
  if (origin === null) return true; // not a browser, or an old one: the token check decides
  const lower = origin.toLowerCase();
  return lower !== "null" && (lower === new URL(request.url).origin || trusted.has(lower));
}

function headerToken(option: string, value: string): string {
  if (typeof value !== "string" || !/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(value)) {
    throw new InvalidOptionsError(`csrf: ${option} must be a header name`);
  }
  return value.toLowerCase();
}
