import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { describe, expect, it } from "vitest";
import {
  authz,
  basicAuth,
  newHandler,
  nodeServerClientAddress,
  passwordCredentials,
  rateLimit,
} from "../src/index.ts";
import { plainTextEncoder } from "./support/plain-text-encoder.ts";
import { captureWarnings } from "./warnings.ts";

const warnings = captureWarnings();

function listen(
  options: { clientAddress?: typeof nodeServerClientAddress },
  leg: "rate limit" | "login throttle" = "rate limit",
) {
  const handler = newHandler(async () => new Response("ok"), {
    headers: false,
    session: false,
    csrf: false,
    ...(leg === "rate limit"
      ? { rateLimit: rateLimit({ rules: [{ limit: 100, windowMs: 60_000 }] }) }
      : {
          authentication: basicAuth({
            credentials: passwordCredentials({
              findUser: () => undefined,
              passwordEncoder: plainTextEncoder(),
            }),
            required: false,
          }),
        }),
    authorization: authz.routes([authz.anyRequest().permitAll()]),
    ...options,
  });
  return new Promise<{ base: string; close: () => void }>((resolve) => {
    const server = serve({ fetch: handler, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) =>
      resolve({ base: `http://127.0.0.1:${info.port}`, close: () => server.close() }),
    );
  });
}

describe("a rate-limit leg that never sees a client address", () => {
  it("warns once, with a stable code, on @hono/node-server without clientAddress", async () => {
    const { base, close } = await listen({});
    try {
      for (let i = 0; i < 3; i++) expect((await fetch(`${base}/x`)).status).toBe(200);
    } finally {
      close();
    }
    expect(warnings.map((w) => w.code)).toEqual(["PORTCULLIS_NO_CLIENT_ADDRESS"]);
    expect(warnings[0]?.message).toContain("nodeServerClientAddress");
  });

  it("stays quiet once the server's client address is passed in", async () => {
    const { base, close } = await listen({ clientAddress: nodeServerClientAddress });
    try {
      const response = await fetch(`${base}/x`);
      expect(response.status).toBe(200);
      expect(response.headers.get("ratelimit")).toMatch(/;r=99;/);
    } finally {
      close();
    }
    expect(warnings).toEqual([]);
  });
});

describe("a login throttle that never sees a client address", () => {
  it("warns that its per-client budget does not apply", async () => {
    const { base, close } = await listen({}, "login throttle");
    try {
      const wrong = { authorization: `Basic ${btoa("ann:wrong")}` };
      expect((await fetch(`${base}/x`, { headers: wrong })).status).toBe(401);
    } finally {
      close();
    }
    expect(warnings.map((w) => w.code)).toEqual(["PORTCULLIS_NO_CLIENT_ADDRESS"]);
    expect(warnings[0]?.message).toContain("maxFailuresPerClient");
  });

  it("stays quiet once the server's client address is passed in", async () => {
    const { base, close } = await listen(
      { clientAddress: nodeServerClientAddress },
      "login throttle",
    );
    try {
      const wrong = { authorization: `Basic ${btoa("ann:wrong")}` };
      expect((await fetch(`${base}/x`, { headers: wrong })).status).toBe(401);
    } finally {
      close();
    }
    expect(warnings).toEqual([]);
  });
});
