import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import Koa from "koa";
import { afterEach, describe, expect, it } from "vitest";
import { expressMiddleware } from "../src/adapters/express/index.ts";
import { koaMiddleware } from "../src/adapters/koa/index.ts";
import { authz, newChain } from "../src/index.ts";
import { captureWarnings } from "./warnings.ts";

const warnings = captureWarnings();
const servers: Server[] = [];

afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

const chain = (trustProxy?: number) =>
  newChain({
    session: false,
    csrf: false,
    authorization: authz.routes([authz.anyRequest().permitAll()]),
    ...(trustProxy === undefined ? {} : { trustProxy }),
  });

async function serve(listener: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function expressApp(frameworkTrusts: boolean, trustProxy?: number) {
  const app = express();
  if (frameworkTrusts) app.set("trust proxy", 1);
  app.use(expressMiddleware(chain(trustProxy)));
  app.get("/x", (_req, res) => {
    res.send("ok");
  });
  return serve(app);
}

function koaApp(frameworkTrusts: boolean, trustProxy?: number) {
  const app = new Koa({ proxy: frameworkTrusts });
  app.use(koaMiddleware(chain(trustProxy)));
  app.use((ctx) => {
    ctx.body = "ok";
  });
  return serve(app.callback());
}

const forwarded = { "x-forwarded-for": "203.0.113.7" };

describe.each([
  ["Express", expressApp],
  ["Koa", koaApp],
])("%s: a forwarding header the chain ignores while the framework trusts proxies", (_name, app) => {
  it("warns once, with a stable code", async () => {
    const base = await app(true);
    for (let i = 0; i < 3; i++)
      expect((await fetch(`${base}/x`, { headers: forwarded })).status).toBe(200);
    expect(warnings.map((w) => w.code)).toEqual(["PORTCULLIS_FORWARDED_HEADER_IGNORED"]);
    expect(warnings[0]?.message).toContain("trustProxy");
  });

  it("stays quiet when the chain trusts the proxy too, when the framework does not, or without the header", async () => {
    const agreeing = await app(true, 1);
    expect((await fetch(`${agreeing}/x`, { headers: forwarded })).status).toBe(200);
    const plain = await app(false);
    expect((await fetch(`${plain}/x`, { headers: forwarded })).status).toBe(200);
    const trusting = await app(true);
    expect((await fetch(`${trusting}/x`)).status).toBe(200);
    expect(warnings).toEqual([]);
  });
});
