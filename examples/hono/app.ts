import { Hono } from "hono";
import {
  authz,
  basicAuth,
  cors,
  createPasswordEncoder,
  csrf,
  csrfToken,
  type Handler,
  type LoginUser,
  login,
  mustAuthentication,
  newHandler,
  nodeServerClientAddress,
  type PasswordEncoder,
  passwordCredentials,
  rateLimit,
  requireRole,
  type SessionStore,
  securityHeaders,
  sessions,
} from "portcullis";
import { honoMiddleware } from "portcullis/adapters/hono";
import { agentSessionFrom } from "portcullis/agentauth";
import { type DemoAccount, demoAccounts } from "../shared/accounts.ts";
import { createAgents, notes } from "./agents.ts";

const { match, routes } = authz;

export { type DemoAccount, demoAccounts } from "../shared/accounts.ts";

export interface ExampleOptions {
  readonly accounts?: readonly DemoAccount[];
  readonly passwordEncoder?: PasswordEncoder;
  readonly sessionStore?: SessionStore;
  /** Origin allowed to call the API with credentials. Default `PORTCULLIS_CORS_ORIGIN` or `https://app.example.test`. */
  readonly corsOrigin?: string;
  /** Requests per minute per client on `/public/**`. Default 100. */
  readonly publicLimit?: number;
  /** Login attempts per minute per client. Default 10. */
  readonly loginLimit?: number;
  /** The public URL of the app, the OAuth issuer. Default `http://127.0.0.1:3000`. */
  readonly issuer?: string;
}

/** The example application: a Hono router behind the whole security chain. */
export async function createExampleHandler(options: ExampleOptions = {}): Promise<Handler> {
  const encoder = options.passwordEncoder ?? createPasswordEncoder();
  // The store keeps hashes only, as a real user table would.
  const users = new Map<string, LoginUser>();
  for (const account of options.accounts ?? demoAccounts()) {
    users.set(account.name, {
      name: account.name,
      authorities: account.authorities,
      passwordHash: await encoder.hash(account.password),
    });
  }
  // Form logins and HTTP Basic share the user table, the encoder and one failure throttle.
  const credentials = passwordCredentials({
    findUser: (name) => users.get(name),
    passwordEncoder: encoder,
  });

  const issuer = options.issuer ?? "http://127.0.0.1:3000";
  const agents = await createAgents(issuer);

  const app = new Hono();
  app.get("/public/hello", (c) => c.json({ message: "hello, whoever you are" }));

  app.get("/login", async (c) => {
    const token = await csrfToken(c);
    const failed = c.req.query("error") !== undefined;
    return c.html(loginPage(token, failed));
  });

  app.get("/", async (c) => {
    // Integration pattern 1: the chain in front of the router resolved the principal.
    const me = mustAuthentication(c);
    if (!(c.req.header("accept") ?? "").includes("text/html"))
      return c.json({ name: me.name, authorities: me.authorities });
    return c.html(homePage(me.name, me.authorities, await csrfToken(c)));
  });

  app.get("/staff/*", (c) =>
    c.json({ area: "staff", path: c.req.path, name: mustAuthentication(c).name }),
  );

  // Agents: a signed-in human enters the code an agent shows, reviews what it asks for, decides.
  app.get("/agent/approve", async (c) =>
    c.html(agentCodePage(await csrfToken(c), c.req.query("user_code") ?? "")),
  );
  app.post("/agent/review", async (c) => {
    const form = await c.req.formData();
    const described = await agents.describe(c.req.raw, form.get("user_code"));
    return c.html(agentReviewPage(await csrfToken(c), described), described.ok ? 200 : 400);
  });
  app.post("/agent/approve", (c) => agents.approve(c.req.raw));
  // "Agents I have approved", with revoke buttons.
  app.get("/agents", async (c) => {
    const grants = await agents.grantsApprovedBy(mustAuthentication(c).name);
    return c.html(grantsPage(await csrfToken(c), grants));
  });
  app.post("/agents/revoke", async (c) => {
    const grantId = String((await c.req.formData()).get("grant_id") ?? "");
    const mine = await agents.grantsApprovedBy(mustAuthentication(c).name);
    if (mine.some((grant) => grant.grantId === grantId)) await agents.revoke(grantId);
    return c.redirect("/agents", 303);
  });
  // A capability served at its own location: only a token minted for this URL opens it.
  const exportGuard = agents.resolveSession(`${issuer}/exports/notes`);
  app.get("/exports/notes", (c) =>
    exportGuard(async (request) => {
      const session = agentSessionFrom(request);
      const text = notes.map((note) => `${note.by}: ${note.text}`).join("\n");
      return new Response(`exported for ${session?.principalId}\n${text}\n`);
    })(c.req.raw),
  );

  // Integration pattern 2: a literal role guard on the framework's route group.
  const admin = new Hono();
  admin.use("*", honoMiddleware(requireRole("ADMIN")));
  admin.get("/panel", (c) => c.json({ area: "admin", name: mustAuthentication(c).name }));
  app.route("/admin", admin);

  const corsOrigin =
    options.corsOrigin ?? process.env.PORTCULLIS_CORS_ORIGIN ?? "https://app.example.test";
  // The OAuth endpoints answer first; every other path goes to the router.
  const router: Handler = async (request, ...rest) =>
    (await agents.route(request)) ?? app.fetch(request, ...rest);
  return newHandler(router, {
    headers: securityHeaders(),
    cors: cors({ origin: corsOrigin, credentials: true }),
    // @hono/node-server hands the socket to the handler; the chain reads the peer address from it.
    clientAddress: nodeServerClientAddress,
    rateLimit: rateLimit({
      rules: [
        {
          name: "public",
          match: "/public/**",
          limit: options.publicLimit ?? 100,
          windowMs: 60_000,
        },
        { name: "oauth", match: "/oauth/**", limit: 60, windowMs: 60_000 },
        { name: "execute", match: "/capability/**", limit: 120, windowMs: 60_000 },
        {
          name: "login",
          match: "/login",
          methods: ["POST"],
          limit: options.loginLimit ?? 10,
          windowMs: 60_000,
        },
      ],
    }),
    // Secure is off only because the example serves plain HTTP on localhost.
    session: sessions({
      secure: false,
      ...(options.sessionStore ? { store: options.sessionStore } : {}),
    }),
    // HTTP Basic stays available for API calls; without credentials a request goes on as anonymous.
    // Agents list capabilities with their own API key; humans may use HTTP Basic.
    authentication: [
      agents.authenticator,
      basicAuth({ credentials, realm: "portcullis example", required: false }),
    ],
    // The CORS origin may send state-changing requests too, still with a token.
    csrf: csrf({ trustedOrigins: [corsOrigin] }),
    login: login({
      credentials,
      successRedirect: "/",
      failureRedirect: "/login?error",
      logoutRedirect: "/login",
    }),
    authorization: routes(
      [
        match("GET", "/public/**").permitAll(),
        match("GET", "/login").permitAll(),
        match("GET", "/").authenticated(),
        match("GET", "/staff/**").hasRole("STAFF"),
        match("GET", "/admin/**").authenticated(), // the route group's guard asks for ADMIN
        // Agents: discovery and OAuth are public (clients authenticate themselves there);
        // the list answers 401 itself; execute and the location check the capability token.
        match("GET", "/.well-known/agent-configuration").permitAll(),
        match("GET", "/.well-known/oauth-authorization-server").permitAll(),
        match("GET", "/.well-known/jwks.json").permitAll(),
        match("POST", "/oauth/device_authorization").permitAll(),
        match("POST", "/oauth/token").permitAll(),
        match("GET", "/capability/list").permitAll(),
        match("POST", "/capability/execute").permitAll(),
        match("GET", "/exports/notes").permitAll(),
        // The human side: ordinary signed-in pages with CSRF-protected forms.
        match(["GET", "POST"], "/agent/**").authenticated(),
        match(["GET", "POST"], "/agents/**").authenticated(),
        match("GET", "/agents").authenticated(),
        // Anything else, including paths the router has no route for, is denied.
      ],
      { hierarchy: "ADMIN > STAFF > USER" },
    ),
  });
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

function loginPage(token: string, failed: boolean): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in · Portcullis example</title></head>
<body>
<h1>Sign in</h1>
${failed ? '<p id="error" role="alert">Wrong username or password.</p>' : ""}
<form method="post" action="/login">
  <input type="hidden" name="_csrf" value="${escapeHtml(token)}">
  <label>Username <input name="username" autocomplete="username" required></label>
  <label>Password <input name="password" type="password" autocomplete="current-password" required></label>
  <button type="submit">Sign in</button>
</form>
<p>Demo accounts (local use only): alice / demo-alice, sam / demo-sam, ada / demo-ada.</p>
</body></html>`;
}

function agentCodePage(token: string, userCode: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Approve an agent · Portcullis example</title></head>
<body>
<h1>Approve an agent</h1>
<p>Enter the code the agent shows.</p>
<form method="post" action="/agent/review">
  <input type="hidden" name="_csrf" value="${escapeHtml(token)}">
  <label>Code <input name="user_code" value="${escapeHtml(userCode)}" autocomplete="off" required></label>
  <button type="submit">Continue</button>
</form>
</body></html>`;
}

function agentReviewPage(
  token: string,
  described: Awaited<ReturnType<Awaited<ReturnType<typeof createAgents>>["describe"]>>,
): string {
  if (!described.ok)
    return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Approve an agent</title></head>
<body><p id="outcome">${described.reason === "too_many_attempts" ? "Too many wrong codes; wait a while." : "That code is not valid."}</p>
<p><a href="/agent/approve">Try again</a></p></body></html>`;
  const items = described.capabilities
    .map((c) => `<li><code>${escapeHtml(c.name)}</code>: ${escapeHtml(c.description)}</li>`)
    .join("");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Approve an agent · Portcullis example</title></head>
<body>
<h1>${escapeHtml(described.agentName ?? described.principalId)} asks for</h1>
<ul id="capabilities">${items}</ul>
<p>Agent id <code>${escapeHtml(described.principalId)}</code>, code ${escapeHtml(described.userCode)}.</p>
<form method="post" action="/agent/approve">
  <input type="hidden" name="_csrf" value="${escapeHtml(token)}">
  <input type="hidden" name="user_code" value="${escapeHtml(described.userCode)}">
  <button type="submit" name="action" value="approve">Approve</button>
  <button type="submit" name="action" value="deny">Deny</button>
</form>
</body></html>`;
}

function grantsPage(
  token: string,
  grants: readonly {
    grantId: string;
    principalId: string;
    status: string;
    capabilities: readonly string[];
    expiresAt: number;
  }[],
): string {
  const rows = grants
    .map(
      (
        g,
      ) => `<tr><td>${escapeHtml(g.principalId)}</td><td>${escapeHtml(g.capabilities.join(", "))}</td>
<td>${escapeHtml(g.status)}</td><td>${new Date(g.expiresAt).toISOString()}</td><td>${
        g.status === "active"
          ? `<form method="post" action="/agents/revoke"><input type="hidden" name="_csrf" value="${escapeHtml(token)}"><input type="hidden" name="grant_id" value="${escapeHtml(g.grantId)}"><button type="submit">Revoke</button></form>`
          : ""
      }</td></tr>`,
    )
    .join("");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Agents I have approved · Portcullis example</title></head>
<body>
<h1>Agents I have approved</h1>
<table><tr><th>Agent</th><th>Capabilities</th><th>Status</th><th>Expires</th><th></th></tr>${rows}</table>
</body></html>`;
}

function homePage(name: string, authorities: readonly string[], token: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Home · Portcullis example</title></head>
<body>
<h1 id="welcome">Signed in as ${escapeHtml(name)}</h1>
<p>Authorities: <span id="authorities">${escapeHtml(authorities.join(", "))}</span></p>
<ul><li><a href="/staff/reports">Staff area</a></li><li><a href="/admin/panel">Admin panel</a></li></ul>
<form method="post" action="/logout">
  <input type="hidden" name="_csrf" value="${escapeHtml(token)}">
  <button type="submit">Sign out</button>
</form>
</body></html>`;
}
