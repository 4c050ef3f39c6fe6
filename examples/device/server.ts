/**
 * A human's own devices (a TV, a CLI) signing in with the OAuth device flow:
 *
 *   npx tsx examples/device/server.ts            # this server, on :3001
 *   npx tsx examples/device/device.ts http://127.0.0.1:3001
 *
 * then sign in at /login (demo accounts, local use only) and approve the code
 * at /device. Agents are approved differently: see the main example.
 */
import { serve } from "@hono/node-server";
import {
  authz,
  createPasswordEncoder,
  csrf,
  csrfToken,
  type Handler,
  login,
  newHandler,
  passwordCredentials,
  sessions,
} from "portcullis";
import { demoUsers } from "../shared/accounts.js";
import { createDeviceFlow } from "./device-flow.js";

const port = Number(process.env.PORT ?? 3001);
const host = "127.0.0.1";
const issuer = `http://${host}:${port}`;
const { match, routes } = authz;

const encoder = createPasswordEncoder();
const users = await demoUsers(encoder);
const credentials = passwordCredentials({
  findUser: (name) => users.get(name),
  passwordEncoder: encoder,
});
const flow = await createDeviceFlow(issuer);

const router: Handler = async (request) => {
  const answered = await flow.server.route(request);
  if (answered !== undefined) return answered;
  const url = new URL(request.url);
  if (url.pathname === "/device/approve") return flow.approve(request);
  if (url.pathname === "/device")
    return html(devicePage(await csrfToken(request), url.searchParams.get("user_code") ?? ""));
  if (url.pathname === "/login") return html(loginPage(await csrfToken(request)));
  return new Response("not found", { status: 404 });
};

const handler = newHandler(router, {
  // Secure is off only because the example serves plain HTTP on localhost.
  session: sessions({ secure: false }),
  csrf: csrf(),
  login: login({ credentials, successRedirect: "/device", failureRedirect: "/login" }),
  authorization: routes([
    match("GET", "/login").permitAll(),
    // Devices authenticate themselves as OAuth clients at these endpoints.
    match("GET", "/.well-known/oauth-authorization-server").permitAll(),
    match("GET", "/.well-known/jwks.json").permitAll(),
    match("POST", "/oauth/device_authorization").permitAll(),
    match("POST", "/oauth/token").permitAll(),
    // The approval page and its form are ordinary signed-in pages (session + CSRF token).
    match("GET", "/device").authenticated(),
    match("POST", "/device/approve").authenticated(),
  ]),
});

serve({ fetch: handler, port, hostname: host }, () => {
  console.log(`Portcullis device-flow example listening on ${issuer}`);
  console.log(
    "!! DEMO ACCOUNTS, FOR LOCAL USE ONLY: alice / demo-alice, sam / demo-sam, ada / demo-ada !!",
  );
  console.log(`Start a device with:  npx tsx examples/device/device.ts ${issuer}`);
});

function html(body: string): Response {
  return new Response(body, { headers: { "content-type": "text/html; charset=utf-8" } });
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

function loginPage(token: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head><body>
<form method="post" action="/login">
  <input type="hidden" name="_csrf" value="${escapeHtml(token)}">
  <label>Username <input name="username" required></label>
  <label>Password <input name="password" type="password" required></label>
  <button type="submit">Sign in</button>
</form></body></html>`;
}

function devicePage(token: string, userCode: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Approve a device</title></head><body>
<h1>Approve a device</h1>
<p>Enter the code your device shows. Approving signs the device in as you.</p>
<form method="post" action="/device/approve">
  <input type="hidden" name="_csrf" value="${escapeHtml(token)}">
  <label>Code <input name="user_code" value="${escapeHtml(userCode)}" autocomplete="off" required></label>
  <button type="submit" name="action" value="approve">Approve</button>
  <button type="submit" name="action" value="deny">Deny</button>
</form></body></html>`;
}
