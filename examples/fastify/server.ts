import Fastify, { type FastifyRequest } from "fastify";
import { mustAuthentication, requireRole } from "portcullis";
import { fastifyHook, fastifyPortcullis } from "portcullis/adapters/fastify";
import { banner, exampleChain } from "../shared/security.js";

const app = Fastify();
// A fastify-plugin plugin: its hook covers every route, child plugins and 404s included.
app.register(fastifyPortcullis, { chain: exampleChain() });

app.get("/public/hello", async () => ({ message: "hello, whoever you are" }));
const whoAmI = async (request: FastifyRequest) => {
  const me = mustAuthentication(request);
  return { name: me.name, authorities: me.authorities };
};
app.get("/", whoAmI);
app.get("/me", whoAmI);
app.get("/staff/reports", async (request) => ({
  area: "staff",
  name: mustAuthentication(request).name,
}));
app.post("/notes", async (request, reply) =>
  reply.code(201).send({ by: mustAuthentication(request).name, note: request.body }),
);

// A literal role guard on one encapsulated plugin, next to the routes it guards.
app.register(
  async (admin) => {
    admin.addHook("onRequest", fastifyHook(requireRole("ADMIN")));
    admin.get("/panel", async (request) => ({
      area: "admin",
      name: mustAuthentication(request).name,
    }));
  },
  { prefix: "/admin" },
);

const port = Number(process.env.PORT ?? 3000);
app.listen({ port, host: "127.0.0.1" }).then(() => banner("Fastify", `http://127.0.0.1:${port}`));
