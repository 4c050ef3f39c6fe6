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

import { randomBytes } from "node:crypto";
import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export const ORIGIN = "https://app.example.test";
export const PATH = "/staff/reports";
const SECRET = "bench-secret-bench-secret-bench-secret";

// biome-ignore lint/suspicious/noExplicitAny: the compiled modules are loaded by path at run time.
const load = (path: string): Promise<any> =>
  import(pathToFileURL(join(process.env.PORTCULLIS_BENCH_DIST ?? "dist", path)).href);

const ok = (res: ServerResponse) => {
  res.setHeader("content-type", "text/plain");
  res.end("ok");
};
const okResponse = () => new Response("ok", { headers: { "content-type": "text/plain" } });

async function portcullis(clientAddress?: "hono") {
  const P = await load("index.js");
  const { authz, createAuthentication, MemorySessionStore, newChain, sessionFrom, sessions } = P;
  const { securityHeaders } = await load("headers/index.js");
  const { cors } = await load("cors/index.js");
  const { rateLimit } = await load("ratelimit/index.js");
  const { anyRequest, match, routes } = authz;
  const options = {
    headers: securityHeaders(),
    cors: cors({ origin: ORIGIN, credentials: true }),
    rateLimit: rateLimit({ rules: [{ name: "all", limit: 1_000_000_000, windowMs: 60_000 }] }),
    session: sessions({ secure: false, store: new MemorySessionStore() }),
    csrf: P.csrf(),
    authorization: routes([
      match("POST", "/sign-in").permitAll(),
      match("GET", "/staff/**").hasRole("STAFF"),
      anyRequest().authenticated(),
    ]),
    ...(clientAddress === "hono" ? { clientAddress: P.nodeServerClientAddress } : {}),
  };
  const signIn = async (source: object) => {
    const session = sessionFrom(source);
    session?.setAuthentication(createAuthentication("sam", ["STAFF"]));
    await session?.save();
  };
  return { P, options, chain: newChain(options), signIn };
}

/**
 * The same work written by hand for node:http, with no library and no Fetch
 * objects: the reference for what the legs' work itself costs. It keeps only
 * what the benchmark exercises (one origin, one fixed window, sessions in a
 * Map, a role check); the chain does all of it and more.
 */
function byHand(): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
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
  const limit = 1_000_000_000;
  const windows = new Map<string, { count: number; resetAt: number }>();
  const signedIn = new Map<string, { name: string; roles: string[] }>();
  const deny = (res: ServerResponse, status: number) => {
    res.statusCode = status;
    res.end();
  };
  return (req, res, next) => {
    for (const [name, value] of fields) res.setHeader(name, value);
    const origin = req.headers.origin;
    res.setHeader("vary", "Origin");
    if (origin === ORIGIN) {
      res.setHeader("access-control-allow-origin", ORIGIN);
      res.setHeader("access-control-allow-credentials", "true");
    }
    const address = req.socket.remoteAddress ?? "";
    const now = Date.now();
    let window = windows.get(address);
    if (window === undefined || window.resetAt <= now) {
      window = { count: 0, resetAt: now + 60_000 };
      windows.set(address, window);
    }
    if (++window.count > limit) return deny(res, 429);
    res.setHeader("ratelimit-policy", `"all";q=${limit};w=60`);
    res.setHeader(
      "ratelimit",
      `"all";r=${limit - window.count};t=${Math.ceil((window.resetAt - now) / 1000)}`,
    );
    const safe = req.method === "GET" || req.method === "HEAD" || req.method === "OPTIONS";
    if (!safe && origin !== undefined && origin !== ORIGIN) return deny(res, 403);
    if (req.method === "POST" && req.url === "/sign-in") {
      const id = randomBytes(32).toString("base64url");
      signedIn.set(id, { name: "sam", roles: ["STAFF"] });
      res.setHeader("set-cookie", `sid=${id}; Path=/; HttpOnly; SameSite=Lax`);
      return ok(res);
    }
    const id = /(?:^|;\s*)sid=([^;]*)/.exec(req.headers.cookie ?? "")?.[1];
    const user = id === undefined ? undefined : signedIn.get(id);
    if (user === undefined) return deny(res, 401);
    if (req.url?.startsWith("/staff/") && !user.roles.includes("STAFF")) return deny(res, 403);
    next();
  };
}

type Served =
  | RequestListener
  | { fetch: (request: Request) => unknown; hono: true }
  | { listening: number };
type Serve = () => Promise<Served>;

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
async function chainOnServeFetch(lightResponses: boolean): Promise<Served> {
  const { P, options, signIn } = await portcullis();
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

  "bare-hono": async () => {
    const { Hono } = await import("hono");
    const app = new Hono();
    app.get(PATH, (c) => c.text("ok"));
    return { fetch: app.fetch, hono: true };
  },

  "bare-fetch-hono-server": async () => ({ fetch: okResponse, hono: true }),

  "bare-fetch-servefetch": () => onServeFetch(okResponse, true),

  "bare-fetch-servefetch-native": () => onServeFetch(okResponse, false),

  "portcullis-node": async () => {
    const { nodeListener } = await load("adapters/node/index.js");
    const { chain, signIn } = await portcullis();
    return nodeListener(chain, async (req: IncomingMessage, res: ServerResponse) => {
      if (req.method === "POST" && req.url === "/sign-in") await signIn(req);
      ok(res);
    });
  },

  "portcullis-servefetch": () => chainOnServeFetch(true),

  "portcullis-servefetch-native": () => chainOnServeFetch(false),

  "portcullis-express": async () => {
    const { default: express } = await import("express");
    const { expressMiddleware } = await load("adapters/express/index.js");
    const { chain, signIn } = await portcullis();
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

  "portcullis-fastify": async () => {
    const { default: Fastify } = await import("fastify");
    const { fastifyPortcullis } = await load("adapters/fastify/index.js");
    const { chain, signIn } = await portcullis();
    const app = Fastify();
    await app.register(fastifyPortcullis, { chain });
    app.post("/sign-in", async (request, reply) => {
      await signIn(request);
      return reply.type("text/plain").send("ok");
    });
    app.get(PATH, (_request, reply) => reply.type("text/plain").send("ok"));
    return fastifyListening(app);
  },

  "portcullis-koa": async () => {
    const { default: Koa } = await import("koa");
    const { koaMiddleware } = await load("adapters/koa/index.js");
    const { chain, signIn } = await portcullis();
    const app = new Koa();
    app.use(koaMiddleware(chain));
    app.use(async (ctx) => {
      if (ctx.method === "POST" && ctx.path === "/sign-in") await signIn(ctx);
      ctx.type = "text/plain";
      ctx.body = "ok";
    });
    return app.callback();
  },

  "portcullis-hono": async () => {
    const { Hono } = await import("hono");
    const { honoMiddleware } = await load("adapters/hono/index.js");
    const { chain, signIn } = await portcullis("hono");
    const app = new Hono();
    app.use("*", honoMiddleware(chain));
    app.post("/sign-in", async (c) => {
      await signIn(c);
      return c.text("ok");
    });
    app.get(PATH, (c) => c.text("ok"));
    return { fetch: app.fetch, hono: true };
  },

  "by-hand-node": async () => {
    const guard = byHand();
    return (req, res) => guard(req, res, () => ok(res));
  },

  "by-hand-express": async () => {
    const { default: express } = await import("express");
    const app = express();
    app.disable("x-powered-by");
    app.use(byHand());
    app.get(PATH, (_req, res) => ok(res));
    return app as unknown as RequestListener;
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

async function main(name: string): Promise<void> {
  const make = SERVERS[name];
  if (make === undefined) throw new Error(`no contender ${name}`);
  const served = await make();
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
  console.log(`PORT ${port}`);
}

const name = process.argv[2];
if (name !== undefined && process.argv[1]?.endsWith("servers.ts")) await main(name);
