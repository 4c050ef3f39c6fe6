import { serve } from "@hono/node-server";
import { Hono } from "hono";
import {
  authz,
  csrfToken,
  newHandler,
  nodeServerClientAddress,
  sessionFrom,
  sessions,
} from "portcullis";

const app = new Hono();

// A server-rendered form carries the session's CSRF token in a hidden `_csrf` field.
app.get("/", async (c) => {
  const token = await csrfToken(c);
  const theme = sessionFrom(c)?.get("theme") === "dark" ? "dark" : "light";
  return c.html(`<p>Theme: ${theme}</p>
    <form method="post" action="/theme"><input type="hidden" name="_csrf" value="${token}">
      <button name="theme" value="dark">Dark</button> <button name="theme" value="light">Light</button>
    </form>`);
});

// The CSRF leg checked the token before this runs; nothing is stored until the save.
app.post("/theme", async (c) => {
  const form = await c.req.formData();
  const session = sessionFrom(c);
  if (session === undefined) return c.text("no session", 500);
  session.set("theme", form.get("theme") === "dark" ? "dark" : "light");
  await session.save();
  return c.redirect("/", 303);
});

const handler = newHandler(app.fetch, {
  clientAddress: nodeServerClientAddress,
  // Secure cookies are the default; plain HTTP on localhost needs secure: false.
  session: sessions({ secure: process.env.NODE_ENV === "production" }),
  authorization: authz.routes([
    authz.match("GET", "/").permitAll(),
    authz.match("POST", "/theme").permitAll(), // still needs the form's CSRF token
  ]),
});

const port = Number(process.env.PORT ?? 3000);
serve({ fetch: handler, hostname: "127.0.0.1", port });
console.log(`open http://127.0.0.1:${port}/`);
