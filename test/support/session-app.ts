/**
 * Test support: the session/CSRF/login chain composed the way users compose it,
 * a fake clock, and a client that keeps cookies between requests. Not part of
 * the package (excluded from the build and from `files`).
 */
import * as authz from "../../src/authz/index.ts";
import { newHandler } from "../../src/chain/index.ts";
import { mustAuthentication } from "../../src/core/authentication.ts";
import type { FetchHandler, Handler, Middleware } from "../../src/core/handler.ts";
import { type CsrfOptions, csrf } from "../../src/csrf/index.ts";
import {
  type LoginOptions,
  type LoginUser,
  login,
  type PasswordCredentials,
  type PasswordCredentialsOptions,
  type PasswordEncoder,
  passwordCredentials,
  ScryptPasswordEncoder,
} from "../../src/login/index.ts";
import { MemorySessionStore, type SessionOptions, sessions } from "../../src/session/index.ts";
import { CookieJar } from "./cookie-jar.ts";

export const BASE = "https://app.example";
export const SECURE_COOKIE = "__Host-portcullis-session";
export const START = 1_700_000_000_000;

/** A clock the tests move by hand: no real sleeping for timeouts. */
export interface FakeClock {
  readonly now: () => number;
  advance(ms: number): void;
}

export function fakeClock(start = START): FakeClock {
  let t = start;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
  };
}

/** scrypt cheap enough for tests. */
export function cheapEncoder(): ScryptPasswordEncoder {
  return new ScryptPasswordEncoder({ logN: 10, r: 8, p: 1 });
}

export const PASSWORDS = { alice: "alice-password", ada: "ada-password" } as const;

export async function makeUsers(encoder: PasswordEncoder): Promise<Map<string, LoginUser>> {
  return new Map<string, LoginUser>([
    [
      "alice",
      { name: "alice", authorities: ["USER"], passwordHash: await encoder.hash(PASSWORDS.alice) },
    ],
    [
      "ada",
      { name: "ada", authorities: ["ADMIN"], passwordHash: await encoder.hash(PASSWORDS.ada) },
    ],
  ]);
}

/**
 * The default downstream: `GET /` answers the principal, `/api/**` echoes the
 * request (method, content type and the body as the handler reads it),
 * `/admin/**` and `/public/**` answer a marker.
 */
export const defaultRouter: FetchHandler = async (request) => {
  const path = new URL(request.url).pathname;
  if (path === "/") {
    const me = mustAuthentication(request);
    return Response.json({ name: me.name, authorities: me.authorities });
  }
  if (path.startsWith("/api/")) {
    return Response.json({
      method: request.method,
      contentType: request.headers.get("content-type"),
      body: await request.text(),
    });
  }
  if (path.startsWith("/admin/")) return Response.json({ area: "admin" });
  if (path.startsWith("/public/")) return Response.json({ area: "public" });
  return new Response("no route", { status: 404 });
};

export const defaultRules = () => [
  authz.match("GET", "/public/**").permitAll(),
  authz.match("/api/**").permitAll(),
  authz.match("GET", "/").authenticated(),
  authz.match("/me/**").authenticated(),
  authz.match("/admin/**").hasRole("ADMIN"),
];

export interface TestAppOptions {
  readonly clock?: FakeClock;
  readonly store?: MemorySessionStore;
  readonly session?: SessionOptions;
  readonly csrf?: CsrfOptions | false;
  readonly login?: Partial<LoginOptions> | false;
  /** Overrides of the login's `passwordCredentials` (by default the test users, the encoder and the clock). */
  readonly credentials?: Partial<PasswordCredentialsOptions>;
  readonly router?: FetchHandler;
  readonly rules?: ReturnType<typeof defaultRules>;
  readonly encoder?: PasswordEncoder;
  /** The chain's `authentication` slot. */
  readonly authentication?: Middleware | readonly Middleware[];
}

export interface TestApp {
  readonly handler: Handler;
  readonly clock: FakeClock;
  readonly store: MemorySessionStore;
  readonly users: Map<string, LoginUser>;
  /** What the login endpoint checks passwords with (`undefined` without one). */
  readonly credentials: PasswordCredentials | undefined;
  readonly cookieName: string;
  client(jar?: CookieJar): Client;
}

/** The chain as a user writes it: `newHandler(router, { session, csrf, login, authorization })`. */
export async function testApp(options: TestAppOptions = {}): Promise<TestApp> {
  const clock = options.clock ?? fakeClock();
  const store = options.store ?? new MemorySessionStore({ now: clock.now });
  const encoder = options.encoder ?? cheapEncoder();
  const users = await makeUsers(encoder);
  const sessionOptions: SessionOptions = { now: clock.now, store, ...options.session };
  const credentials =
    options.login === false
      ? undefined
      : passwordCredentials({
          findUser: (name) => users.get(name),
          passwordEncoder: encoder,
          now: clock.now,
          ...options.credentials,
        });
  const handler = newHandler(options.router ?? defaultRouter, {
    session: sessions(sessionOptions),
    csrf: options.csrf === false ? false : csrf(options.csrf ?? {}),
    ...(options.login === false
      ? {}
      : {
          login: login({ credentials: credentials as PasswordCredentials, ...options.login }),
        }),
    authorization: authz.routes(options.rules ?? defaultRules()),
    ...(options.authentication === undefined ? {} : { authentication: options.authentication }),
    onError: () => {},
  });
  const cookieName =
    sessionOptions.cookieName ??
    (sessionOptions.secure === false ? "portcullis-session" : SECURE_COOKIE);
  return {
    handler,
    clock,
    store,
    users,
    credentials,
    cookieName,
    client: (jar) => new Client(handler, cookieName, jar),
  };
}

export interface ClientInit extends Omit<RequestInit, "headers"> {
  readonly headers?: Record<string, string>;
  /** Sent as `x-csrf-token`. */
  readonly token?: string;
  /** Replaces the jar's `Cookie` header for this request (`null`: send none). */
  readonly cookie?: string | null;
}

/** A browser-like client of a Fetch handler: keeps cookies, fetches CSRF tokens. */
export class Client {
  readonly jar: CookieJar;

  constructor(
    readonly handler: Handler,
    readonly cookieName: string,
    jar: CookieJar = new CookieJar(),
  ) {
    this.jar = jar;
  }

  get sessionId(): string | undefined {
    return this.jar.get(this.cookieName);
  }

  request(path: string, init: ClientInit = {}): Request {
    const { token, cookie, headers: extra, ...rest } = init;
    const headers = new Headers(extra);
    const jarCookie = cookie === undefined ? this.jar.header() : cookie;
    if (jarCookie !== undefined && jarCookie !== null) headers.set("cookie", jarCookie);
    if (token !== undefined) headers.set("x-csrf-token", token);
    // Concatenated, not `new URL(path, BASE)`: a path such as `//login` must stay a path.
    return new Request(BASE + path, { ...rest, headers });
  }

  async fetch(path: string, init: ClientInit = {}): Promise<Response> {
    const response = await this.handler(this.request(path, init));
    this.jar.store(response);
    return response;
  }

  /** `GET /csrf`: a token for the current session (creating one when needed). */
  async csrf(): Promise<string> {
    const response = await this.fetch("/csrf");
    if (response.status !== 200) throw new Error(`GET /csrf answered ${response.status}`);
    const body = (await response.json()) as { token: string };
    return body.token;
  }

  /** Fetches a token, then `POST /login` with JSON credentials. */
  async login(username: string, password: string): Promise<Response> {
    const token = await this.csrf();
    return this.fetch("/login", {
      method: "POST",
      token,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username, password }),
    });
  }

  async logout(): Promise<Response> {
    const token = await this.csrf();
    return this.fetch("/logout", { method: "POST", token });
  }
}
