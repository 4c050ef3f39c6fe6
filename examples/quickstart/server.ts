import { serve } from "@hono/node-server";
import { Hono } from "hono";
import {
  authz,
  basicAuth,
  createPasswordEncoder,
  type LoginUser,
  login,
  mustAuthentication,
  newHandler,
  nodeServerClientAddress,
  passwordCredentials,
  requireRole,
  sessions,
} from "portcullis";
import { honoMiddleware } from "portcullis/adapters/hono";
import { createLingeringServer } from "portcullis/adapters/node";

const { anyRequest, match, routes } = authz;

// Your user table keeps password hashes only: hash when a user sets a password.
const encoder = createPasswordEncoder();
async function userTable(): Promise<Map<string, LoginUser>> {
  const ada = await encoder.hash("change-me-ada");
  return new Map([["ada", { name: "ada", authorities: ["ADMIN"], passwordHash: ada }]]);
}
const users = userTable(); // no top-level await: this file runs as CommonJS and as an ES module
// Form logins and Basic share the users, the encoder and one failure throttle.
const credentials = passwordCredentials({
  findUser: async (name) => (await users).get(name),
  passwordEncoder: encoder,
});

const app = new Hono();
app.get("/public/hello", (c) => c.json({ hello: "anyone" }));
app.get("/", (c) => c.json({ hello: mustAuthentication(c).name }));
// Pattern 2: a literal role check inside the framework, next to the routes it guards.
app.use("/billing/*", honoMiddleware(requireRole("BILLING")));
app.get("/billing/invoices", (c) => c.json({ invoices: [] }));

// Pattern 1: the chain wraps the whole router, so it runs before anything is routed.
const handler = newHandler(app.fetch, {
  // Where the client's address comes from on @hono/node-server; Bun, Deno, Workers have their own.
  clientAddress: nodeServerClientAddress,
  // Secure cookies are the default; plain HTTP on localhost needs secure: false.
  session: sessions({ secure: process.env.NODE_ENV === "production" }),
  authentication: basicAuth({ credentials, required: false }), // API clients may use HTTP Basic
  login: login({ credentials }), // POST /login, POST /logout
  authorization: routes(
    [
      match("GET", "/public/**").permitAll(),
      match("/admin/**").hasRole("ADMIN"),
      anyRequest().authenticated(), // everything else needs a signed-in user
    ],
    { hierarchy: "ADMIN > STAFF > USER" },
  ),
});

// On Node; Bun and Deno serve `handler` as it is, Workers as `export default { fetch: handler }`.
// createLingeringServer: a client still uploading when it is refused gets its 401 all the same.
const port = Number(process.env.PORT ?? 3000);
serve({ fetch: handler, hostname: "127.0.0.1", port, createServer: createLingeringServer });
console.log(`try: curl -u ada:change-me-ada http://127.0.0.1:${port}/`);
