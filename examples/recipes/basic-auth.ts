import { serve } from "@hono/node-server";
import { Hono } from "hono";
import {
  authz,
  basicAuth,
  DelegatingPasswordEncoder,
  type LoginUser,
  mustAuthentication,
  newHandler,
  nodeServerClientAddress,
  Pbkdf2PasswordEncoder,
  passwordCredentials,
  ScryptPasswordEncoder,
} from "portcullis";

// Hashes new passwords with PBKDF2 (native Web Crypto, so also on Workers) and still verifies
// the scrypt hashes stored before; each of those is upgraded at its user's next sign-in.
const encoder = new DelegatingPasswordEncoder("pbkdf2-sha256", {
  "pbkdf2-sha256": new Pbkdf2PasswordEncoder(),
  scrypt: new ScryptPasswordEncoder(),
});

// Your user table keeps hashes only: hash when a user sets a password.
async function userTable(): Promise<Map<string, LoginUser>> {
  const sam = await encoder.hash("change-me-sam");
  return new Map([["sam", { name: "sam", authorities: ["STAFF"], passwordHash: sam }]]);
}
const users = userTable(); // no top-level await: this file runs as CommonJS and as an ES module
const credentials = passwordCredentials({
  findUser: async (name) => (await users).get(name),
  passwordEncoder: encoder,
  onPasswordUpgrade: async (user, passwordHash) => {
    (await users).set(user.name, { ...user, passwordHash });
  },
});

const app = new Hono();
app.get("/reports", (c) => c.json({ for: mustAuthentication(c).name }));

const handler = newHandler(app.fetch, {
  clientAddress: nodeServerClientAddress, // the failure throttle counts per client too
  session: false, // an API: HTTP Basic on every call, no cookies
  authentication: basicAuth({ credentials, required: false }),
  authorization: authz.routes([authz.match("GET", "/reports").hasRole("STAFF")]),
});

const port = Number(process.env.PORT ?? 3000);
serve({ fetch: handler, hostname: "127.0.0.1", port });
console.log(`try: curl -u sam:change-me-sam http://127.0.0.1:${port}/reports`);
