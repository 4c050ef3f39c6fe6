/**
 * Garbage in, a 4xx (or a normal answer) out: a seeded sweep of malformed and
 * hostile requests through the whole chain, every leg on. No request may get a
 * 500, hang, or reach the handler without passing authorization.
 */

import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import {
  authz,
  basicAuth,
  cors,
  type Handler,
  login,
  mustAuthentication,
  newChain,
  passwordCredentials,
  rateLimit,
  ScryptPasswordEncoder,
  sessions,
} from "portcullis";
import { nodeListener } from "portcullis/adapters/node";
import { describe, expect, it } from "vitest";
import { plainTextEncoder } from "./support/plain-text-encoder.ts";

const { anyRequest, match, routes } = authz;
const ORIGIN = "https://app.example.test";

/** A small deterministic PRNG (mulberry32), so a failure can be replayed by its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SID = "a".repeat(43);
const LATIN1 = String.fromCharCode(0xe9, 0xff, 0xa0);
const HUGE = "x".repeat(20_000);

const PATHS = [
  "/",
  "/login",
  "/logout",
  "/csrf",
  "/public/hello",
  "/admin/panel",
  "/admin/%2e%2e/public",
  "/%2fadmin",
  "/a%00b",
  "/%zz",
  "/%c3%28",
  "//admin//panel/",
  "/ADMIN/Panel",
  "/a;b=c/admin",
  "/public/../admin",
  `/public/${HUGE}`,
  "/é",
  "/public/hello?_method=DELETE",
  "/public/hello?x=%zz&_method=%00",
];
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "post", "FOO"];
const HEADER_VALUES: Record<string, readonly string[]> = {
  cookie: [
    `__Host-portcullis-session=${SID}`,
    `__Host-portcullis-session="${SID}`,
    `__Host-portcullis-session=${SID}; __Host-portcullis-session=other`,
    "__Host-portcullis-session=",
    `__Host-portcullis-session=${"b".repeat(42)}!`,
    ";;;==;=",
    `a=${LATIN1}; __Host-portcullis-session=${SID}`,
    `__Host-portcullis-session=${HUGE}`,
  ],
  origin: ["null", ORIGIN, "https://app.example.test.evil.net", "garbage", LATIN1, HUGE, ""],
  "sec-fetch-site": ["cross-site", "same-site", "same-origin", "none", "bogus", ""],
  "sec-fetch-mode": ["navigate", "cors", "x"],
  authorization: [
    "Basic",
    "Basic !!!",
    `Basic ${btoa("alice")}`,
    `Basic ${btoa(":")}`,
    `Basic ${btoa(`ada:${"p".repeat(5000)}`)}`,
    `Basic ${btoa(`${LATIN1}:x`)}`,
    "Bearer x.y.z",
    HUGE,
  ],
  "x-forwarded-for": ["1.1.1.1", "::ffff:1.2.3.4", "garbage, , ,", "999.1.1.1", HUGE, "[::1]:80"],
  forwarded: ['for="[2001:db8::1]:4711"', "for=unknown", "for=;;", HUGE],
  "x-csrf-token": ["", "a.b", ".", "x".repeat(300), `${SID}.${SID}`],
  "x-http-method-override": ["DELETE", "GET", "", LATIN1],
  "access-control-request-method": ["PUT", "TRACE", "", "G E T"],
  "access-control-request-headers": ["x-csrf-token", "content-type, ,", "*", HUGE],
  "content-type": [
    "application/json",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "multipart/form-data; boundary=",
    "multipart/form-data; boundary=zz",
    "text/plain",
    "application/json; charset=utf-16",
  ],
};
const BODIES = [
  "",
  "{",
  '{"username":"alice","password":"alice-password"}',
  '{"username":["alice"],"password":{}}',
  '{"username":"alice","password":"x","__proto__":{"admin":true}}',
  "username=alice&password=x&username=ada",
  "username=%zz&password=%",
  '--zz\r\nContent-Disposition: form-data; name="username"\r\n\r\nalice\r\n--zz--',
  "--zz\r\nbroken",
  HUGE,
  "\u0000\u0001\u0002",
];

function pick<T>(next: () => number, values: readonly T[]): T {
  return values[Math.floor(next() * values.length)] as T;
}

/** The whole chain, every leg on; `reached` records who got past it, with what. */
async function makeChain() {
  const encoder = new ScryptPasswordEncoder({ logN: 10, r: 8, p: 1 });
  const users = new Map([
    [
      "alice",
      { name: "alice", authorities: ["USER"], passwordHash: await encoder.hash("alice-password") },
    ],
  ]);
  const reached: string[] = [];
  const chain = newChain({
    clientAddress: (_request: Request, address: string) => address,
    trustProxy: 1,
    cors: cors({ origin: ORIGIN, credentials: true }),
    rateLimit: rateLimit({
      rules: [
        { name: "all", limit: 1_000_000, windowMs: 60_000 },
        { name: "user", limit: 1_000_000, windowMs: 60_000, key: "principal" },
      ],
    }),
    session: sessions(),
    authentication: basicAuth({
      required: false,
      credentials: passwordCredentials({
        findUser: (name) =>
          name === "ada" ? { name, authorities: ["ADMIN"], passwordHash: "{plain}pw" } : undefined,
        passwordEncoder: plainTextEncoder(),
      }),
    }),
    login: login({
      credentials: passwordCredentials({
        findUser: (name) => users.get(name),
        passwordEncoder: encoder,
      }),
    }),
    authorization: routes([
      match("GET", "/public/**").permitAll(),
      match("/admin/**").hasRole("ADMIN"),
      anyRequest().authenticated(),
    ]),
    onError: (error) => {
      throw new Error(`a leg failed on client input: ${String(error)}`);
    },
  });
  return { chain, reached };
}

async function makeHandler() {
  const { chain, reached } = await makeChain();
  const handler = chain.wrap((request) => {
    // Only requests authorization let through get here, each with a principal bound.
    const path = new URL(request.url).pathname;
    reached.push(`${mustAuthentication(request).name} ${request.method} ${path}`);
    return new Response("ok");
  });
  return { handler, reached };
}

/** Sends `count` seeded random requests; answers what came back, by status. */
async function sweep(handler: Handler, seed: number, count: number) {
  const next = random(seed);
  const failures: string[] = [];
  const statusCounts: Record<number, number> = {};
  let built = 0;
  for (let i = 0; i < count; i++) {
    const method = pick(next, METHODS);
    const path = pick(next, PATHS);
    const headers = new Headers();
    for (const [name, values] of Object.entries(HEADER_VALUES)) {
      if (next() < 0.35) headers.set(name, pick(next, values));
    }
    const canHaveBody = method !== "GET" && method !== "HEAD";
    const body = canHaveBody && next() < 0.7 ? pick(next, BODIES) : undefined;
    let request: Request;
    try {
      request = new Request(`https://app.example${path}`, { method, headers, body });
    } catch {
      continue; // Fetch itself refuses it; no server would see it in this shape
    }
    const response = await handler(request, `203.0.113.${i % 200}`);
    await response.arrayBuffer();
    statusCounts[response.status] = (statusCounts[response.status] ?? 0) + 1;
    built++;
    if (response.status >= 500) {
      failures.push(`#${i} ${method} ${path.slice(0, 40)} → ${response.status}`);
    }
  }
  return { failures, statusCounts, built };
}

describe("malformed and hostile requests through the whole chain", () => {
  it("never answer 500 across 1500 seeded combinations of bad paths, headers and bodies", async () => {
    const { handler, reached } = await makeHandler();
    const { failures, statusCounts, built } = await sweep(handler, 20261122, 1500);
    expect(failures).toEqual([]);
    // The sweep reached past every kind of gate, not just the first one.
    expect(built).toBeGreaterThan(1000);
    for (const status of [200, 400, 401, 403]) expect(statusCounts[status]).toBeGreaterThan(0);
    // What reached the handler came as ada (Basic), or anonymously to GET /public/**.
    expect(reached.length).toBeGreaterThan(0);
    for (const entry of reached) expect(entry).toMatch(/^(ada .*|anonymous GET \/public(\/.*)?)$/);
  }, 60_000);

  it.each([
    ["the default legs", {}],
    ["no session leg", { session: false }],
    ["neither sessions nor CSRF", { session: false, csrf: false }],
  ] as const)(
    "never answer 500 with %s",
    async (_label, legs) => {
      const handler = newChain({
        ...legs,
        authorization: routes([
          match("GET", "/public/**").permitAll(),
          anyRequest().authenticated(),
        ]),
        onError: (error) => {
          throw new Error(`a leg failed on client input: ${String(error)}`);
        },
      }).wrap(() => new Response("ok"));
      const { failures, statusCounts } = await sweep(handler, 7239, 500);
      expect(failures).toEqual([]);
      for (const status of [200, 400, 401]) expect(statusCounts[status]).toBeGreaterThan(0);
    },
    60_000,
  );

  it("never answer 500 to 400 bad login and logout bodies that carry a valid session and token", async () => {
    const { handler } = await makeHandler();
    const next = random(8628);
    const statusCounts: Record<number, number> = {};
    let cookie = "";
    let token = "";
    const refresh = async () => {
      const response = await handler(new Request("https://app.example/csrf"), "192.0.2.1");
      const set = response.headers.getSetCookie()[0]?.split(";")[0];
      if (set !== undefined) cookie = set;
      token = ((await response.json()) as { token: string }).token;
    };
    await refresh();
    for (let i = 0; i < 400; i++) {
      const headers = new Headers({ cookie, "x-csrf-token": token });
      if (next() < 0.9)
        headers.set("content-type", pick(next, HEADER_VALUES["content-type"] ?? []));
      const path = next() < 0.85 ? "/login" : "/logout";
      const response = await handler(
        new Request(`https://app.example${path}`, {
          method: "POST",
          headers,
          body: pick(next, BODIES),
        }),
        `192.0.2.${1 + (i % 50)}`,
      );
      await response.arrayBuffer();
      statusCounts[response.status] = (statusCounts[response.status] ?? 0) + 1;
      expect(response.status, `#${i} ${path}`).toBeLessThan(500);
      // A sign-in or sign-out rotates or ends the session; carry on with a fresh one.
      if (response.status === 200 || response.status === 204) await refresh();
    }
    for (const status of [400, 401, 413, 415]) expect(statusCounts[status]).toBeGreaterThan(0);
  }, 60_000);

  it("never answer 500 over a real socket through the node:http adapter", async () => {
    const { chain, reached } = await makeChain();
    const server = createServer(
      nodeListener(chain, (req, res) => {
        reached.push(`${mustAuthentication(req).name} ${req.method} ${req.url}`);
        res.end("ok");
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const next = random(6749);
    const statusCounts: Record<number, number> = {};
    try {
      for (let i = 0; i < 300; i++) {
        const headers: Record<string, string> = {};
        for (const [name, values] of Object.entries(HEADER_VALUES)) {
          if (next() < 0.35) headers[name] = pick(next, values);
        }
        const method = pick(next, METHODS).toUpperCase();
        const body = method === "GET" || method === "HEAD" ? undefined : pick(next, BODIES);
        // Node's client sends a DELETE's (or OPTIONS') body with no framing at all, which the
        // server can only read as the start of the next request on the kept-alive connection.
        if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));
        const status = await new Promise<number | undefined>((resolve, reject) => {
          let req: ReturnType<typeof httpRequest>;
          try {
            req = httpRequest(
              { host: "127.0.0.1", port, method, path: pick(next, PATHS), headers },
              (res) => {
                res.resume();
                res.on("end", () => resolve(res.statusCode));
              },
            );
          } catch {
            resolve(undefined); // Node's client refuses to send it
            return;
          }
          req.on("error", reject);
          req.end(body);
        });
        if (status === undefined) continue;
        statusCounts[status] = (statusCounts[status] ?? 0) + 1;
        expect(status, `#${i}`).toBeLessThan(500);
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    for (const status of [400, 401, 403]) expect(statusCounts[status]).toBeGreaterThan(0);
    for (const entry of reached) expect(entry).toMatch(/^(ada .*|anonymous GET \/public(\/.*)?)$/);
  }, 60_000);
});
