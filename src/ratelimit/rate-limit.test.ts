import { describe, expect, it, vi } from "vitest";
import * as authz from "../authz/index.ts";
import { newHandler } from "../chain/index.ts";
import { bindAuthentication, createAuthentication } from "../core/authentication.ts";
import { PEER_ADDRESS } from "../core/client-address.ts";
import { bindValue } from "../core/context.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import type { RateLimitPolicy } from "./algorithms.ts";
import { type RateLimitOptions, type RateLimitRule, rateLimit } from "./rate-limit.ts";
import { MemoryRateLimitStore, type RateLimitStore } from "./rate-limit-store.ts";

const ok: Handler = async () => new Response("ok");

function clock(start = 1_000_000) {
  let t = start;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

interface Send {
  address?: string | undefined;
  method?: string;
  headers?: Record<string, string>;
  principal?: string;
}

/** A handler behind `rateLimit(options)`, and a way to send requests from a given peer. */
function setup(options: Partial<RateLimitOptions> & { rules: readonly RateLimitRule[] }) {
  const time = clock();
  const downstream = vi.fn(ok);
  const handler = rateLimit({ now: time.now, ...options })(downstream);
  const send = (path = "/", init: Send = {}) => {
    const request = new Request(`https://example.test${path}`, {
      method: init.method ?? "GET",
      headers: init.headers ?? {},
    });
    const address = "address" in init ? init.address : "203.0.113.5";
    if (address !== undefined) bindValue(request, PEER_ADDRESS, address);
    if (init.principal !== undefined)
      bindAuthentication(request, createAuthentication(init.principal, []));
    return handler(request);
  };
  const statuses = async (n: number, path = "/", init: Send = {}) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await send(path, init)).status);
    return out;
  };
  return { time, downstream, send, statuses };
}

describe("rateLimit", () => {
  it("keeps the counters of clients taking turns apart", async () => {
    const { statuses } = setup({
      rules: [{ limit: 2, windowMs: 60_000, algorithm: "fixed-window" }],
      ipv6Prefix: 64,
    });
    const a = { address: "203.0.113.5" };
    const b = { address: "::ffff:198.51.100.7" };
    const c = { address: "2001:db8:0:1::1" };
    const d = { address: "2001:db8:0:1:ffff::2" }; // the same /64 as c
    const turns: number[] = [];
    for (let i = 0; i < 3; i++) {
      for (const who of [a, b, c, d]) turns.push(...(await statuses(1, "/", who)));
    }
    expect(turns).toEqual([200, 200, 200, 200, 200, 200, 429, 429, 429, 429, 429, 429]);
  });

  it("answers 429 with Retry-After and RateLimit fields once the limit is spent", async () => {
    const { send, statuses, downstream } = setup({
      rules: [{ name: "api", limit: 3, windowMs: 60_000, algorithm: "fixed-window" }],
    });
    expect(await statuses(3)).toEqual([200, 200, 200]);
    const denied = await send();
    expect(denied.status).toBe(429);
    expect(denied.headers.get("content-type")).toBe("application/problem+json");
    expect(await denied.json()).toMatchObject({
      type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
      status: 429,
      title: "Too Many Requests",
    });
    const retryAfter = denied.headers.get("retry-after") ?? "";
    expect(retryAfter).toMatch(/^[1-9]\d*$/);
    expect(Number(retryAfter)).toBe(20); // the clock starts 40 s into a minute
    expect(denied.headers.get("ratelimit-policy")).toBe('"api";q=3;w=60');
    expect(denied.headers.get("ratelimit")).toBe('"api";r=0;t=20');
    expect(downstream).toHaveBeenCalledTimes(3);
  });

  it("puts the fields on allowed responses", async () => {
    const { send } = setup({ rules: [{ name: "api", limit: 5, windowMs: 10_000 }] });
    const response = await send();
    expect(response.headers.get("ratelimit-policy")).toBe('"api";q=5;w=10');
    expect(response.headers.get("ratelimit")).toBe('"api";r=4;t=10');
  });

  it("Retry-After is at least 1 even with under a second to wait", async () => {
    const { send, time } = setup({
      rules: [{ limit: 1, windowMs: 1000, algorithm: "fixed-window" }],
    });
    await send();
    time.advance(999);
    const denied = await send();
    expect(denied.status).toBe(429);
    expect(denied.headers.get("retry-after")).toBe("1");
  });

  it("resets with the window on the injected clock", async () => {
    const { statuses, time } = setup({
      rules: [{ limit: 2, windowMs: 60_000, algorithm: "fixed-window" }],
    });
    expect(await statuses(3)).toEqual([200, 200, 429]);
    time.advance(19_999);
    expect(await statuses(1)).toEqual([429]);
    time.advance(1);
    expect(await statuses(3)).toEqual([200, 200, 429]);
  });

  it("sliding window lets the previous window's count decay", async () => {
    const { statuses, time, send } = setup({
      rules: [{ limit: 10, windowMs: 60_000, algorithm: "sliding-window" }],
    });
    time.advance(20_000); // start of a window
    expect(await statuses(10)).toEqual(Array(10).fill(200));
    expect(await statuses(1)).toEqual([429]);
    time.advance(60_000 + 30_000); // halfway into the next window: 5 still weigh
    expect(await statuses(6)).toEqual([200, 200, 200, 200, 200, 429]);
    const denied = await send();
    expect(denied.headers.get("retry-after")).toBe("6"); // 10 * (1 - f) <= 4 at f = 0.6
  });

  it("keeps separate counters per rule, path and method", async () => {
    const { statuses } = setup({
      rules: [
        { name: "login", match: "/login", methods: ["POST"], limit: 2, windowMs: 60_000 },
        { name: "global", limit: 5, windowMs: 60_000 },
      ],
    });
    expect(await statuses(2, "/login", { method: "POST" })).toEqual([200, 200]);
    expect(await statuses(1, "/login", { method: "POST" })).toEqual([429]);
    // GET /login is only under the global rule, which has counted 3 so far.
    expect(await statuses(3, "/login")).toEqual([200, 200, 429]);
    expect(await statuses(1, "/other")).toEqual([429]);
  });

  it("counts every matching rule; the strictest one answers", async () => {
    const { send } = setup({
      rules: [
        { name: "global", limit: 100, windowMs: 60_000 },
        { name: "burst", match: "/api/**", limit: 1, windowMs: 1000, algorithm: "fixed-window" },
      ],
    });
    const first = await send("/api/x");
    expect(first.headers.get("ratelimit-policy")).toBe('"global";q=100;w=60, "burst";q=1;w=1');
    const denied = await send("/api/x");
    expect(denied.status).toBe(429);
    expect(denied.headers.get("ratelimit")).toBe('"global";r=98;t=20, "burst";r=0;t=1');
    expect((await send("/elsewhere")).status).toBe(200);
  });

  it("takes the latest Retry-After of all exhausted rules", async () => {
    const { send, statuses } = setup({
      rules: [
        { name: "short", limit: 1, windowMs: 1000, algorithm: "fixed-window" },
        { name: "long", limit: 1, windowMs: 600_000, algorithm: "fixed-window" },
      ],
    });
    expect(await statuses(1)).toEqual([200]);
    const denied = await send();
    // 1 000 000 ms is 400 s into a 600 s window.
    expect(denied.headers.get("retry-after")).toBe("200");
  });

  it("matches patterns on the normalized path", async () => {
    const { statuses } = setup({
      rules: [{ match: "/admin/**", limit: 1, windowMs: 60_000 }],
    });
    expect(await statuses(1, "/admin/x")).toEqual([200]);
    expect(await statuses(1, "/ADMIN//x/")).toEqual([429]);
    expect(await statuses(1, "/%61dmin/x")).toEqual([429]);
    expect(await statuses(1, "/public")).toEqual([200]);
  });

  it("refuses an ambiguous path instead of letting it skip a rule", async () => {
    const { send, downstream } = setup({
      rules: [{ match: "/login", limit: 1, windowMs: 60_000 }],
    });
    expect((await send("/x/..%2flogin")).status).toBe(400);
    expect(downstream).not.toHaveBeenCalled();
  });

  describe("keys", () => {
    it("by address: clients do not share counters", async () => {
      const { statuses } = setup({ rules: [{ limit: 1, windowMs: 60_000 }] });
      expect(await statuses(2, "/", { address: "203.0.113.5" })).toEqual([200, 429]);
      expect(await statuses(1, "/", { address: "203.0.113.6" })).toEqual([200]);
    });

    it("by principal: one user across addresses; anonymous callers by address", async () => {
      const { statuses } = setup({ rules: [{ limit: 2, windowMs: 60_000, key: "principal" }] });
      expect(await statuses(1, "/", { principal: "alice", address: "203.0.113.5" })).toEqual([200]);
      expect(await statuses(2, "/", { principal: "alice", address: "198.51.100.9" })).toEqual([
        200, 429,
      ]);
      expect(await statuses(2, "/", { principal: "bob", address: "203.0.113.5" })).toEqual([
        200, 200,
      ]);
      // Anonymous requests from alice's first address have their own counter.
      expect(await statuses(3, "/", { address: "203.0.113.5" })).toEqual([200, 200, 429]);
    });

    it("by function, falling back to the address when it finds no key", async () => {
      const { statuses } = setup({
        rules: [
          {
            limit: 1,
            windowMs: 60_000,
            key: async (request) => request.headers.get("x-tenant") ?? undefined,
          },
        ],
      });
      const tenant = (t: string, address: string) => ({ headers: { "x-tenant": t }, address });
      expect(await statuses(1, "/", tenant("acme", "203.0.113.5"))).toEqual([200]);
      expect(await statuses(1, "/", tenant("acme", "198.51.100.1"))).toEqual([429]);
      expect(await statuses(1, "/", tenant("other", "203.0.113.5"))).toEqual([200]);
      expect(await statuses(2, "/", { address: "203.0.113.5" })).toEqual([200, 429]);
    });

    it("hashes very long keys rather than storing them", async () => {
      const keys: string[] = [];
      const store = new MemoryRateLimitStore();
      const spy: RateLimitStore = {
        hit: (key, policy, now) => {
          keys.push(key);
          return store.hit(key, policy, now);
        },
        reset: (key) => store.reset(key),
      };
      const { statuses } = setup({
        store: spy,
        rules: [{ name: "k", limit: 1, windowMs: 60_000, key: (r) => r.headers.get("x-k") ?? "" }],
      });
      const long = "x".repeat(5000);
      expect(await statuses(2, "/", { headers: { "x-k": long } })).toEqual([200, 429]);
      expect(keys[0]).toMatch(/^k:sw:60000:h:[0-9a-f]{64}$/);
    });

    it("rules never share a counter for the same client", async () => {
      const keys: string[] = [];
      const store = new MemoryRateLimitStore();
      const { send } = setup({
        store: {
          hit: (key, policy, now) => {
            keys.push(key);
            return store.hit(key, policy, now);
          },
          reset: (key) => store.reset(key),
        },
        rules: [
          { name: "a", limit: 5, windowMs: 60_000 },
          { name: "b", limit: 5, windowMs: 60_000 },
        ],
      });
      await send();
      expect(keys).toEqual(["a:sw:60000:a:203.0.113.5/32", "b:sw:60000:a:203.0.113.5/32"]);
    });
  });

  describe("client addresses", () => {
    const spoofs = ["1.1.1.1", "2.2.2.2, 3.3.3.3", "garbage", "203.0.113.77"];

    it("a spoofed X-Forwarded-For never resets the counter (trustProxy 0)", async () => {
      const { statuses } = setup({ rules: [{ limit: 2, windowMs: 60_000 }] });
      expect(await statuses(2, "/", { address: "203.0.113.5" })).toEqual([200, 200]);
      for (const spoof of spoofs) {
        const headers = { "x-forwarded-for": spoof, forwarded: `for=${spoof}` };
        expect(await statuses(1, "/", { address: "203.0.113.5", headers })).toEqual([429]);
      }
    });

    it("a spoofed left-most X-Forwarded-For entry never resets the counter (trustProxy 1)", async () => {
      const { statuses } = setup({ trustProxy: 1, rules: [{ limit: 2, windowMs: 60_000 }] });
      const via = (xff: string) => ({ address: "10.0.0.1", headers: { "x-forwarded-for": xff } });
      expect(await statuses(2, "/", via("203.0.113.5"))).toEqual([200, 200]);
      for (const spoof of spoofs) {
        expect(await statuses(1, "/", via(`${spoof}, 203.0.113.5`))).toEqual([429]);
      }
      // Another client behind the same proxy has its own counter.
      expect(await statuses(1, "/", via("1.1.1.1, 198.51.100.20"))).toEqual([200]);
    });

    it("IPv6 clients in one /56 share a counter; other /56s do not", async () => {
      const { statuses } = setup({ rules: [{ limit: 2, windowMs: 60_000 }] });
      expect(await statuses(1, "/", { address: "2001:db8:1:ab01::1" })).toEqual([200]);
      expect(await statuses(1, "/", { address: "2001:db8:1:abff:1234::9" })).toEqual([200]);
      expect(await statuses(1, "/", { address: "[2001:DB8:1:AB00::5]:443" })).toEqual([429]);
      expect(await statuses(1, "/", { address: "2001:db8:1:ac00::1" })).toEqual([200]);
      expect(await statuses(1, "/", { address: "2001:db8:2:ab01::1" })).toEqual([200]);
    });

    it("honours a configured IPv6 prefix", async () => {
      const { statuses } = setup({ ipv6Prefix: 64, rules: [{ limit: 1, windowMs: 60_000 }] });
      expect(await statuses(1, "/", { address: "2001:db8:1:ab01::1" })).toEqual([200]);
      expect(await statuses(1, "/", { address: "2001:db8:1:ab02::1" })).toEqual([200]);
      expect(await statuses(1, "/", { address: "2001:db8:1:ab01::2" })).toEqual([429]);
    });

    it("IPv4-mapped IPv6 shares the counter of the plain IPv4 address", async () => {
      const { statuses } = setup({ rules: [{ limit: 2, windowMs: 60_000 }] });
      expect(await statuses(1, "/", { address: "203.0.113.5" })).toEqual([200]);
      expect(await statuses(1, "/", { address: "::ffff:203.0.113.5" })).toEqual([200]);
      expect(await statuses(1, "/", { address: "::FFFF:cb00:7105" })).toEqual([429]);
    });

    it("unknown addresses share one counter per rule instead of going unlimited", async () => {
      const { statuses } = setup({
        rules: [
          { name: "a", limit: 2, windowMs: 60_000 },
          { name: "b", match: "/b", limit: 5, windowMs: 60_000 },
        ],
      });
      expect(await statuses(1, "/", { address: undefined })).toEqual([200]);
      expect(await statuses(1, "/", { address: "not-an-ip" })).toEqual([200]);
      expect(
        await statuses(1, "/", {
          address: undefined,
          headers: { "x-forwarded-for": "198.51.100.1" },
        }),
      ).toEqual([429]);
      expect(await statuses(1, "/", { address: "203.0.113.5" })).toEqual([200]);
    });
  });

  describe("store failures", () => {
    const broken = (how: "throw" | "reject" | "garbage"): RateLimitStore => ({
      hit: ((_key: string, _policy: RateLimitPolicy, _now: number) => {
        if (how === "throw") throw new Error("down");
        if (how === "reject") return Promise.reject(new Error("down"));
        return Promise.resolve({ allowed: "yes" });
      }) as RateLimitStore["hit"],
      reset: async () => {},
    });

    it.each(["throw", "reject", "garbage"] as const)(
      "fail closed with 503 when the store %ss",
      async (how) => {
        const onStoreError = vi.fn();
        const { send, downstream } = setup({
          store: broken(how),
          onStoreError,
          rules: [{ limit: 10, windowMs: 1000 }],
        });
        const response = await send();
        expect(response.status).toBe(503);
        expect(response.headers.get("content-type")).toBe("application/problem+json");
        expect(downstream).not.toHaveBeenCalled();
        expect(onStoreError).toHaveBeenCalledTimes(1);
      },
    );

    it("fail open when configured, without fields for the failed rule", async () => {
      const onStoreError = vi.fn();
      const { send, downstream } = setup({
        store: broken("reject"),
        failOpen: true,
        onStoreError,
        rules: [{ limit: 10, windowMs: 1000 }],
      });
      const response = await send();
      expect(response.status).toBe(200);
      expect(response.headers.has("ratelimit")).toBe(false);
      expect(downstream).toHaveBeenCalledTimes(1);
      expect(onStoreError).toHaveBeenCalledTimes(1);
    });

    it("honour a memory store whose hit was replaced or overridden", async () => {
      const spied = new MemoryRateLimitStore();
      const { send } = setup({
        store: spied,
        onStoreError: () => {},
        rules: [{ limit: 10, windowMs: 1000 }],
      });
      expect((await send()).status).toBe(200);
      // Replaced after the leg was built, as a test's spy would be.
      const spy = vi.spyOn(spied, "hit").mockRejectedValue(new Error("down"));
      expect((await send()).status).toBe(503);
      expect(spy).toHaveBeenCalledTimes(1);

      class Refusing extends MemoryRateLimitStore {
        override async hit(): Promise<never> {
          throw new Error("refused");
        }
      }
      const sub = setup({
        store: new Refusing(),
        onStoreError: () => {},
        rules: [{ limit: 10, windowMs: 1000 }],
      });
      expect((await sub.send()).status).toBe(503);
    });

    it("a throwing onStoreError does not change the answer", async () => {
      const { send } = setup({
        store: broken("reject"),
        onStoreError: () => {
          throw new Error("logger down");
        },
        rules: [{ limit: 10, windowMs: 1000 }],
      });
      expect((await send()).status).toBe(503);
    });
  });

  describe("response fields", () => {
    it("leave fields the downstream set alone", async () => {
      const handler = rateLimit({ rules: [{ name: "x", limit: 5, windowMs: 1000 }] })(
        async () => new Response("ok", { headers: { RateLimit: '"own";r=1' } }),
      );
      const request = new Request("https://example.test/");
      bindValue(request, PEER_ADDRESS, "203.0.113.5");
      const response = await handler(request);
      expect(response.headers.get("ratelimit")).toBe('"own";r=1');
      expect(response.headers.get("ratelimit-policy")).toBe('"x";q=5;w=1');
    });

    it("copy an immutable response without reading its body", async () => {
      const upstream = await fetchLike("streamed body");
      const handler = rateLimit({ rules: [{ name: "x", limit: 5, windowMs: 1000 }] })(
        async () => upstream,
      );
      const request = new Request("https://example.test/");
      bindValue(request, PEER_ADDRESS, "203.0.113.5");
      const response = await handler(request);
      expect(response).not.toBe(upstream);
      expect(upstream.bodyUsed).toBe(false);
      expect(response.status).toBe(201);
      expect(response.headers.get("x-upstream")).toBe("1");
      expect(response.headers.get("ratelimit")).toBe('"x";r=4;t=1');
      expect(await response.text()).toBe("streamed body");
    });

    it("can be turned off for allowed responses; 429 still carries Retry-After", async () => {
      const { send } = setup({ headers: false, rules: [{ limit: 1, windowMs: 1000 }] });
      const allowed = await send();
      expect(allowed.headers.has("ratelimit")).toBe(false);
      expect(allowed.headers.has("ratelimit-policy")).toBe(false);
      const denied = await send();
      expect(denied.status).toBe(429);
      expect(denied.headers.has("ratelimit")).toBe(false);
      // Sliding window, limit 1: the spent window still weighs fully at the next one's start.
      expect(denied.headers.get("retry-after")).toBe("2");
    });
  });

  it("lets requests no rule covers through untouched and uncounted", async () => {
    const hit = vi.fn();
    const { send } = setup({
      store: { hit, reset: async () => {} },
      rules: [{ match: "/api/**", limit: 1, windowMs: 1000 }],
    });
    const response = await send("/static/app.js");
    expect(response.status).toBe(200);
    expect(response.headers.has("ratelimit")).toBe(false);
    expect(hit).not.toHaveBeenCalled();
  });

  it("validates its options when built", () => {
    const rule = { limit: 1, windowMs: 1000 };
    const bad: unknown[] = [
      undefined,
      {},
      { rules: [] },
      { rules: [{ ...rule, limit: 0 }] },
      { rules: [{ ...rule, limit: 1.5 }] },
      { rules: [{ ...rule, limit: "10" }] },
      { rules: [{ ...rule, windowMs: -1 }] },
      { rules: [{ ...rule, windowMs: Number.POSITIVE_INFINITY }] },
      { rules: [{ ...rule, algorithm: "leaky" }] },
      { rules: [{ ...rule, key: "ip" }] },
      { rules: [{ ...rule, match: "admin" }] },
      { rules: [{ ...rule, match: [] }] },
      { rules: [{ ...rule, methods: [] }] },
      { rules: [{ ...rule, methods: ["GET POST"] }] },
      { rules: [{ ...rule, methods: ["POTS"] }] },
      { rules: [{ ...rule, methods: ["post"] }] },
      { rules: [{ ...rule, methods: ["PROPFIND"] }] },
      { rules: [{ ...rule, methods: ["propfind"] }], extensionMethods: ["propfind"] },
      { rules: [rule], extensionMethods: "PROPFIND" },
      { rules: [rule], methods: ["POST"] },
      { rules: [{ ...rule, name: "has space" }] },
      { rules: [{ ...rule, name: "has:colon" }] },
      { rules: [rule, { ...rule, name: "rule1" }] },
      { rules: [rule], ipv6Prefix: 129 },
      { rules: [rule], ipv6Prefix: -1 },
      { rules: [rule], ipv4Prefix: 33 },
      { rules: [rule], trustProxy: -1 },
      { rules: [rule], trustProxy: "1" },
      { rules: [rule], store: {} },
      { rules: [rule], headers: "yes" },
      { rules: [rule], failOpen: 1 },
      { rules: [rule], now: 5 },
    ];
    for (const options of bad) {
      expect(() => rateLimit(options as RateLimitOptions), JSON.stringify(options)).toThrow(
        InvalidOptionsError,
      );
    }
    expect(() =>
      rateLimit({ rules: [rule], ipv6Prefix: 0, ipv4Prefix: 0, trustProxy: 2 }),
    ).not.toThrow();
  });

  it("refuses a misspelt or lower-case method, saying what to write, and takes declared ones", () => {
    const rule = { limit: 1, windowMs: 1000 };
    expect(() => rateLimit({ rules: [{ ...rule, methods: ["POTS"] }] })).toThrow('write "POST"');
    expect(() => rateLimit({ rules: [{ ...rule, methods: ["post"] }] })).toThrow('write "POST"');
    expect(() =>
      rateLimit({ rules: [{ ...rule, methods: ["PROPFIND"] }], extensionMethods: ["PROPFIND"] }),
    ).not.toThrow();
  });
});

describe("rateLimit in the chain", () => {
  it("answers 429 before authorization, and the handler never runs when limited", async () => {
    const time = clock();
    const app = vi.fn(ok);
    const handler = newHandler(app, {
      rateLimit: rateLimit({ now: time.now, rules: [{ limit: 3, windowMs: 60_000 }] }),
      authorization: authz.routes([
        authz.match("/public/**").permitAll(),
        authz.match("/admin/**").hasRole("ADMIN"),
      ]),
    });
    const send = (path: string, address = "203.0.113.5") => {
      const request = new Request(`https://example.test${path}`);
      bindValue(request, PEER_ADDRESS, address);
      return handler(request);
    };
    expect((await send("/public/a")).status).toBe(200);
    expect((await send("/public/b")).status).toBe(200);
    // Denied by authorization, yet counted: the limiter runs first.
    expect((await send("/admin/panel")).status).toBe(401);
    const limited = await send("/admin/panel");
    expect(limited.status).toBe(429);
    expect(limited.headers.has("www-authenticate")).toBe(false);
    expect((await send("/public/a")).status).toBe(429);
    expect(app).toHaveBeenCalledTimes(2);
    // Another client is unaffected.
    expect((await send("/public/a", "198.51.100.1")).status).toBe(200);
    expect(app).toHaveBeenCalledTimes(3);
  });
});

/** A response whose headers are immutable, like one `fetch` returns. */
async function fetchLike(body: string): Promise<Response> {
  const response = new Response(
    new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(body));
        controller.close();
      },
    }),
    { status: 201, headers: { "x-upstream": "1" } },
  );
  const original = response.headers;
  const frozen = new Headers(original);
  for (const method of ["set", "append", "delete"] as const) {
    Object.defineProperty(frozen, method, {
      value: () => {
        throw new TypeError("immutable");
      },
    });
  }
  Object.defineProperty(response, "headers", { value: frozen });
  return response;
}
