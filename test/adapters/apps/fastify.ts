import { Readable } from "node:stream";
import Fastify from "fastify";
import { mustAuthentication, sessionFrom } from "portcullis";
import { fastifyHook, fastifyPortcullis } from "../../../src/adapters/fastify/index.ts";
import { type Kit, type Served, slowChunks } from "../kit.ts";

export async function startFastify(kit: Kit): Promise<Served> {
  const app = Fastify();
  await app.register(fastifyPortcullis, { chain: kit.chain });
  app.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string" },
    (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );

  app.get("/public/hello", async (_request, reply) => {
    kit.hit();
    return reply.type("text/plain").send("hello");
  });
  app.get("/public/limited", async () => {
    kit.hit();
    return "ok";
  });
  app.get("/public/stream", async (_request, reply) => {
    kit.hit();
    return reply.type("text/plain").send(Readable.from(slowChunks(kit)));
  });
  app.get("/public/route-header", async (_request, reply) => {
    kit.hit();
    return reply.header("x-frame-options", "DENY").header("x-leg", "route").send("route");
  });
  app.post("/public/session", async (request) => {
    kit.hit();
    const session = sessionFrom(request);
    session?.set("saved", true);
    await session?.save();
    return { saved: session !== undefined };
  });
  app.get("/me", async (request) => {
    kit.hit();
    return { name: mustAuthentication(request).name };
  });
  app.get("/admin/x", async (request) => {
    kit.hit();
    return { area: "admin", name: mustAuthentication(request).name };
  });
  app.post("/api/echo", async (request) => {
    kit.hit();
    return { name: mustAuthentication(request).name, body: request.body ?? null };
  });
  // Route-group guards: encapsulated plugins with their own onRequest hook.
  await app.register(
    async (literal) => {
      literal.addHook("onRequest", fastifyHook(kit.literalGuard));
      literal.get("/x", async (request) => {
        kit.hit();
        return { name: mustAuthentication(request).name };
      });
    },
    { prefix: "/literal" },
  );
  await app.register(
    async (scoped) => {
      scoped.get("/x", { onRequest: fastifyHook(kit.scopedGuard) }, async (request) => {
        kit.hit();
        return { name: mustAuthentication(request).name };
      });
    },
    { prefix: "/scoped" },
  );
  // A child plugin registered after the chain: encapsulation must not leave it unguarded.
  await app.register(async (child) => {
    child.get("/child/x", async (request) => {
      kit.hit();
      return { name: mustAuthentication(request).name };
    });
  });
  app.get("/boom", async () => {
    kit.hit();
    return "boom";
  });
  const address = await app.listen({ port: 0, host: "127.0.0.1" });
  return { url: address.replace("localhost", "127.0.0.1"), close: () => app.close() };
}
