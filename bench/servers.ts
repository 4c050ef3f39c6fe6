/**
 * The contenders of the over-the-socket benchmark, one per process:
 * `node --import tsx bench/servers.ts <name>` listens on a free loopback port
 * and prints `PORT <n>`. Portcullis is loaded as published (the build in
 * `PORTCULLIS_BENCH_DIST`), like the peer stacks from node_modules.
 *
 * Every server answers `GET /staff/reports` with 200 "ok". Chains and stacks
 * sign a member of staff in with `POST /sign-in` (a session cookie), and do the
 * same work on each request: security headers, CORS for one origin, a rate
 * limit per client address, a session lookup in memory, the CSRF check (a
 * safe method: passed) and a role check, 401 without a session.
 */

import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { API_KEY_SHA256, API_USER, ORIGIN, PATH, type Profile } from "./profiles.ts";

export { ORIGIN, PATH };

const SECRET = "bench-secret-bench-secret-bench-secret";

// biome-ignore lint/suspicious/noExplicitAny: the compiled modules are loaded by path at run time.
const load = (path: string): Promise<any> =>
  import(pathToFileURL(join(process.env.PORTCULLIS_BENCH_DIST ?? "dist", path)).href);

const ok = (res: ServerResponse) => {
  res.setHeader("content-type", "text/plain");
  res.end("ok");
};
const okResponse = () => new Response("ok", { headers: { "content-type": "text/plain" } });

/** The legs a contender runs: one alone (`portcullis-node:cors`), none (`:empty`), or all. */
export const LEGS = ["headers", "cors", "ratelimit", "session", "csrf"] as const;
export type Leg = (typeof LEGS)[number];
export interface Variant {
  readonly legs: ReadonlySet<Leg>;
  /** The API client profile: Basic on every request, checked by an authenticator. */
  readonly basic: boolean;
  /** The request the contender is sent (see profiles.ts). */
  readonly profile: Profile;
}

/** `base:leg` or `base@api`; the legs and profile a contender name asks for. */
export function variantOf(name: string): { base: string; variant: Variant } {
  const [head = "", profile] = name.split("@");
  const [base = "", leg] = head.split(":");
  const legs = new Set<Leg>(
    leg === undefined ? LEGS : leg === "empty" ? [] : LEGS.filter((l) => l === leg),
  );
  if (leg !== undefined && leg !== "empty" && legs.size === 0) throw new Error(`no leg ${leg}`);
  if (profile !== undefined && profile !== "api") throw new Error(`no profile ${profile}`);
  const api = profile === "api";
  // Basic is checked by the chains and references; bare servers and stacks just get the request.
  const takesLegs = base.startsWith("portcullis-") || base.startsWith("by-hand-");
  return {
    base,
    variant: { legs, basic: api && takesLegs, profile: api ? "api" : "browser" },
  };
}

/** Whether a contender signs its users in (and so answers 401 without a session). */
export const signsIn = (variant: Variant) => variant.legs.has("session") || variant.basic;

/** A password encoder for API keys: long random secrets need no slow hash, a SHA-256 will do. */
const apiKeyEncoder = {
  hash: async (key: string) => createHash("sha256").update(key).digest("base64url"),
  verify: async (key: string, encoded: string) => {
    const digest = createHash("sha256").update(key).digest();
    const expected = Buffer.from(encoded, "base64url");
    return digest.length === expected.length && timingSafeEqual(digest, expected);
  },
  needsRehash: () => false,
};

async function portcullis(variant: Variant, clientAddress?: "hono") {
  const P = await load("index.js");
  const { authz, createAuthentication, MemorySessionStore, newChain, sessionFrom, sessions } = P;
  const { securityHeaders } = await load("headers/index.js");
  const { cors } = await load("cors/index.js");
  const { rateLimit } = await load("ratelimit/index.js");
  const { anyRequest, match, routes } = authz;
  const { legs } = variant;
  const guarded = signsIn(variant);
  const options = {
    headers: legs.has("headers") ? securityHeaders() : false,
    cors: legs.has("cors") ? cors({ origin: ORIGIN, credentials: true }) : false,
    rateLimit: legs.has("ratelimit")
      ? rateLimit({ rules: [{ name: "all", limit: 1_000_000_000, windowMs: 60_000 }] })
      : false,
    session: legs.has("session")
      ? sessions({ secure: false, store: new MemorySessionStore() })
      : false,
    csrf: legs.has("csrf") ? P.csrf() : false,
    authorization: guarded
      ? routes([
          match("POST", "/sign-in").permitAll(),
          match("GET", "/staff/**").hasRole("STAFF"),
          anyRequest().authenticated(),
        ])
      : routes([anyRequest().permitAll()]),
    ...(variant.basic
      ? {
          authentication: P.basicAuth({
            required: false,
            credentials: P.passwordCredentials({
              findUser: (name: string) =>
                name === API_USER
                  ? { name, passwordHash: API_KEY_SHA256, authorities: ["STAFF"] }
                  : undefined,
              passwordEncoder: apiKeyEncoder,
            }),
          }),
        }
      : {}),
    ...(clientAddress === "hono" ? { clientAddress: P.nodeServerClientAddress } : {}),
  };
  const signIn = async (source: object) => {
    const session = sessionFrom(source);
    session?.setAuthentication(createAuthentication("sam", ["STAFF"]));
    await session?.save();
  };
  return { P, options, chain: newChain(options), signIn };
}

/** How the hand-written reference reads and writes fields on a framework's objects. */
interface FieldAccess<T> {
  readonly get: (on: T, name: string) => string | undefined;
  readonly set: (on: T, name: string, value: string) => void;
}

/** The answer of the hand-written reference: pass on, signed in (answer 200 "ok"), or a status. */
const PASS = 0;
const SIGNED_IN = 1;

/**
 * The same work written by hand, with no library: the reference for what the
 * legs' work itself costs. It keeps only what the benchmark exercises (one
 * origin, one fixed window, sessions in a Map, a role check, Basic checked
 * against a SHA-256 with a failure count); the chain does all of it and more.
 * `access` reads and writes fields the way the framework's own code would.
 */
function handWritten<T>(
  variant: Variant,
  access: FieldAccess<T>,
): (on: T, method: string, url: string, address: string) => number {
  const fields: [string, string][] = [
    [
      "content-security-policy",
      "default-src 'self'; base-uri 'self'; font-src 'self' https: data:; form-action 'self'; frame-ancestors 'self'; img-src 'self' data:; object-src 'none'; script-src 'self'; script-src-attr 'none'; style-src 'self' https: 'unsafe-inline'",
    ],
    ["cross-origin-opener-policy", "same-origin"],
    ["cross-origin-resource-policy", "same-origin"],
    ["origin-agent-cluster", "?1"],
    ["referrer-policy", "no-referrer"],
    ["x-content-type-options", "nosniff"],
    ["x-dns-prefetch-control", "off"],
    ["x-frame-options", "SAMEORIGIN"],
    ["x-permitted-cross-domain-policies", "none"],
    ["x-xss-protection", "0"],
  ];
  const { legs, basic } = variant;
  const { get, set } = access;
  const limit = 1_000_000_000;
  const windows = new Map<string, { count: number; resetAt: number }>();
  const signedIn = new Map<string, { name: string; roles: string[] }>();
  const failures = new Map<string, number>();
  const apiUsers = new Map([[API_USER, { name: API_USER, roles: ["STAFF"] }]]);
  const expected = Buffer.from(API_KEY_SHA256, "base64url");
  const guarded = signsIn(variant);
  return (on, method, url, address) => {
    if (legs.has("headers")) for (const [name, value] of fields) set(on, name, value);
    const origin = get(on, "origin");
    if (legs.has("cors")) {
      set(on, "vary", "Origin");
      if (origin === ORIGIN) {
        set(on, "access-control-allow-origin", ORIGIN);
        set(on, "access-control-allow-credentials", "true");
      }
    }
    if (legs.has("ratelimit")) {
      const now = Date.now();
      let window = windows.get(address);
      if (window === undefined || window.resetAt <= now) {
        window = { count: 0, resetAt: now + 60_000 };
        windows.set(address, window);
      }
      if (++window.count > limit) return 429;
      set(on, "ratelimit-policy", `"all";q=${limit};w=60`);
      set(
        on,
        "ratelimit",
        `"all";r=${limit - window.count};t=${Math.ceil((window.resetAt - now) / 1000)}`,
      );
    }
    if (legs.has("csrf")) {
      const safe = method === "GET" || method === "HEAD" || method === "OPTIONS";
      if (!safe && origin !== undefined && origin !== ORIGIN) return 403;
    }
    if (!guarded) return PASS;
    let user: { name: string; roles: string[] } | undefined;
    if (legs.has("session")) {
      if (method === "POST" && url === "/sign-in") {
        const id = randomBytes(32).toString("base64url");
        signedIn.set(id, { name: "sam", roles: ["STAFF"] });
        set(on, "set-cookie", `sid=${id}; Path=/; HttpOnly; SameSite=Lax`);
        return SIGNED_IN;
      }
      const id = /(?:^|;\s*)sid=([^;]*)/.exec(get(on, "cookie") ?? "")?.[1];
      user = id === undefined ? undefined : signedIn.get(id);
    }
    const authorization = basic ? get(on, "authorization") : undefined;
    if (authorization?.startsWith("Basic ")) {
      const decoded = Buffer.from(authorization.slice(6), "base64").toString();
      const colon = decoded.indexOf(":");
      const name = decoded.slice(0, colon);
      const spent = failures.get(name) ?? 0;
      if (colon < 1 || spent >= 5) return 401;
      const digest = createHash("sha256")
        .update(decoded.slice(colon + 1))
        .digest();
      const found = apiUsers.get(name);
      if (found === undefined || !timingSafeEqual(digest, expected)) {
        failures.set(name, spent + 1);
        return 401;
      }
      if (spent > 0) failures.delete(name);
      user = found;
    }
    if (user === undefined) return 401;
    if (url.startsWith("/staff/") && !user.roles.includes("STAFF")) return 403;
    return PASS;
  };
}

/** The reference as a node:http guard (and Express middleware): fields set on `res`. */
function byHand(
  variant: Variant,
): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
  const guard = handWritten(variant, {
    get: (res: ServerResponse, name) => res.req.headers[name] as string | undefined,
    set: (res, name, value) => res.setHeader(name, value),
  });
  return (req, res, next) => {
    const outcome = guard(res, req.method ?? "GET", req.url ?? "", req.socket.remoteAddress ?? "");
    if (outcome === PASS) return next();
    if (outcome === SIGNED_IN) return ok(res);
    res.statusCode = outcome;
    res.end();
  };
}

/** The reference in front of a Fetch handler: fields collected, then set on its answer. */
function byHandFetch(
  variant: Variant,
  app: (request: Request) => Response | Promise<Response>,
): (request: Request, env: { incoming: IncomingMessage }) => Promise<Response> {
  interface Exchange {
    request: Request;
    fields: string[];
  }
  const guard = handWritten<Exchange>(variant, {
    get: (on, name) => on.request.headers.get(name) ?? undefined,
    set: (on, name, value) => {
      on.fields.push(name, value);
    },
  });
  return async (request, env) => {
    const exchange: Exchange = { request, fields: [] };
    const url = request.url;
    const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
    const outcome = guard(exchange, request.method, path, env.incoming.socket.remoteAddress ?? "");
    const response =
      outcome === PASS
        ? await app(request)
        : outcome === SIGNED_IN
          ? okResponse()
          : new Response(null, { status: outcome });
    const { fields } = exchange;
    for (let i = 0; i < fields.length; i += 2)
      response.headers.append(fields[i] as string, fields[i + 1] as string);
    return response;
  };
}

type Served =
  | RequestListener
  | { fetch: (request: Request) => unknown; hono: true }
  | { listening: number };
type Serve = (variant: Variant) => Promise<Served>;

/** A Fetch handler on serveFetch, as shipped (light responses) or with the runtime's own. */
async function onServeFetch(
  handler: (request: Request) => Response | Promise<Response>,
  lightResponses: boolean,
): Promise<Served> {
  const { serveFetch } = await load("adapters/node/index.js");
  const server = await serveFetch(handler, { port: 0, keepAliveTimeout: 60_000, lightResponses });
  return { listening: (server.address() as AddressInfo).port };
}

/** The full chain in front of a Fetch handler, on serveFetch. */
async function chainOnServeFetch(variant: Variant, lightResponses: boolean): Promise<Served> {
  const { P, options, signIn } = await portcullis(variant);
  const handler = P.newHandler(async (request: Request) => {
    if (request.method === "POST") await signIn(request);
    return okResponse();
  }, options);
  return onServeFetch(handler, lightResponses);
}

/** A Fastify app on its own server, as its users run it. */
async function fastifyListening(app: import("fastify").FastifyInstance): Promise<Served> {
  await app.listen({ port: 0, host: "127.0.0.1" });
  app.server.keepAliveTimeout = 60_000;
  return { listening: (app.server.address() as AddressInfo).port };
}

const SERVERS: Record<string, Serve> = {
  "bare-node": async () => (_req, res) => ok(res),

  "bare-express": async () => {
    const { default: express } = await import("express");
    const app = express();
    app.disable("x-powered-by");
    app.get(PATH, (_req, res) => ok(res));
    return app as unknown as RequestListener;
  },

  "bare-fastify": async () => {
    const { default: Fastify } = await import("fastify");
    const app = Fastify();
    app.get(PATH, (_request, reply) => reply.type("text/plain").send("ok"));
    return fastifyListening(app);
  },

  "bare-koa": async () => {
    const { default: Koa } = await import("koa");
    const app = new Koa();
    app.use(async (ctx) => {
      ctx.type = "text/plain";
      ctx.body = "ok";
    });
    return app.callback();
  },

  "bare-hono": async () => {
    const { Hono } = await import("hono");
    const app = new Hono();
    app.get(PATH, (c) => c.text("ok"));
    return { fetch: app.fetch, hono: true };
  },

  "bare-fetch-hono-server": async () => ({ fetch: okResponse, hono: true }),

  "bare-fetch-servefetch": () => onServeFetch(okResponse, true),

  // The same work by hand in the Fetch shape, on the lightest adapter from Node to Fetch there is:
  // what a chain whose legs read a Fetch Request pays at the least, whoever writes it.
  "by-hand-fetch-hono-server": async (variant) => {
    const guarded = byHandFetch(variant, okResponse);
    // serve() hands the handler its bindings, the Node request among them.
    const fetch = (request: Request, env?: unknown) =>
      guarded(request, env as { incoming: IncomingMessage });
    return { fetch, hono: true };
  },

  "by-hand-servefetch": async (variant) => {
    const { serveFetch } = await load("adapters/node/index.js");
    const server = await serveFetch(byHandFetch(variant, okResponse), {
      port: 0,
      keepAliveTimeout: 60_000,
    });
    return { listening: (server.address() as AddressInfo).port };
  },

  "bare-fetch-servefetch-native": () => onServeFetch(okResponse, false),

  "portcullis-node": async (variant) => {
    const { nodeListener } = await load("adapters/node/index.js");
    const { chain, signIn } = await portcullis(variant);
    return nodeListener(chain, async (req: IncomingMessage, res: ServerResponse) => {
      if (req.method === "POST" && req.url === "/sign-in") await signIn(req);
      ok(res);
    });
  },

  "portcullis-servefetch": (variant) => chainOnServeFetch(variant, true),

  "portcullis-servefetch-native": (variant) => chainOnServeFetch(variant, false),

  "portcullis-express": async (variant) => {
    const { default: express } = await import("express");
    const { expressMiddleware } = await load("adapters/express/index.js");
    const { chain, signIn } = await portcullis(variant);
    const app = express();
    app.disable("x-powered-by");
    app.use(expressMiddleware(chain));
    app.post("/sign-in", async (req, res) => {
      await signIn(req);
      ok(res);
    });
    app.get(PATH, (_req, res) => ok(res));
    return app as unknown as RequestListener;
  },

  "portcullis-fastify": async (variant) => {
    const { default: Fastify } = await import("fastify");
    const { fastifyPortcullis } = await load("adapters/fastify/index.js");
    const { chain, signIn } = await portcullis(variant);
    const app = Fastify();
    await app.register(fastifyPortcullis, { chain });
    app.post("/sign-in", async (request, reply) => {
      await signIn(request);
      return reply.type("text/plain").send("ok");
    });
    app.get(PATH, (_request, reply) => reply.type("text/plain").send("ok"));
    return fastifyListening(app);
  },

  "portcullis-koa": async (variant) => {
    const { default: Koa } = await import("koa");
    const { koaMiddleware } = await load("adapters/koa/index.js");
    const { chain, signIn } = await portcullis(variant);
    const app = new Koa();
    app.use(koaMiddleware(chain));
    app.use(async (ctx) => {
      if (ctx.method === "POST" && ctx.path === "/sign-in") await signIn(ctx);
      ctx.type = "text/plain";
      ctx.body = "ok";
    });
    return app.callback();
  },

  "portcullis-hono": async (variant) => {
    const { Hono } = await import("hono");
    const { honoMiddleware } = await load("adapters/hono/index.js");
    const { chain, signIn } = await portcullis(variant, "hono");
    const app = new Hono();
    app.use("*", honoMiddleware(chain));
    app.post("/sign-in", async (c) => {
      await signIn(c);
      return c.text("ok");
    });
    app.get(PATH, (c) => c.text("ok"));
    return { fetch: app.fetch, hono: true };
  },

  "by-hand-node": async (variant) => {
    const guard = byHand(variant);
    return (req, res) => guard(req, res, () => ok(res));
  },

  "by-hand-express": async (variant) => {
    const { default: express } = await import("express");
    const app = express();
    app.disable("x-powered-by");
    app.use(byHand(variant));
    app.get(PATH, (_req, res) => ok(res));
    return app as unknown as RequestListener;
  },

  "by-hand-fastify": async (variant) => {
    const { default: Fastify } = await import("fastify");
    const app = Fastify();
    const guard = handWritten<import("fastify").FastifyReply>(variant, {
      get: (reply, name) => reply.request.headers[name] as string | undefined,
      set: (reply, name, value) => {
        reply.header(name, value);
      },
    });
    app.addHook("onRequest", async (request, reply) => {
      const outcome = guard(reply, request.method, request.url, request.ip);
      if (outcome === SIGNED_IN) return reply.type("text/plain").send("ok");
      if (outcome !== PASS) return reply.code(outcome).send();
    });
    app.post("/sign-in", (_request, reply) => reply.type("text/plain").send("ok"));
    app.get(PATH, (_request, reply) => reply.type("text/plain").send("ok"));
    return fastifyListening(app);
  },

  "by-hand-koa": async (variant) => {
    const { default: Koa } = await import("koa");
    const guard = handWritten<import("koa").Context>(variant, {
      get: (ctx, name) => ctx.req.headers[name] as string | undefined,
      set: (ctx, name, value) => ctx.set(name, value),
    });
    const app = new Koa();
    app.use(async (ctx, next) => {
      const outcome = guard(ctx, ctx.method, ctx.url, ctx.req.socket.remoteAddress ?? "");
      if (outcome === PASS) return next();
      ctx.status = outcome === SIGNED_IN ? 200 : outcome;
      if (outcome === SIGNED_IN) ctx.body = "ok";
    });
    app.use(async (ctx) => {
      ctx.type = "text/plain";
      ctx.body = "ok";
    });
    return app.callback();
  },

  "by-hand-hono": async (variant) => {
    const { Hono } = await import("hono");
    const { getConnInfo } = await import("@hono/node-server/conninfo");
    type C = import("hono").Context;
    const guard = handWritten<C>(variant, {
      get: (c, name) => c.req.header(name),
      set: (c, name, value) => c.header(name, value, { append: name === "set-cookie" }),
    });
    const app = new Hono();
    app.use("*", async (c, next) => {
      const outcome = guard(c, c.req.method, c.req.path, getConnInfo(c).remote.address ?? "");
      if (outcome === SIGNED_IN) return c.text("ok");
      if (outcome !== PASS) return c.body(null, outcome as 401);
      await next();
    });
    app.get(PATH, (c) => c.text("ok"));
    return { fetch: app.fetch, hono: true };
  },

  "express-stack": async () => {
    const { default: express } = await import("express");
    const [
      { default: helmet },
      { default: cors },
      { rateLimit },
      { default: session },
      { default: cookieParser },
      { doubleCsrf },
    ] = await Promise.all([
      import("helmet"),
      import("cors"),
      import("express-rate-limit"),
      import("express-session"),
      import("cookie-parser"),
      import("csrf-csrf"),
    ]);
    const app = express();
    app.disable("x-powered-by");
    app.use(helmet());
    app.use(cors({ origin: ORIGIN, credentials: true }));
    app.use(
      rateLimit({
        windowMs: 60_000,
        limit: 1_000_000_000,
        standardHeaders: "draft-8",
        legacyHeaders: false,
      }),
    );
    app.use(
      session({
        secret: SECRET,
        resave: false,
        saveUninitialized: false,
        cookie: { httpOnly: true, sameSite: "lax", secure: false },
      }),
    );
    app.use(cookieParser());
    const { doubleCsrfProtection } = doubleCsrf({
      getSecret: () => SECRET,
      getSessionIdentifier: (req) => req.session.id,
      cookieName: "x-csrf",
      cookieOptions: { secure: false, sameSite: "lax" },
    });
    app.post("/sign-in", (req, res) => {
      (req.session as unknown as { user: unknown }).user = { name: "sam", roles: ["STAFF"] };
      req.session.save(() => ok(res));
    });
    app.use(doubleCsrfProtection);
    app.use((req, res, next) => {
      const user = (req.session as unknown as { user?: { roles: string[] } }).user;
      if (user === undefined) res.status(401).end();
      else if (req.path.startsWith("/staff/") && !user.roles.includes("STAFF"))
        res.status(403).end();
      else next();
    });
    app.get(PATH, (_req, res) => ok(res));
    return app as unknown as RequestListener;
  },

  "fastify-stack": async () => {
    const { default: Fastify } = await import("fastify");
    const [helmet, cors, rateLimit, cookie, session, csrf] = await Promise.all([
      import("@fastify/helmet"),
      import("@fastify/cors"),
      import("@fastify/rate-limit"),
      import("@fastify/cookie"),
      import("@fastify/session"),
      import("@fastify/csrf-protection"),
    ]);
    const app = Fastify();
    await app.register(helmet.default);
    await app.register(cors.default, { origin: ORIGIN, credentials: true });
    await app.register(rateLimit.default, { max: 1_000_000_000, timeWindow: 60_000 });
    await app.register(cookie.default);
    await app.register(session.default, {
      secret: SECRET,
      saveUninitialized: false,
      cookie: { httpOnly: true, sameSite: "lax", secure: false },
    });
    await app.register(csrf.default, { sessionPlugin: "@fastify/session" });
    app.addHook("onRequest", async (request, reply) => {
      // The CSRF check for unsafe methods; GET passes, as with the other stacks.
      if (request.method !== "GET" && request.method !== "HEAD" && request.url !== "/sign-in")
        await new Promise<void>((resolve) => app.csrfProtection(request, reply, () => resolve()));
    });
    app.addHook("preHandler", async (request, reply) => {
      if (request.url === "/sign-in") return;
      const user = request.session.get("user" as never) as { roles: string[] } | undefined;
      if (user === undefined) return reply.code(401).send();
      if (request.url.startsWith("/staff/") && !user.roles.includes("STAFF"))
        return reply.code(403).send();
    });
    app.post("/sign-in", async (request, reply) => {
      request.session.set("user" as never, { name: "sam", roles: ["STAFF"] } as never);
      await request.session.save();
      return reply.type("text/plain").send("ok");
    });
    app.get(PATH, (_request, reply) => reply.type("text/plain").send("ok"));
    return fastifyListening(app);
  },

  "hono-stack": async () => {
    const { Hono } = await import("hono");
    const { secureHeaders } = await import("hono/secure-headers");
    const { cors } = await import("hono/cors");
    const { csrf } = await import("hono/csrf");
    const { getSignedCookie, setSignedCookie } = await import("hono/cookie");
    const { rateLimiter } = await import("hono-rate-limiter");
    const { getConnInfo } = await import("@hono/node-server/conninfo");
    // Sessions as express-session keeps them: an id in a signed cookie, the record in memory.
    const sessions = new Map<string, { name: string; roles: string[] }>();
    const app = new Hono<{ Variables: { user: { name: string; roles: string[] } | undefined } }>();
    app.use(secureHeaders());
    app.use(cors({ origin: ORIGIN, credentials: true }));
    app.use(
      rateLimiter({
        windowMs: 60_000,
        limit: 1_000_000_000,
        standardHeaders: "draft-7",
        keyGenerator: (c) => getConnInfo(c).remote.address ?? "",
      }),
    );
    app.use(async (c, next) => {
      const id = await getSignedCookie(c, SECRET, "sid");
      c.set("user", typeof id === "string" ? sessions.get(id) : undefined);
      await next();
    });
    app.post("/sign-in", async (c) => {
      const id = crypto.randomUUID();
      sessions.set(id, { name: "sam", roles: ["STAFF"] });
      await setSignedCookie(c, "sid", id, SECRET, { httpOnly: true, sameSite: "Lax", path: "/" });
      return c.text("ok");
    });
    app.use(csrf({ origin: ORIGIN }));
    app.use("/staff/*", async (c, next) => {
      const user = c.get("user");
      if (user === undefined) return c.body(null, 401);
      if (!user.roles.includes("STAFF")) return c.body(null, 403);
      await next();
    });
    app.get(PATH, (c) => c.text("ok"));
    return { fetch: app.fetch, hono: true };
  },
};

export const CONTENDER_NAMES = Object.keys(SERVERS);

/** Whether `name` is a contender: a server, with legs or a profile only where it takes them. */
export function isContender(name: string): boolean {
  const { base } = variantOf(name);
  if (SERVERS[base] === undefined) return false;
  return !name.includes(":") || base.startsWith("portcullis-") || base.startsWith("by-hand-");
}

async function main(name: string): Promise<void> {
  const { base, variant } = variantOf(name);
  const make = SERVERS[base];
  if (make === undefined || !isContender(name)) throw new Error(`no contender ${name}`);
  const served = await make(variant);
  let port: number;
  if ("listening" in served) {
    port = served.listening;
  } else if (typeof served === "function") {
    const server = createServer(served);
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  } else {
    // @hono/node-server's serve(), with its defaults, as its users run it.
    const { serve } = await import("@hono/node-server");
    port = await new Promise<number>((resolve) => {
      const server = serve({ fetch: served.fetch, port: 0, hostname: "127.0.0.1" }, (info) =>
        resolve(info.port),
      );
      (server as unknown as { keepAliveTimeout: number }).keepAliveTimeout = 60_000;
    });
  }
  // The instruction count collects all garbage before it starts counting (node --expose-gc).
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc !== undefined) process.on("SIGUSR2", () => gc());
  console.log(`PORT ${port}`);
}

const name = process.argv[2];
if (name !== undefined && process.argv[1]?.endsWith("servers.ts")) await main(name);
