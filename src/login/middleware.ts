import { createAuthentication } from "../core/authentication.ts";
import { readAtMost } from "../core/body.ts";
import { clientAddressOf, resolveClientAddress } from "../core/client-address.ts";
import { randomToken } from "../core/encoding.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Middleware } from "../core/handler.ts";
import { matchPath } from "../core/path.ts";
import { problemResponse } from "../core/problem.ts";
import { type Session, sessionFrom } from "../session/session.ts";
import { type LoginAttemptStore, MemoryLoginAttemptStore } from "./attempts.ts";
import { LoginEndpoint } from "./endpoint.ts";
import { createPasswordEncoder, type PasswordEncoder } from "./password-encoder.ts";

/** A user as the login endpoint looks it up. */
export interface LoginUser {
  readonly name: string;
  readonly authorities: readonly string[];
  /** An encoded hash such as `{scrypt}ln=15,r=8,p=3$…$…`. */
  readonly passwordHash: string;
}

export interface LoginThrottleOptions {
  /** Failures per username before further attempts are refused. Default 5. */
  readonly maxFailuresPerUser?: number;
  /** Failures per client before further attempts are refused. Default 20. */
  readonly maxFailuresPerClient?: number;
  /** How long failures are remembered. Default 15 minutes. */
  readonly windowMs?: number;
  /**
   * Default: a `MemoryLoginAttemptStore` (one process). Behind a load balancer
   * use a shared one, such as `RedisLoginAttemptStore`, or each instance grants
   * its own allowance.
   */
  readonly store?: LoginAttemptStore;
  /**
   * Told about every failure of the store. Sign-in then answers 503 rather than
   * going on unthrottled. Default: `console.error`.
   */
  readonly onStoreError?: (error: unknown) => void;
}

export interface LoginOptions {
  /** Looks a user up by the submitted username; `undefined` when there is none. */
  readonly findUser: (username: string) => LoginUser | undefined | Promise<LoginUser | undefined>;
  /** Default: `createPasswordEncoder()` (scrypt, also verifies PBKDF2-SHA256 hashes). */
  readonly passwordEncoder?: PasswordEncoder;
  /** Called after a successful login whose stored hash is outdated, with a fresh hash to store. */
  readonly onPasswordUpgrade?: (user: LoginUser, passwordHash: string) => void | Promise<void>;
  /** Default `"/login"`. */
  readonly loginPath?: string;
  /** Default `"/logout"`. */
  readonly logoutPath?: string;
  /** Where a browser form login goes on success (303); JSON clients get 200 JSON. Default none: 200 JSON for all. */
  readonly successRedirect?: string;
  /** Where a failed browser form login goes (303). Default none: 401 problem details. */
  readonly failureRedirect?: string;
  /** Where a browser form logout goes (303). Default none: 204. */
  readonly logoutRedirect?: string;
  /** Largest login body accepted (413 beyond). Default 8 KiB. */
  readonly maxBodyBytes?: number;
  /** Failed-login throttling; `false` turns it off. Default on, with the defaults of `LoginThrottleOptions`. */
  readonly throttle?: LoginThrottleOptions | false;
  /** The client key for throttling. Default: the client address the chain resolved. */
  readonly clientKey?: (request: Request) => string | undefined;
  /** Clock, for tests. Default `Date.now`. */
  readonly now?: () => number;
}

const MAX_USERNAME = 256;
const MAX_PASSWORD = 1024;

/**
 * The login and logout endpoints (chain leg 6, Go's `WithLogin`): `POST
 * /login` with `username` and `password` as JSON or a form, `POST /logout`.
 * Unknown users and wrong passwords take the same path and the same time;
 * failures are throttled per username and per client; a success clears the username's counter only.
 * Mount it with `newChain({ login: login({...}), ... })`: the result is not a
 * middleware, so it cannot be mounted outside the chain.
 */
export function login(options: LoginOptions): LoginEndpoint {
  return new LoginEndpoint(loginLeg(options));
}

function loginLeg(options: LoginOptions): Middleware {
  if (typeof options?.findUser !== "function")
    throw new InvalidOptionsError("login needs a findUser function");
  const encoder = options.passwordEncoder ?? createPasswordEncoder();
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
  const maxBodyBytes = options.maxBodyBytes ?? 8 * 1024;
  const throttle =
    options.throttle === false ? undefined : throttleSettings(options.throttle ?? {});
  const clientKey =
    options.clientKey ??
    ((request: Request) => clientAddressOf(request) ?? resolveClientAddress(request));
  const now = options.now ?? Date.now;
  // Checked when the user is unknown, so that path costs what a wrong password costs.
  let dummyHash: Promise<string> | undefined;
  const unknownUserHash = () => {
    dummyHash ??= encoder.hash(randomToken(24));
    return dummyHash;
  };

  return (next) =>
    async (request, ...rest) => {
      if (request.method.toUpperCase() !== "POST") return next(request, ...rest);
      const path = matchPath(request);
      if (path !== loginPath && path !== logoutPath) return next(request, ...rest);
      const session = sessionFrom(request);
      if (session === undefined)
        throw new InvalidOptionsError("login needs the session leg in the chain");
      const form = isForm(request);

      if (path === logoutPath) {
        await session.destroy();
        return form && options.logoutRedirect
          ? redirect(options.logoutRedirect)
          : new Response(null, { status: 204 });
      }

      const credentials = await readCredentials(request, maxBodyBytes);
      if (credentials instanceof Response) return credentials;
      const at = now();
      const keys = throttle ? throttleKeys(credentials.username, clientKey(request)) : [];
      if (throttle) {
        let retryAt: number | undefined;
        try {
          retryAt = await throttledUntil(throttle, keys, at);
        } catch (error) {
          return storeFailed(throttle, error);
        }
        if (retryAt !== undefined) {
          return problemResponse(429, {
            detail: "Too many failed logins; try again later.",
            headers: { "retry-after": String(Math.max(1, Math.ceil((retryAt - at) / 1000))) },
          });
        }
      }

      const user = await options.findUser(credentials.username);
      const hash = user?.passwordHash ?? (await unknownUserHash());
      const ok = (await encoder.verify(credentials.password, hash)) && user !== undefined;
      if (!ok) {
        if (throttle) {
          try {
            await Promise.all(
              keys.map(([key, _max]) => throttle.store.fail(key, throttle.windowMs, at)),
            );
          } catch (error) {
            return storeFailed(throttle, error);
          }
        }
        return form && options.failureRedirect
          ? redirect(options.failureRedirect)
          : problemResponse(401, { detail: "Bad credentials." });
      }
      // Only the username's counter: a client that owns one account must not be able
      // to clear its own failures by signing in between guesses at other accounts.
      if (throttle) {
        try {
          await throttle.store.reset(keys[0]?.[0] as string);
        } catch (error) {
          return storeFailed(throttle, error);
        }
      }
      await signIn(session, user);
      if (options.onPasswordUpgrade !== undefined && encoder.needsRehash(user.passwordHash)) {
        await options.onPasswordUpgrade(user, await encoder.hash(credentials.password));
      }
      if (form && options.successRedirect) return redirect(options.successRedirect);
      return Response.json(
        { name: user.name, authorities: user.authorities },
        { headers: { "cache-control": "no-store" } },
      );
    };
}

async function signIn(session: Session, user: LoginUser): Promise<void> {
  session.setAuthentication(createAuthentication(user.name, user.authorities));
  // Rotate even when the same user signs in again: the id the browser held before login never survives it.
  session.regenerate();
  await session.save();
}

type Throttle = Required<Omit<LoginThrottleOptions, "store" | "onStoreError">> & {
  store: LoginAttemptStore;
  onStoreError: (error: unknown) => void;
};

/** The attempt store failed: sign-in stops rather than going on without throttling. */
function storeFailed(throttle: Throttle, error: unknown): Response {
  try {
    throttle.onStoreError(error);
  } catch {
    // A failing logger must not change the answer.
  }
  return problemResponse(503, { detail: "Sign-in is unavailable; try again later." });
}

function throttleSettings(options: LoginThrottleOptions): Throttle {
  const settings = {
    maxFailuresPerUser: options.maxFailuresPerUser ?? 5,
    maxFailuresPerClient: options.maxFailuresPerClient ?? 20,
    windowMs: options.windowMs ?? 15 * 60_000,
    store: options.store ?? new MemoryLoginAttemptStore(),
    onStoreError:
      options.onStoreError ??
      ((error: unknown) => console.error("portcullis: login-attempt store failed", error)),
  };
  if (typeof settings.onStoreError !== "function")
    throw new InvalidOptionsError("login throttle: onStoreError must be a function");
  const store = settings.store as Partial<LoginAttemptStore> | null;
  if (
    typeof store?.failures !== "function" ||
    typeof store.fail !== "function" ||
    typeof store.reset !== "function"
  )
    throw new InvalidOptionsError("login throttle: store must implement LoginAttemptStore");
  for (const name of ["maxFailuresPerUser", "maxFailuresPerClient", "windowMs"] as const) {
    if (!Number.isSafeInteger(settings[name]) || settings[name] < 1)
      throw new InvalidOptionsError(`login throttle: ${name} must be a positive integer`);
  }
  return settings;
}

function throttleKeys(username: string, client: string | undefined) {
  const keys: Array<[string, "user" | "client"]> = [[`user:${username.toLowerCase()}`, "user"]];
  if (client !== undefined) keys.push([`client:${client}`, "client"]);
  return keys;
}

async function throttledUntil(
  throttle: Throttle,
  keys: ReadonlyArray<[string, "user" | "client"]>,
  at: number,
) {
  let until: number | undefined;
  for (const [key, kind] of keys) {
    const { count, resetAt } = await throttle.store.failures(key, at);
    const max = kind === "user" ? throttle.maxFailuresPerUser : throttle.maxFailuresPerClient;
    if (count >= max) until = Math.max(until ?? 0, resetAt);
  }
  return until;
}

function isForm(request: Request): boolean {
  const type = mediaType(request);
  return type === "application/x-www-form-urlencoded" || type === "multipart/form-data";
}

function mediaType(request: Request): string {
  return (request.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
}

async function readCredentials(
  request: Request,
  maxBytes: number,
): Promise<{ username: string; password: string } | Response> {
  const type = mediaType(request);
  if (
    type !== "application/json" &&
    type !== "application/x-www-form-urlencoded" &&
    type !== "multipart/form-data"
  ) {
    return problemResponse(415, { detail: "Send the credentials as JSON or as a form." });
  }
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > maxBytes) return problemResponse(413);
  const bytes = await readAtMost(request.body, maxBytes);
  if (bytes === undefined) return problemResponse(413);
  let username: unknown;
  let password: unknown;
  try {
    if (type === "application/json") {
      const body = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)) as unknown;
      if (typeof body !== "object" || body === null) throw new TypeError("not an object");
      ({ username, password } = body as Record<string, unknown>);
    } else if (type === "application/x-www-form-urlencoded") {
      const form = new URLSearchParams(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
      username = form.get("username");
      password = form.get("password");
    } else {
      const form = await new Response(bytes as Uint8Array<ArrayBuffer>, {
        headers: { "content-type": request.headers.get("content-type") as string },
      }).formData();
      username = form.get("username");
      password = form.get("password");
    }
  } catch {
    return problemResponse(400, { detail: "The login body is malformed." });
  }
  if (
    typeof username !== "string" ||
    typeof password !== "string" ||
    username === "" ||
    password === ""
  ) {
    return problemResponse(400, { detail: "username and password are required strings." });
  }
  if (username.length > MAX_USERNAME || password.length > MAX_PASSWORD) {
    return problemResponse(400, { detail: "username or password is too long." });
  }
  return { username, password };
}

function redirect(location: string): Response {
  return new Response(null, { status: 303, headers: { location, "cache-control": "no-store" } });
}

function path(option: string, value: string): string {
  if (typeof value !== "string" || !/^\/[A-Za-z0-9._~/-]*$/.test(value))
    throw new InvalidOptionsError(`login: ${option} must be a plain path`);
  return value.toLowerCase().replace(/\/+$/, "") || "/";
}
