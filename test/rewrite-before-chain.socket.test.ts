import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import Koa from "koa";
import { afterAll, describe, expect, it } from "vitest";
import { expressMiddleware } from "../src/adapters/express/index.ts";
import { koaMiddleware } from "../src/adapters/koa/index.ts";
import { authz } from "../src/index.ts";
import { basic, basicChain } from "./basic-chain.ts";

const { match, anyRequest } = authz;
const servers: Server[] = [];
afterAll(() => {
  for (const server of servers) server.close();
});

const securityChain = () =>
  basicChain([match("/staff/**").hasRole("STAFF"), anyRequest().authenticated()]);

async function serve(listener: RequestListener): Promise<string> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function expressApp(): Promise<string> {
  const app = express();
  // A locale prefix stripped before the chain: /en/x is routed as /x.
  app.use((req, _res, next) => {
    req.url = req.url.replace(/^\/en(?=\/)/, "");
    next();
  });
  app.use(expressMiddleware(securityChain()));
  app.get("/staff/secret", (_req, res) => {
    res.send("secret");
  });
  app.get("/en/staff/secret", (_req, res) => {
    res.send("never routed");
  });
  return serve(app);
}

function koaApp(): Promise<string> {
  const app = new Koa();
  app.use(async (ctx, next) => {
    ctx.path = ctx.path.replace(/^\/en(?=\/)/, "");
    await next();
  });
  app.use(koaMiddleware(securityChain()));
  app.use((ctx) => {
    ctx.body = ctx.path === "/staff/secret" ? "secret" : "other";
  });
  return serve(app.callback());
}

describe.each([
  ["Express", expressApp],
  ["Koa", koaApp],
])("%s: a URL rewrite mounted before the chain", (_name, start) => {
  it("cannot route a USER to a STAFF-only path through the unrewritten URL", async () => {
    const base = await start();
    const asUser = await fetch(`${base}/en/staff/secret`, {
      headers: { authorization: basic("user") },
    });
    expect(asUser.status).toBe(403);
    expect(await asUser.text()).not.toBe("secret");
    const asStaff = await fetch(`${base}/en/staff/secret`, {
      headers: { authorization: basic("staff") },
    });
    expect(await asStaff.text()).toBe("secret");
    const direct = await fetch(`${base}/staff/secret`, {
      headers: { authorization: basic("user") },
    });
    expect(direct.status).toBe(403);
  });
});
