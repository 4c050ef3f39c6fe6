import {
  authz,
  bindAuthentication,
  type Chain,
  cors,
  createAuthentication,
  csrf,
  type Handler,
  MemorySessionStore,
  type Middleware,
  newChain,
  rateLimit,
  securityHeaders,
  sessionFrom,
  sessions,
} from "portcullis";
import { type Contender, compare, printTable } from "./measure.ts";

const { anyRequest, match, routes } = authz;

const bare: Handler = async () => new Response("ok");
const staff = createAuthentication("sam", ["STAFF"]);

const rules = () =>
  routes(
    [
      match("GET", "/public/**").permitAll(),
      match("/admin/**").hasRole("ADMIN"),
      match("GET", "/staff/**").hasRole("STAFF"),
      match("POST", "/api/orders").authenticated(),
      anyRequest().authenticated(),
    ],
    { hierarchy: "ADMIN > STAFF > USER" },
  );

// What an authenticator leaves behind; its own cost is not authorization's.
const signedIn: Middleware = (next) => async (request) => {
  bindAuthentication(request, staff);
  return next(request);
};

const paths = ["/staff/reports/2026", "/staff/x", "/staff/reports/q3/summary"];
const url = (i: number) => `http://127.0.0.1:3000${paths[i % paths.length]}?page=${i & 7}`;

/** Signs `sam` in through the chain once and returns the session cookie. */
async function sessionCookie(chain: Chain): Promise<string> {
  const handler = chain.wrap(async (request) => {
    const session = sessionFrom(request);
    session?.setAuthentication(staff);
    await session?.save();
    return new Response("signed in");
  });
  const response = await handler(new Request("https://127.0.0.1:3000/public/sign-in"));
  const cookie = response.headers.getSetCookie()[0]?.split(";")[0];
  if (cookie === undefined) throw new Error("no session cookie");
  return cookie;
}

export async function inProcess(): Promise<void> {
  const store = new MemorySessionStore();
  const sessionChain = newChain({
    headers: false,
    session: sessions({ store }),
    csrf: csrf(),
    authorization: routes([match("/public/**").permitAll(), anyRequest().authenticated()]),
  });
  const cookie = await sessionCookie(sessionChain);

  const full = newChain({
    headers: securityHeaders(),
    cors: cors({ origin: "https://app.example.test", credentials: true }),
    clientAddress: (_request: Request, address: string) => address,
    rateLimit: rateLimit({ rules: [{ name: "all", limit: 1_000_000_000, windowMs: 60_000 }] }),
    session: sessions({ store }),
    csrf: csrf(),
    authorization: rules(),
  });
  const sessionAndCsrf = newChain({
    headers: false,
    session: sessions({ store }),
    csrf: csrf(),
    authorization: rules(),
  });
  const authzOnly = newChain({
    headers: false,
    session: false,
    csrf: false,
    authentication: signedIn,
    authorization: rules(),
  });

  // Every contender gets the same request, so the differences are the legs' work alone.
  const request = (i: number) =>
    new Request(url(i).replace("http:", "https:"), {
      headers: { cookie, origin: "https://app.example.test" },
    });

  // Wildcard rules that a backtracking matcher would take seconds on, against paths near the
  // 8 KiB limit built to fail them as late as possible.
  const wildcards = newChain({
    headers: false,
    session: false,
    csrf: false,
    authentication: signedIn,
    authorization: routes([
      match("/**/a/**/a/**/a/**/b").denyAll(),
      match("/*a*a*a*a*a*b").denyAll(),
      anyRequest().authenticated(),
    ]),
  }).wrap(bare);
  const adversarial = (i: number) =>
    new Request(
      `https://127.0.0.1:3000/${i % 2 === 0 ? "a/".repeat(4000) : "a".repeat(8000)}${i & 7}`,
    );

  const fullHandler = full.wrap(bare);
  const contenders: Contender[] = [
    { name: "bare Fetch handler", handler: bare, request },
    { name: "principal bound, no chain", handler: signedIn(bare), request },
    { name: "authorization (5 rules, hierarchy)", handler: authzOnly.wrap(bare), request },
    {
      name: "session lookup + CSRF + authorization",
      handler: sessionAndCsrf.wrap(bare),
      request,
    },
    {
      name: "full chain (all legs, memory stores)",
      // A different client address per request, as real traffic has.
      handler: (request) => fullHandler(request, `198.51.100.${Math.floor(Math.random() * 250)}`),
      request,
    },
    {
      name: "authorization, 8 KiB adversarial paths vs wildcards",
      handler: wildcards,
      request: adversarial,
    },
  ];
  const results = await compare(contenders);
  const [baseline, bound, authzResult] = results;
  if (!baseline || !bound || !authzResult) return;
  printTable(
    "In-process (median of 7 runs, 20 000 requests each, 16 in flight)",
    results,
    baseline,
  );
  console.log(
    `authorization leg alone: ${(authzResult.microsPerOp - bound.microsPerOp).toFixed(2)} µs/request over the handler with the principal bound`,
  );
  // The control does almost nothing more than bare; a large gap means the machine was busy.
  const drift = bound.microsPerOp - baseline.microsPerOp;
  if (Math.abs(drift) > 1) {
    console.log(
      `warning: the control contender is ${drift.toFixed(2)} µs/request off bare; the machine was busy during this run, so rerun before quoting figures`,
    );
  }
}
