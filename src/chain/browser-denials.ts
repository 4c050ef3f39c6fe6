import { InvalidOptionsError } from "../core/errors.ts";
import { directLeg, type Middleware, onAnswer } from "../core/handler.ts";
import { html, htmlResponse } from "../core/html.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { sameOriginPath } from "../core/redirect.ts";
import { droppedCookieNote } from "../session/sessions.ts";

/**
 * Options of `browserDenials`, usually given to the chain as `browserDenials: {...}`.
 *
 * @example
 * ```ts
 * import { newHandler } from "portcullis";
 *
 * const handler = newHandler(app.fetch, {
 *   authorization,
 *   browserDenials: {
 *     signInPath: "/login",
 *     forbiddenPage: () =>
 *       new Response("<h1>Not for your account</h1>", {
 *         status: 403,
 *         headers: { "content-type": "text/html; charset=utf-8" },
 *       }),
 *   },
 * });
 * ```
 */
export interface BrowserDenialOptions {
  /** Where a browser that is not signed in is sent, with `?next=<the page>`. */
  readonly signInPath: string;
  /**
   * The page a signed-in browser gets for a 403.
   *
   * @default a short HTML page with a link home; outside production
   * (`NODE_ENV` is not `"production"`) it also says when the browser dropped
   * a `Secure` session cookie on plain HTTP, the usual reason a sign-in form
   * is refused in development
   */
  readonly forbiddenPage?: (request: Request) => Response | Promise<Response>;
}

/**
 * For page navigations only, turns the chain's 401 into a 303 to the sign-in
 * page (with `next`, for a GET) and its 403 into an HTML page. API clients
 * (no navigation) keep the problem JSON and the `WWW-Authenticate` challenge.
 */
export function browserDenials(options: BrowserDenialOptions): Middleware {
  rejectUnknownKeys("browserDenials", options, ["signInPath", "forbiddenPage"]);
  const signInPath = sameOriginPath(options?.signInPath);
  if (signInPath === undefined || signInPath.includes("?"))
    throw new InvalidOptionsError(
      "browserDenials: signInPath must be a path on this site, like /login",
    );
  if (options.forbiddenPage !== undefined && typeof options.forbiddenPage !== "function")
    throw new InvalidOptionsError("browserDenials: forbiddenPage must be a function");
  const forbiddenPage = options.forbiddenPage ?? defaultForbiddenPage;
  return directLeg(
    (next) =>
      (request, ...rest) =>
        onAnswer(next(request, ...rest), (response) => {
          if (response.status !== 401 && response.status !== 403) return response;
          if (!isNavigation(request) || !isProblem(response)) return response;
          if (response.status === 403) return forbiddenPage(request);
          const url = new URL(request.url);
          if (url.pathname === signInPath) return response;
          const back =
            request.method === "GET" ? sameOriginPath(url.pathname + url.search) : undefined;
          const location =
            back === undefined ? signInPath : `${signInPath}?next=${encodeURIComponent(back)}`;
          return new Response(null, {
            status: 303,
            headers: { location, "cache-control": "no-store", vary: "Sec-Fetch-Mode, Accept" },
          });
        }),
  );
}

/** A top-level page load: Fetch Metadata says so, or, without it, the client asks for HTML. */
export function isNavigation(request: Request): boolean {
  const mode = request.headers.get("sec-fetch-mode");
  if (mode !== null) return mode === "navigate";
  return (request.headers.get("accept") ?? "").includes("text/html");
}

function isProblem(response: Response): boolean {
  return (response.headers.get("content-type") ?? "").startsWith("application/problem+json");
}

function defaultForbiddenPage(request: Request): Response {
  const note = droppedCookieNote(request);
  const why =
    note === undefined
      ? html`<p>Your account may not open this page.</p>`
      : html`<p>This request came without a session. ${note}</p>`;
  return htmlResponse(
    html`<!doctype html><html lang="en"><meta charset="utf-8"><title>Not allowed</title><h1>Not allowed</h1>${why}<p><a href="/">Back to the start page</a></p></html>`,
    { status: 403 },
  );
}
