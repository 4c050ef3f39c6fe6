import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { authz, cspNonce, newHandler, nodeServerClientAddress, securityHeaders } from "portcullis";

const app = new Hono();
// The response's nonce goes on the page's one inline script; an injected script has none.
app.get("/", (c) =>
  c.html(`<!doctype html><img src="https://images.example.com/logo.png" alt="">
    <script nonce="${cspNonce(c)}">document.title = "allowed by its nonce";</script>`),
);

const handler = newHandler(app.fetch, {
  clientAddress: nodeServerClientAddress,
  headers: securityHeaders({
    contentSecurityPolicy: {
      // Merged over the defaults; `false` (or `null`) removes a directive.
      directives: {
        "img-src": ["'self'", "https://images.example.com"],
        "upgrade-insecure-requests": false,
      },
      nonce: true,
    },
  }),
  session: false,
  authorization: authz.routes([authz.match("GET", "/").permitAll()]),
});

const port = Number(process.env.PORT ?? 3000);
serve({ fetch: handler, hostname: "127.0.0.1", port });
console.log(`try: curl -i http://127.0.0.1:${port}/`);
