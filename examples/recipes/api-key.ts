import { serve } from "@hono/node-server";
import { Hono } from "hono";
import {
  type Authentication,
  authz,
  bindAuthentication,
  createAuthentication,
  type Middleware,
  mustAuthentication,
  newHandler,
  nodeServerClientAddress,
} from "portcullis";

const sha256 = async (text: string) =>
  Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))))
    .map((byte) => byte.toString(16).padStart(2, "0"))
    .join("");

// Keys are kept as SHA-256 hashes, each with the principal it signs in.
async function keyTable(): Promise<Map<string, Authentication>> {
  const keys = new Map<string, Authentication>();
  const reporting = process.env.REPORTING_KEY;
  if (reporting)
    keys.set(await sha256(reporting), createAuthentication("reporting-job", ["REPORTS"]));
  return keys;
}
const apiKeys = keyTable(); // no top-level await: this file runs as CommonJS and as an ES module

// Recognises its own requests and binds their principal; any other request goes on as it came,
// and the rules decide.
const apiKey: Middleware = (next) => async (request) => {
  const key = request.headers.get("x-api-key");
  const principal = key === null ? undefined : (await apiKeys).get(await sha256(key));
  if (principal !== undefined) bindAuthentication(request, principal);
  return next(request);
};

const app = new Hono();
app.get("/reports", (c) => c.json({ for: mustAuthentication(c).name }));

const handler = newHandler(app.fetch, {
  clientAddress: nodeServerClientAddress,
  session: false,
  authentication: [apiKey],
  authorization: authz.routes([authz.match("GET", "/reports").hasAuthority("REPORTS")]),
});

const port = Number(process.env.PORT ?? 3000);
serve({ fetch: handler, hostname: "127.0.0.1", port });
console.log(`try: curl -H "x-api-key: $REPORTING_KEY" http://127.0.0.1:${port}/reports`);
