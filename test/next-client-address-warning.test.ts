/**
 * On Next.js the chain sees no socket, and neither newHandler's clientAddress
 * presets nor a Node adapter apply: the missing-address warning must say what
 * does (the trustProxy of a proxy in front that writes X-Forwarded-For).
 */
import { NextRequest } from "next/server.js";
import { describe, expect, it } from "vitest";
import { nextMiddleware, routeHandlers } from "../src/adapters/next/index.ts";
import { authz, basicAuth, newChain, passwordCredentials, rateLimit } from "../src/index.ts";
import { plainTextEncoder } from "./support/plain-text-encoder.ts";
import { captureWarnings } from "./warnings.ts";

const warnings = captureWarnings();

const everyone = authz.routes([authz.anyRequest().permitAll()]);
const chain = newChain({
  session: false,
  rateLimit: rateLimit({ rules: [{ limit: 100, windowMs: 60_000 }] }),
  authorization: everyone,
});
const signingIn = newChain({
  session: false,
  authentication: basicAuth({
    credentials: passwordCredentials({
      findUser: () => undefined,
      passwordEncoder: plainTextEncoder(),
    }),
    required: false,
  }),
  authorization: everyone,
});

const request = (headers: Record<string, string> = {}) =>
  new NextRequest("http://127.0.0.1:3000/x", { headers });

function expectNextAdvice(): void {
  expect(warnings.map((warning) => warning.code)).toEqual(["PORTCULLIS_NO_CLIENT_ADDRESS"]);
  const message = warnings[0]?.message ?? "";
  expect(message).toContain("Next.js");
  expect(message).toContain("trustProxy");
  expect(message).toContain("X-Forwarded-For");
  expect(message).not.toContain("nodeServerClientAddress");
  expect(message).not.toContain("Node adapter");
}

describe("the missing client address on Next.js", () => {
  it("tells the proxy's chain to trust the proxy in front", async () => {
    expect((await nextMiddleware(chain)(request())).status).toBe(200);
    expectNextAdvice();
  });

  it("tells a route handler's chain the same", async () => {
    const { GET } = routeHandlers(chain, { GET: () => new Response("ok") });
    expect((await GET(request(), {})).status).toBe(200);
    expectNextAdvice();
  });

  it("names the login throttle's budget too", async () => {
    const wrong = { authorization: `Basic ${btoa("ann:wrong")}` };
    await nextMiddleware(signingIn)(request(wrong));
    expect(warnings[0]?.message).toContain("login throttle");
    expectNextAdvice();
  });

  it("stays quiet when trustProxy reads the X-Forwarded-For that next start and Vercel set", async () => {
    const trusting = newChain({
      session: false,
      trustProxy: 1,
      rateLimit: rateLimit({ rules: [{ limit: 100, windowMs: 60_000 }] }),
      authorization: everyone,
    });
    const response = await nextMiddleware(trusting)(request({ "x-forwarded-for": "192.0.2.7" }));
    expect(response.status).toBe(200);
    expect(warnings).toEqual([]);
  });
});
