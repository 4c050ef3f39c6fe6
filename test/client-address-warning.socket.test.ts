import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { describe, expect, it } from "vitest";
import { authz, newHandler, nodeServerClientAddress, rateLimit } from "../src/index.ts";
import { captureWarnings } from "./warnings.ts";

const warnings = captureWarnings();

function listen(options: { clientAddress?: typeof nodeServerClientAddress }) {
  const handler = newHandler(async () => new Response("ok"), {
    headers: false,
    session: false,
    csrf: false,
    rateLimit: rateLimit({ rules: [{ limit: 100, windowMs: 60_000 }] }),
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
