/**
 * The chain every adapter is tested with, the users it knows, and a side-effect
 * counter the routes bump: the same for every framework, so every adapter is
 * held to the same decisions.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  authz,
  basicAuth,
  bindAuthentication,
  Chain,
  contextFrom,
  createAuthentication,
  csrf,
  type LoginUser,
  login,
  MemorySessionStore,
  type Middleware,
  newChain,
  passwordCredentials,
  requireRole,
  ScryptPasswordEncoder,
  sessions,
} from "portcullis";
import { bindContext } from "portcullis/core";
import { cors } from "portcullis/cors";
import { securityHeaders } from "portcullis/headers";
import { rateLimit } from "portcullis/ratelimit";
import { plainTextEncoder } from "../support/plain-text-encoder.ts";

const { anyRequest, match, routes } = authz;

export const HIERARCHY = "ADMIN > STAFF > USER";
export const ORIGIN = "https://app.example";
export const SESSION_COOKIE = "portcullis-session";
/** How many distinct users the concurrency test signs in as. */
export const CROWD = 200;

/** Basic credentials: `pw-<name>`; `user0`…`user199` hold USER. */
export const ROLES: Record<string, string[]> = { uma: ["USER"], sam: ["STAFF"], ada: ["ADMIN"] };
for (let i = 0; i < CROWD; i++) ROLES[`user${i}`] = ["USER"];

export function basic(name: string): string {
  return `Basic ${Buffer.from(`${name}:pw-${name}`).toString("base64")}`;
}

/** What every app needs from the kit. */
export interface Kit {
  /** The whole chain, mounted first in every app. */
  readonly chain: Chain;
  /** Literal per-route guard: `requireRole("STAFF")` (an ADMIN is denied). */
  readonly literalGuard: Middleware;
  /** Hierarchy-aware per-route rule set: `routes([anyRequest().hasRole("STAFF")], { hierarchy })`. */
  readonly scopedGuard: Middleware;
  /** Route handlers call this; denied requests must leave it alone. */
  hit(): void;
  readonly hits: () => number;
  /** Resolves when the test opens the gate of the streaming route. */
  streamGate(): Promise<void>;
  openStreamGate(): void;
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A leg that awaits a timer before, inside and after the rest of the chain. */
function slow(leg: Middleware): Middleware {
  return (next) => {
    const inner = leg(async (request, ...rest) => {
      await delay(1);
      return next(request, ...rest);
    });
    return async (request, ...rest) => {
      await delay(1);
      const response = await inner(request, ...rest);
      await delay(1);
      return response;
    };
  };
}

/** Two cookies and a header on every answer, denials and 404s included. */
const cookieLeg: Middleware =
  (next) =>
  async (request, ...rest) => {
    const response = await next(request, ...rest);
    const copy = new Response(response.body, response);
    copy.headers.append("set-cookie", "leg-a=1; Path=/");
    copy.headers.append("set-cookie", "leg-b=2; Path=/");
    if (!copy.headers.has("x-leg")) copy.headers.set("x-leg", "yes");
    return copy;
  };

/**
 * Hands the rest of the chain a new `Request` when asked to, with the context
 * carried over and another principal bound to it: the route must see the
 * request passed down, not the one the adapter built.
 */
const replacingLeg: Middleware =
  (next) =>
  async (request, ...rest) => {
    if (request.headers.get("x-test-replace") !== "1") return next(request, ...rest);
    const replacement = new Request(request.url, {
      method: request.method,
      headers: request.headers,
    });
    bindContext(replacement, contextFrom(request));
    bindAuthentication(replacement, createAuthentication("replacement", ["USER"]));
    return next(replacement, ...rest);
  };

/** Throws when asked to, before or after calling next: the chain must answer 500 either way. */
const throwingLeg: Middleware =
  (next) =>
  async (request, ...rest) => {
    const when = request.headers.get("x-test-throw");
    if (when === "before") throw new Error("leg failed before next");
    const response = await next(request, ...rest);
    if (when === "after") throw new Error("leg failed after next");
    return response;
  };

export interface KitOptions {
  /** Every leg awaits timers around `next`. */
  readonly slow?: boolean;
}

export function makeKit(options: KitOptions = {}): Kit {
  let count = 0;
  let release: () => void = () => {};
  let gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const wrap = options.slow ? slow : (leg: Middleware) => leg;
  const encoder = new ScryptPasswordEncoder({ logN: 10, r: 8, p: 1 });
  const loginUsers = new Map<string, LoginUser>();
  const hashes = encoder.hash("pw-login").then((hash) => {
    loginUsers.set("lou", { name: "lou", authorities: ["USER"], passwordHash: hash });
  });
  const chain = newChain({
    headers: wrap(securityHeaders()),
    cors: wrap(cors({ origin: ORIGIN, credentials: true })),
    rateLimit: wrap(
      rateLimit({
        rules: [
          { name: "limited", match: "/public/limited", limit: 2, windowMs: 60_000 },
          { name: "all", limit: 1_000_000, windowMs: 60_000 },
        ],
      }),
    ),
    session: wrap(sessions({ secure: false, store: new MemorySessionStore() })),
    authentication: [
      wrap(throwingLeg),
      wrap(
        basicAuth({
          required: false,
          credentials: passwordCredentials({
            findUser: (name) => {
              const authorities = ROLES[name];
              return authorities && { name, authorities, passwordHash: `{plain}pw-${name}` };
            },
            passwordEncoder: plainTextEncoder(),
            // Every test client calls from 127.0.0.1: the crowd must not share one client budget.
            throttle: { maxFailuresPerClient: 10_000 },
          }),
        }),
      ),
      wrap(replacingLeg),
    ],
    csrf: wrap(csrf()),
    login: login({
      credentials: passwordCredentials({
        findUser: async (name) => {
          await hashes;
          return loginUsers.get(name);
        },
        passwordEncoder: encoder,
      }),
    }),
    authorization: wrap(
      routes(
        [
          match("/public/**").permitAll(),
          match("GET", "/csrf").permitAll(),
          match("/boom").permitAll(),
          match("/admin/**").hasRole("ADMIN"),
          match("GET", "/me").authenticated(),
          match("/api/**").authenticated(),
          // The route groups' own guards decide; the chain only asks for a signed-in caller.
          match("/literal/**").authenticated(),
          match("/scoped/**").authenticated(),
          match("/child/**").authenticated(),
          // Anything else, paths without a route included, is denied.
        ],
        { hierarchy: HIERARCHY },
      ),
    ),
    onError: () => {},
  });
  return {
    chain: new Chain(wrap(cookieLeg), chain.middleware),
    literalGuard: requireRole("STAFF"),
    scopedGuard: routes([anyRequest().hasRole("STAFF")], { hierarchy: HIERARCHY }),
    hit: () => {
      count++;
    },
    hits: () => count,
    streamGate: () => gate,
    openStreamGate: () => {
      release();
      gate = new Promise<void>((resolve) => {
        release = resolve;
      });
    },
  };
}

export interface Served {
  readonly url: string;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 at a free port. */
export function listen(server: Server): Promise<Served> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}`, close: () => closeServer(server) });
    });
  });
}

export function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * The chunks of the streaming route: the second is produced only once the
 * client has read the first, so a response that is buffered instead of
 * streamed never arrives and the test fails.
 */
export async function* slowChunks(kit: Kit): AsyncGenerator<string> {
  yield "first\n";
  await kit.streamGate();
  yield "second\n";
}
