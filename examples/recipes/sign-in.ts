import { serve } from "@hono/node-server";
import { Hono } from "hono";
import {
  authz,
  createAuthentication,
  mustAuthentication,
  newHandler,
  nodeServerClientAddress,
  sessionFrom,
  sessions,
} from "portcullis";

interface VerifiedUser {
  readonly name: string;
  readonly roles: readonly string[];
}

// Your identity provider's check of its callback (OpenID Connect, SAML, a magic link). This
// stand-in knows nobody, so every sign-in is refused until you write it.
async function verifyWithYourIdentityProvider(
  _request: Request,
): Promise<VerifiedUser | undefined> {
  return undefined;
}

const app = new Hono();
app.post("/sso/callback", async (c) => {
  const user = await verifyWithYourIdentityProvider(c.req.raw);
  const session = sessionFrom(c);
  if (user === undefined || session === undefined) return c.text("sign-in failed", 401);
  // Rotates the session id: an id planted before sign-in never becomes a signed-in one.
  session.setAuthentication(createAuthentication(user.name, user.roles));
  await session.save();
  return c.redirect("/", 303);
});
app.get("/", (c) => c.json({ hello: mustAuthentication(c).name }));

const handler = newHandler(app.fetch, {
  clientAddress: nodeServerClientAddress,
  session: sessions({ secure: process.env.NODE_ENV === "production" }),
  authorization: authz.routes([
    authz.match("POST", "/sso/callback").permitAll(), // CSRF still applies to this POST
    authz.anyRequest().authenticated(),
  ]),
});

const port = Number(process.env.PORT ?? 3000);
serve({ fetch: handler, hostname: "127.0.0.1", port });
console.log(`listening on http://127.0.0.1:${port}/`);
