import Koa, { type Context } from "koa";
import { mustAuthentication, requireRole } from "portcullis";
import { koaMiddleware } from "portcullis/adapters/koa";
import { banner, exampleChain } from "../shared/security.js";

async function json(ctx: Context): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
  return chunks.length === 0 ? null : JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

const app = new Koa();
// The whole chain first: it covers every path, unmatched ones included.
app.use(koaMiddleware(exampleChain()));

// A literal role guard, next to the routes it guards.
const adminOnly = koaMiddleware(requireRole("ADMIN"));

app.use(async (ctx, next) => {
  const route = `${ctx.method} ${ctx.path}`;
  if (route === "GET /public/hello") ctx.body = { message: "hello, whoever you are" };
  else if (route === "GET /" || route === "GET /me") {
    const me = mustAuthentication(ctx);
    ctx.body = { name: me.name, authorities: me.authorities };
  } else if (route === "GET /staff/reports") {
    ctx.body = { area: "staff", name: mustAuthentication(ctx).name };
  } else if (route === "POST /notes") {
    ctx.status = 201;
    ctx.body = { by: mustAuthentication(ctx).name, note: await json(ctx) };
  } else if (route === "GET /admin/panel") {
    await adminOnly(ctx, async () => {
      ctx.body = { area: "admin", name: mustAuthentication(ctx).name };
    });
  } else await next(); // Koa's own 404, still with the chain's headers
});

const port = Number(process.env.PORT ?? 3000);
app.listen(port, "127.0.0.1", () => banner("Koa", `http://127.0.0.1:${port}`));
