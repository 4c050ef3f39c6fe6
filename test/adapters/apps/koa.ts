import { createServer } from "node:http";
import { Readable } from "node:stream";
import Koa, { type Context, type Middleware, type Next } from "koa";
import { mustAuthentication, sessionFrom } from "portcullis";
import { koaMiddleware } from "../../../src/adapters/koa/index.ts";
import { type Kit, listen, type Served, slowChunks } from "../kit.ts";

/** Reads the body by hand from ctx.req, as a minimal body parser would. */
async function readBody(ctx: Context): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  if (ctx.is("application/json")) return JSON.parse(text);
  if (ctx.is("application/x-www-form-urlencoded"))
    return Object.fromEntries(new URLSearchParams(text));
  return text;
}

type Route = (ctx: Context) => unknown;

export function startKoa(kit: Kit): Promise<Served> {
  const app = new Koa();
  app.use(koaMiddleware(kit.chain));
  const literal = koaMiddleware(kit.literalGuard);
  const scoped = koaMiddleware(kit.scopedGuard);

  const table: Record<string, [Middleware[], Route]> = {
    "GET /public/hello": [
      [],
      (ctx) => {
        ctx.type = "text/plain";
        ctx.body = "hello";
      },
    ],
    "GET /public/limited": [
      [],
      (ctx) => {
        ctx.body = "ok";
      },
    ],
    "GET /public/stream": [
      [],
      (ctx) => {
        ctx.type = "text/plain";
        ctx.body = Readable.from(slowChunks(kit));
      },
    ],
    "GET /public/route-header": [
      [],
      (ctx) => {
        ctx.set("x-frame-options", "DENY");
        ctx.set("x-leg", "route");
        ctx.body = "route";
      },
    ],
    "POST /public/session": [
      [],
      async (ctx) => {
        const session = sessionFrom(ctx);
        session?.set("saved", true);
        await session?.save();
        ctx.body = { saved: session !== undefined };
      },
    ],
    "GET /me": [
      [],
      (ctx) => {
        ctx.body = { name: mustAuthentication(ctx).name };
      },
    ],
    "GET /admin/x": [
      [],
      (ctx) => {
        ctx.body = { area: "admin", name: mustAuthentication(ctx).name };
      },
    ],
    "POST /api/echo": [
      [],
      async (ctx) => {
        ctx.body = { name: mustAuthentication(ctx).name, body: await readBody(ctx) };
      },
    ],
    "GET /literal/x": [
      [literal],
      (ctx) => {
        ctx.body = { name: mustAuthentication(ctx).name };
      },
    ],
    "GET /scoped/x": [
      [scoped],
      (ctx) => {
        ctx.body = { name: mustAuthentication(ctx).name };
      },
    ],
    "GET /child/x": [
      [],
      (ctx) => {
        ctx.body = { name: mustAuthentication(ctx).name };
      },
    ],
    "GET /boom": [
      [],
      (ctx) => {
        ctx.body = "boom";
      },
    ],
  };

  app.use(async (ctx: Context, next: Next) => {
    const entry = table[`${ctx.method} ${ctx.path}`];
    if (entry === undefined) return next(); // Koa's own 404
    const [guards, route] = entry;
    const run = async (i: number): Promise<void> => {
      const guard = guards[i];
      if (guard === undefined) {
        kit.hit();
        await route(ctx);
        return;
      }
      await guard(ctx, () => run(i + 1));
    };
    await run(0);
  });
  return listen(createServer(app.callback()));
}
