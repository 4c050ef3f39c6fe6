import { describe, expect, it } from "vitest";
import { plainTextEncoder } from "../../test/support/plain-text-encoder.ts";
import { routes } from "../authz/routes.ts";
import { anyRequest } from "../authz/rules.ts";
import { Chain } from "../chain/chain.ts";
import { newHandler } from "../chain/new-chain.ts";
import { basicAuth } from "../login/basic-auth.ts";
import { passwordCredentials } from "../login/credentials.ts";
import { rateLimit } from "./rate-limit.ts";

const ok = async () => new Response("ok");
const peer = (_request: Request, address: string) => address;
const basic = (name: string) => `Basic ${btoa(`${name}:pw-${name}`)}`;

/** A chain whose callers sign in with Basic (`pw-<name>`) on every request. */
function chainWith(limiter: ReturnType<typeof rateLimit>) {
  return newHandler(ok, {
    clientAddress: peer,
    session: false,
    csrf: false,
    rateLimit: limiter,
    authentication: basicAuth({
      required: false,
      credentials: passwordCredentials({
        findUser: (name) => ({ name, authorities: ["USER"], passwordHash: `{plain}pw-${name}` }),
        passwordEncoder: plainTextEncoder(),
      }),
    }),
    authorization: routes([anyRequest().permitAll()]),
  });
}

const get = (name?: string) =>
  new Request("https://h/api/x", {
    headers: name === undefined ? {} : { authorization: basic(name) },
  });

describe("principal-keyed rate limits in the chain", () => {
  it("count one signed-in user across addresses, though the leg sits before the authenticators", async () => {
    const handler = chainWith(
      rateLimit({ rules: [{ name: "user", limit: 2, windowMs: 60_000, key: "principal" }] }),
    );
    const statuses: number[] = [];
    for (const address of ["203.0.113.5", "198.51.100.9", "192.0.2.44"]) {
      statuses.push((await handler(get("alice"), address)).status);
    }
    expect(statuses).toEqual([200, 200, 429]);
    // Another user, from an address alice used, has a quota of their own.
    expect((await handler(get("bob"), "203.0.113.5")).status).toBe(200);
    // Anonymous callers fall back to their address.
    expect((await handler(get(), "203.0.113.5")).status).toBe(200);
  });

  it("count the other rules before the session lookup, and report every rule in one set of fields", async () => {
    const handler = chainWith(
      rateLimit({
        rules: [
          { name: "client", limit: 3, windowMs: 60_000 },
          { name: "user", limit: 10, windowMs: 60_000, key: "principal" },
        ],
      }),
    );
    const first = await handler(get("alice"), "203.0.113.5");
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toBe('"client";q=3;w=60, "user";q=10;w=60');
    expect(first.headers.get("ratelimit")).toMatch(/^"client";r=2;t=\d+, "user";r=9;t=\d+$/);
    // The address rule refuses before any password is checked.
    for (const name of ["bob", "carol"]) await handler(get(name), "203.0.113.5");
    const refused = await handler(get("dave"), "203.0.113.5");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("ratelimit")).toMatch(/^"client";r=0;t=\d+$/);
    await expect(refused.json()).resolves.toMatchObject({ "violated-policies": ["client"] });
  });

  it("keeps all rules together outside the chain", async () => {
    const limiter = rateLimit({
      rules: [
        { name: "client", limit: 3, windowMs: 60_000 },
        { name: "user", limit: 10, windowMs: 60_000, key: "principal" },
      ],
    });
    const { placement } = limiter;
    expect(placement?.beforeSession).toBeTypeOf("function");
    expect(placement?.afterAuthentication).toBeTypeOf("function");
    const alone = new Chain(limiter).wrap(ok);
    const response = await alone(get("alice"));
    expect(response.headers.get("ratelimit-policy")).toBe('"client";q=3;w=60, "user";q=10;w=60');
    expect(rateLimit({ rules: [{ limit: 1, windowMs: 1000 }] }).placement).toBe(undefined);
  });
});
