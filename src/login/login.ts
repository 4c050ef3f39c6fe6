import { createAuthentication } from "../core/authentication.ts";
import {
  mediaTypeOf,
  readFormBody,
  readJsonBody,
  readRequestBody,
  type TypedBody,
} from "../core/body.ts";
import type { ContextSource } from "../core/context.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { directLeg, type Middleware } from "../core/handler.ts";
import { bodyLimitOption, rejectUnknownKeys } from "../core/options.ts";
import { matchPath } from "../core/path.ts";
import { problemResponse, unreadableBodyResponse } from "../core/problem.ts";
import { sameOriginPath } from "../core/redirect.ts";
import { csrfTokenVerified } from "../csrf/csrf.ts";
import { type Session, sessionFrom } from "../session/index.ts";
import {
  type LoginUser,
  MAX_PASSWORD_LENGTH,
  MAX_USERNAME_LENGTH,
  mustPasswordCredentials,
  type PasswordCredentials,
  refusedResponse,
} from "./credentials.ts";
import { LoginEndpoint } from "./endpoint.ts";

/**
 * Options of `login`.
 *
 * @example
 * ```ts
 * import { login, newHandler, passwordCredentials } from "portcullis";
 *
 * const credentials = passwordCredentials({ findUser: (name) => users.get(name) });
 * const handler = newHandler(app.fetch, {
 *   // Form posts are redirected; JSON clients still get 200, 401 and 204.
 *   login: login({ credentials, successRedirect: "/", failureRedirect: "/login?failed" }),
 *   authorization,
 * });
 * ```
 */
export interface LoginOptions {
  /**
   * The users, password encoder and failure throttle: `passwordCredentials({
   * findUser })`. Give `basicAuth` the same object, so both share one budget.
   */
  readonly credentials: PasswordCredentials;
  /**
   * Where `POST` signs in.
   *
   * @default "/login"
   */
  readonly loginPath?: string | undefined;
  /**
   * Where `POST` signs out.
   *
   * @default "/logout"
   */
  readonly logoutPath?: string | undefined;
  /**
   * Where a browser form login goes on success (303); JSON clients get 200 JSON.
   *
   * @default none — 200 JSON for all
   */
  readonly successRedirect?: string | undefined;
  /**
   * Where a failed browser form login goes (303).
   *
   * @default none — 401 problem details
   */
  readonly failureRedirect?: string | undefined;
  /**
   * Where a browser form logout goes (303).
   *
   * @default none — 204
   */
  readonly logoutRedirect?: string | undefined;
  /**
   * Largest login body accepted, in bytes (413 beyond).
   *
   * @default 8192 (8 KiB)
   */
  readonly maxBodyBytes?: number | undefined;
}

const OPTION_NAMES = [
  "credentials",
  "loginPath",
  "logoutPath",
  "successRedirect",
  "failureRedirect",
  "logoutRedirect",
  "maxBodyBytes",
] as const;

/**
 * The login and logout endpoints (chain leg 6, Go's `WithLogin`): `POST
 * /login` with `username` and `password` as JSON or a form, `POST /logout`.
 * The password check, its throttle and its cost for unknown users are the
 * `credentials`' (see `passwordCredentials`): a throttled attempt gets 429
 * with `Retry-After`, a failing attempt store 503.
 * Mount it with `newChain({ login: login({...}), ... })`: the result is not a
 * middleware, so it cannot be mounted outside the chain.
 */
export function login(options: LoginOptions): LoginEndpoint {
  return new LoginEndpoint(loginLeg(options));
}

function loginLeg(options: LoginOptions): Middleware {
  rejectUnknownKeys("login", options, OPTION_NAMES);
  const credentials = mustPasswordCredentials("login", options?.credentials);
  const loginPath = path("loginPath", options.loginPath ?? "/login");
  const logoutPath = path("logoutPath", options.logoutPath ?? "/logout");
  for (const name of ["successRedirect", "failureRedirect", "logoutRedirect"] as const) {
    const target = options[name];
    if (target !== undefined && !/^\/(?![/\\])[\x21-\x7e]*$/.test(target)) {
      throw new InvalidOptionsError(
        `login: ${name} must be a same-site path starting with a single "/"`,
      );
    }
  }
  const maxBodyBytes = bodyLimitOption("login", options.maxBodyBytes, 8 * 1024, 1);

  // Every other request is handed on within the call; only the two endpoints wait on anything.
  return directLeg((next) => (request, ...rest) => {
    if (request.method.toUpperCase() !== "POST") return next(request, ...rest);
    const path = matchPath(request);
    if (path !== loginPath && path !== logoutPath) return next(request, ...rest);
    return endpoint(request, path);
  });

  async function endpoint(request: Request, path: string): Promise<Response> {
    const session = sessionFrom(request);
    if (session === undefined)
      throw new InvalidOptionsError("login needs the session leg in the chain");
    // Whatever the CSRF leg's alwaysProtect says: a sign-in or sign-out is never forged.
    if (!csrfTokenVerified(request))
      return problemResponse(403, { detail: "A session and a CSRF token are required." });
    const form = isForm(request);

    if (path === logoutPath) {
      await session.destroy();
      return form && options.logoutRedirect
        ? redirect(options.logoutRedirect)
        : new Response(null, { status: 204 });
    }

    const presented = await readCredentials(request, maxBodyBytes);
    if (presented instanceof Response) return presented;
    // Settled before anything is saved: a sign-in must not be stored and then fail to answer.
    // A form may carry `next`, the page the visitor was sent away from; only a path on this site.
    const back = form ? sameOriginPath(presented.next) : undefined;
    const check = await credentials.check(request, presented.username, presented.password);
    if (check.outcome === "throttled" || check.outcome === "unavailable")
      return refusedResponse(check);
    if (check.outcome === "rejected") {
      return form && options.failureRedirect
        ? redirect(options.failureRedirect)
        : problemResponse(401, { detail: "Bad credentials." });
    }
    const { user } = check;
    await signIn(session, user);
    if (back !== undefined) return redirect(back);
    if (form && options.successRedirect) return redirect(options.successRedirect);
    return Response.json(
      { name: user.name, authorities: user.authorities },
      { headers: { "cache-control": "no-store" } },
    );
  }
}

/** Where the session keeps when its human last signed in (epoch ms). */
const SIGNED_IN_AT = "portcullis.signedInAt";

/**
 * When the signed-in human of this request's session last signed in (epoch
 * ms), or `undefined`: pages that approve something may ask for a recent one.
 */
export function signedInAt(source: ContextSource): number | undefined {
  const session = sessionFrom(source);
  if (session?.authentication === undefined) return undefined;
  const at = session.get<number>(SIGNED_IN_AT);
  return typeof at === "number" ? at : undefined;
}

async function signIn(session: Session, user: LoginUser): Promise<void> {
  session.setAuthentication(createAuthentication(user.name, user.authorities));
  session.set(SIGNED_IN_AT, Date.now());
  // Rotate even when the same user signs in again: the id the browser held before login never survives it.
  session.regenerate();
  await session.save();
}

function isForm(request: Request): boolean {
  const type = mediaTypeOf(request);
  return type === "application/x-www-form-urlencoded" || type === "multipart/form-data";
}

async function readCredentials(
  request: Request,
  maxBytes: number,
): Promise<{ username: string; password: string; next?: string } | Response> {
  const type = mediaTypeOf(request);
  if (
    type !== "application/json" &&
    type !== "application/x-www-form-urlencoded" &&
    type !== "multipart/form-data"
  ) {
    return problemResponse(415, { detail: "Send the credentials as JSON or as a form." });
  }
  const fields = await readLoginFields(request, type, maxBytes);
  if (!fields.ok) {
    if (fields.failure === "too_large") return problemResponse(413);
    if (fields.failure === "unreadable") return unreadableBodyResponse();
    return problemResponse(400, { detail: "The login body is malformed." });
  }
  const { username, password, next } = fields.value;
  if (
    typeof username !== "string" ||
    typeof password !== "string" ||
    username === "" ||
    password === ""
  ) {
    return problemResponse(400, { detail: "username and password are required strings." });
  }
  if (username.length > MAX_USERNAME_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    return problemResponse(400, { detail: "username or password is too long." });
  }
  return { username, password, ...(typeof next === "string" ? { next } : {}) };
}

interface LoginFields {
  readonly username: unknown;
  readonly password: unknown;
  readonly next?: unknown;
}

/** The credential fields of a JSON, form or multipart body (the type already checked). */
async function readLoginFields(
  request: Request,
  type: string,
  maxBytes: number,
): Promise<TypedBody<LoginFields>> {
  if (type === "application/json") {
    const body = await readJsonBody(request, maxBytes);
    if (!body.ok) return body;
    if (typeof body.value !== "object" || body.value === null)
      return { ok: false, failure: "malformed" };
    const { username, password } = body.value as Record<string, unknown>;
    return { ok: true, value: { username, password } };
  }
  if (type === "application/x-www-form-urlencoded") {
    const form = await readFormBody(request, maxBytes);
    return form.ok ? { ok: true, value: formFields(form.value) } : form;
  }
  const read = await readRequestBody(request, maxBytes);
  if (read.outcome !== "read") return { ok: false, failure: read.outcome };
  try {
    const form = await new Response(read.bytes as Uint8Array<ArrayBuffer>, {
      headers: { "content-type": request.headers.get("content-type") as string },
    }).formData();
    return { ok: true, value: formFields(form) };
  } catch {
    return { ok: false, failure: "malformed" };
  }
}

function formFields(form: { get(name: string): unknown }): LoginFields {
  return { username: form.get("username"), password: form.get("password"), next: form.get("next") };
}

function redirect(location: string): Response {
  return new Response(null, { status: 303, headers: { location, "cache-control": "no-store" } });
}

function path(option: string, value: string): string {
  if (typeof value !== "string" || !/^\/[A-Za-z0-9._~/-]*$/.test(value))
    throw new InvalidOptionsError(`login: ${option} must be a plain path`);
  return value.toLowerCase().replace(/\/+$/, "") || "/";
}
