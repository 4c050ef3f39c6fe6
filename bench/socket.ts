/**
 * Over-the-socket comparison: each contender is a real HTTP server in its own
 * child process on 127.0.0.1, loaded by autocannon from this process with the
 * same duration and connections; contenders take turns within each round, so
 * drift in machine load hits them alike, and the median round is kept.
 *
 * Every contender answers a signed-in `GET /staff/reports` with a session
 * cookie and an `Origin`, so each leg does real work: security headers, CORS,
 * rate limiting (one counter per client address), a session lookup in a
 * memory store, the CSRF check (a safe method: skipped, as by csrf-csrf) and
 * authorization.
 */
import { type ChildProcess, fork, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import autocannon from "autocannon";

const ORIGIN = "https://app.example.test";
const PATH = "/staff/reports";
const SECRET = "bench-secret-bench-secret-bench-secret";

type ContenderName =
  | "bare"
  | "portcullis-node-authz"
  | "portcullis-node"
  | "portcullis-express"
  | "express-stack";

const CONTENDERS: readonly { name: ContenderName; label: string }[] = [
  { name: "bare", label: "bare node:http" },
  { name: "portcullis-node-authz", label: "Portcullis on node:http, session + authorization" },
  { name: "portcullis-node", label: "Portcullis full chain on node:http" },
  { name: "portcullis-express", label: "Portcullis full chain on Express" },
  { name: "express-stack", label: "Express + helmet, cors, rate-limit, session, csrf-csrf" },
];

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** Portcullis as published: compiled by tsc, not transpiled on the fly, like the Express stack. */
const DIST = join(ROOT, "node_modules", ".cache", "portcullis-bench-dist");

function compile(): void {
  const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
  const result = spawnSync(
    process.execPath,
    [
      tsc,
      "-p",
      join(ROOT, "tsconfig.build.json"),
      "--outDir",
      DIST,
      "--declaration",
      "false",
      "--declarationMap",
      "false",
      "--sourceMap",
      "false",
    ],
    { encoding: "utf8" },
  );
  if (!existsSync(join(DIST, "index.js")))
    throw new Error(`tsc produced no build:\n${result.stdout}${result.stderr}`);
}

// biome-ignore lint/suspicious/noExplicitAny: the compiled modules are loaded by path at run time.
const load = (path: string): Promise<any> => import(pathToFileURL(join(DIST, path)).href);

// ---- the servers (run in child processes) ----

const ok = (res: ServerResponse) => {
  res.setHeader("content-type", "text/plain");
  res.end("ok");
};

async function portcullisChain(full: boolean) {
  const P = await load("index.js");
  const { authz, createAuthentication, MemorySessionStore, newChain, sessionFrom, sessions } = P;
  const { securityHeaders } = await load("headers/index.js");
  const { cors } = await load("cors/index.js");
  const { rateLimit } = await load("ratelimit/index.js");
  const { anyRequest, match, routes } = authz;
  const store = new MemorySessionStore();
  const legs = full
    ? {
        headers: securityHeaders(),
        cors: cors({ origin: ORIGIN, credentials: true }),
        rateLimit: rateLimit({ rules: [{ name: "all", limit: 1_000_000_000, windowMs: 60_000 }] }),
        session: sessions({ secure: false, store }),
        csrf: P.csrf(),
      }
    : // The session leg only resolves the principal here; the other legs are turned off.
      { headers: false, csrf: false, session: sessions({ secure: false, store }) };
  const chain = newChain({
    ...legs,
    authorization: routes(
      [
        match("POST", "/sign-in").permitAll(),
        match("/admin/**").hasRole("ADMIN"),
        match("GET", "/staff/**").hasRole("STAFF"),
        anyRequest().authenticated(),
      ],
      { hierarchy: "ADMIN > STAFF > USER" },
    ),
  });
  const signIn = async (source: object, res: ServerResponse) => {
    const session = sessionFrom(source);
    session?.setAuthentication(createAuthentication("sam", ["STAFF"]));
    await session?.save();
    ok(res);
  };
  return { chain, signIn };
}

async function listener(name: ContenderName): Promise<RequestListener> {
  if (name === "bare") return (_req, res) => ok(res);
  if (name === "portcullis-node" || name === "portcullis-node-authz") {
    const { nodeListener } = await load("adapters/node/index.js");
    const { chain, signIn } = await portcullisChain(name === "portcullis-node");
    return nodeListener(chain, (req: IncomingMessage, res: ServerResponse) =>
      req.method === "POST" && req.url === "/sign-in" ? signIn(req, res) : ok(res),
    );
  }
  const { default: express } = await import("express");
  const app = express();
  app.disable("x-powered-by");
  if (name === "portcullis-express") {
    const { expressMiddleware } = await load("adapters/express/index.js");
    const { chain, signIn } = await portcullisChain(true);
    app.use(expressMiddleware(chain));
    app.post("/sign-in", (req, res) => signIn(req, res));
    app.get(PATH, (_req, res) => ok(res));
    return app;
  }
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
  // Authorization, as small as it gets: a signed-in STAFF member.
  app.use((req, res, next) => {
    const user = (req.session as unknown as { user?: { roles: string[] } }).user;
    if (user === undefined) res.status(401).end();
    else if (req.path.startsWith("/staff/") && !user.roles.includes("STAFF")) res.status(403).end();
    else next();
  });
  app.get(PATH, (_req, res) => ok(res));
  return app;
}

async function serve(name: ContenderName): Promise<void> {
  const server = createServer(await listener(name));
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1", () => {
    process.send?.({ port: (server.address() as AddressInfo).port });
  });
}

// ---- the driver ----

interface Running {
  readonly name: ContenderName;
  readonly label: string;
  readonly child: ChildProcess;
  readonly url: string;
  readonly cookie: string;
}

async function start(
  name: ContenderName,
  label: string,
  children: ChildProcess[],
): Promise<Running> {
  const child = fork(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, PORTCULLIS_BENCH_SERVE: name },
    execArgv: ["--conditions=source", "--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  children.push(child);
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (message) => resolve((message as { port: number }).port));
    child.once("exit", (code) => reject(new Error(`${label} exited with ${code}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  // No Origin: a same-site sign-in form post, which both CSRF defences let through.
  const signIn = await fetch(`${url}/sign-in`, { method: "POST" });
  if (signIn.status !== 200) throw new Error(`${label}: sign-in answered ${signIn.status}`);
  const cookie = signIn.headers
    .getSetCookie()
    .map((line) => line.split(";")[0])
    .join("; ");
  const probe = await fetch(`${url}${PATH}`, { headers: { cookie, origin: ORIGIN } });
  if (probe.status !== 200) throw new Error(`${label}: ${PATH} answered ${probe.status}`);
  return { name, label, child, url, cookie };
}

async function measure(target: Running, seconds: number, connections: number): Promise<number> {
  const result = await autocannon({
    url: `${target.url}${PATH}`,
    connections,
    duration: seconds,
    headers: { cookie: target.cookie, origin: ORIGIN },
  });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${target.label}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return result.requests.average;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export interface SocketOptions {
  /** Seconds per measurement. Default 5 (env `BENCH_SOCKET_SECONDS`). */
  readonly seconds?: number;
  /** Rounds; the median is kept. Default 3 (env `BENCH_SOCKET_ROUNDS`). */
  readonly rounds?: number;
  /** Concurrent connections. Default 32. */
  readonly connections?: number;
}

/** Runs the over-the-socket comparison and prints the table and the two target ratios. */
export async function overSocket(options: SocketOptions = {}): Promise<void> {
  const seconds = options.seconds ?? Number(process.env.BENCH_SOCKET_SECONDS ?? 5);
  const rounds = options.rounds ?? Number(process.env.BENCH_SOCKET_ROUNDS ?? 3);
  const connections = options.connections ?? 32;
  compile();
  const running: Running[] = [];
  const children: ChildProcess[] = [];
  try {
    for (const { name, label } of CONTENDERS) running.push(await start(name, label, children));
    for (const target of running) await measure(target, 2, connections); // warm-up
    const samples = new Map<ContenderName, number[]>(running.map((r) => [r.name, []]));
    for (let round = 0; round < rounds; round++) {
      for (const target of running)
        samples.get(target.name)?.push(await measure(target, seconds, connections));
    }
    const rate = (name: ContenderName) => median(samples.get(name) ?? []);
    const bare = rate("bare");
    const stack = rate("express-stack");
    console.log(
      `\nOver the socket: autocannon, ${connections} connections, ${seconds} s x ${rounds} rounds (median), GET ${PATH} signed in`,
    );
    console.log(
      `${"contender".padEnd(56)} ${"req/s".padStart(9)} ${"vs bare".padStart(8)} ${"vs Express stack".padStart(17)}`,
    );
    for (const target of running) {
      const value = rate(target.name);
      console.log(
        `${target.label.padEnd(56)} ${Math.round(value).toString().padStart(9)} ${(value / bare).toFixed(2).padStart(8)} ${(value / stack).toFixed(2).padStart(17)}`,
      );
    }
    const node = rate("portcullis-node");
    console.log(
      `targets: Portcullis on node:http ${((node / bare) * 100).toFixed(0)}% of bare node:http (>= 75%), ${(node / stack).toFixed(2)}x the Express stack (>= 2x)`,
    );
  } finally {
    for (const child of children) child.kill();
  }
}

const serving = process.env.PORTCULLIS_BENCH_SERVE as ContenderName | undefined;
if (serving !== undefined) await serve(serving);
