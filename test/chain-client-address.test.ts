import { authz, newHandler, rateLimit } from "portcullis";
import { describe, expect, it } from "vitest";

const { anyRequest, routes } = authz;
const ok = async () => new Response("ok");

// The runtime hands the socket peer to the chain as the second argument, as Bun and Deno do.
const peer = (_request: Request, address: string) => address;

function limited(trustProxy?: number) {
  return newHandler(ok, {
    clientAddress: peer,
    ...(trustProxy === undefined ? {} : { trustProxy }),
    rateLimit: rateLimit({ rules: [{ name: "all", limit: 2, windowMs: 60_000 }] }),
    authorization: routes([anyRequest().permitAll()]),
  });
}

const get = (xff?: string) =>
  new Request("http://h/x", { headers: xff === undefined ? {} : { "x-forwarded-for": xff } });

describe("the chain's client address feeds the rate limiter", () => {
  it("ignores X-Forwarded-For when no proxy is trusted: spoofing never resets the counter", async () => {
    const handler = limited();
    const statuses = [];
    for (const spoof of ["1.1.1.1", "2.2.2.2", "3.3.3.3"]) {
      statuses.push((await handler(get(spoof), "203.0.113.5")).status);
    }
    expect(statuses).toEqual([200, 200, 429]);
  });

  it("behind one trusted proxy, keys on the right-most entry; a forged left-most entry changes nothing", async () => {
    const handler = limited(1);
    const statuses = [];
    for (const spoof of ["1.1.1.1", "2.2.2.2", "3.3.3.3"]) {
      // The proxy (the peer) appended the real client 198.51.100.7 after whatever the client sent.
      statuses.push((await handler(get(`${spoof}, 198.51.100.7`), "10.0.0.1")).status);
    }
    expect(statuses).toEqual([200, 200, 429]);
    // Another real client behind the same proxy has its own counter.
    expect((await handler(get("198.51.100.8"), "10.0.0.1")).status).toBe(200);
  });

  it("refuses a malformed trustProxy when the chain is built", () => {
    expect(() =>
      newHandler(ok, { trustProxy: -1, authorization: routes([anyRequest().permitAll()]) }),
    ).toThrow(expect.objectContaining({ code: "ERR_INVALID_OPTIONS" }));
  });
});
