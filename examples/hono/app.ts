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
  sameOriginPath,
  securityHeaders,
  sessions,
  signedInAt,
} from "portcullis";
import { honoMiddleware } from "portcullis/adapters/hono";
import { nodeClientMetadataTransport } from "portcullis/adapters/node";
import { type AgentEvent, agentSessionFrom } from "portcullis/agentauth";
import { mcpEndpoint } from "portcullis/mcp";
import {
  type ClientMetadataDocuments,
  clientMetadataDocuments,
  clientsWithMetadataDocuments,
  MemoryClientStore,
  userCodeHash,
} from "portcullis/oauth2";
import { type DemoAccount, demoAccounts } from "../shared/accounts.ts";
import { createAgents } from "./agents.ts";
import {
  adminPage,
  agentsPage,
  approvalOutcomePage,
  consentPage,
  enterCodePage,
  FAVICON,
  forbiddenPage,
  homePage,
  loginPage,
  reviewPage,
  STYLESHEET,
  staffPage,
  type Viewer,
  type WaitingRow,
} from "./pages.ts";

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
  /** How recent a sign-in approving an agent must be. Default `PORTCULLIS_APPROVAL_MAX_AGE_SECONDS` or 300. */
  readonly approvalMaxAgeSeconds?: number;
  /** Polling interval handed to agents. Default 5 (`PORTCULLIS_POLL_INTERVAL_SECONDS`). */
  readonly pollIntervalSeconds?: number;
  /** Capability token lifetime, in seconds. Default 120. */
  readonly tokenTtlSeconds?: number;
  /** Where client ids that are https URLs are looked up. Default fetched by `nodeClientMetadataTransport()`. */
  readonly clientMetadataDocuments?: ClientMetadataDocuments;
  /** The clock of the agent parts and of the approval pages' checks. Default `Date.now`. */
  readonly now?: () => number;
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
  const now = options.now ?? Date.now;
  const maxAgeMs =
    1000 *
    (options.approvalMaxAgeSeconds ??
      Number(process.env.PORTCULLIS_APPROVAL_MAX_AGE_SECONDS ?? 300));
  // Approvals whose agent has not polled yet (no grant exists before), so the
  // connected-agents page shows them at once. Bounded: the newest few per person.
  const waiting = new Map<string, (WaitingRow & { userCodeHash: string; expiresAt: number })[]>();
  // When each grant last gave a token or ran a capability: this process's memory, as the
  // example's stores are; bounded, the oldest entry goes first.
  const lastUsed = new Map<string, number>();
  const noteUse = (event: AgentEvent) => {
    if (event.type !== "token.issued" && event.type !== "capability.executed") return;
    lastUsed.delete(event.grantId);
    if (lastUsed.size >= 10_000) lastUsed.delete(lastUsed.keys().next().value as string);
    lastUsed.set(event.grantId, now());
  };
  // Registered clients, and MCP clients whose id is the https URL of their metadata document
  // (fetched with the SSRF guard: never from a private, loopback or link-local address).
  const clients = new MemoryClientStore();
  const documents =
    options.clientMetadataDocuments ??
    clientMetadataDocuments({ ...nodeClientMetadataTransport() });
  // Read for the connected-agents page, which only a signed-in person sees.
  const directory = clientsWithMetadataDocuments(clients, documents, "signed_in");
  const agents = await createAgents(
    issuer,
    {
      pollIntervalSeconds:
        options.pollIntervalSeconds ?? Number(process.env.PORTCULLIS_POLL_INTERVAL_SECONDS ?? 5),
      ...(options.tokenTtlSeconds === undefined
        ? {}
        : { tokenTtlSeconds: options.tokenTtlSeconds }),
      ...(options.now === undefined ? {} : { now: options.now }),
      // Ids and outcomes only: events never carry tokens or secrets.
      onEvent: (event) => {
        noteUse(event);
        console.log("agent event", JSON.stringify(event));
      },
      // MCP clients (desktop apps, IDEs): a person signs in, sees the client's request in the
      // same approval page as the device flow's, and approves; the client then renews its
      // access with a refresh token until the grant expires or is revoked.
      authorizationCode: {
        consentPage: async (request, consent) =>
          html(consentPage(await viewerOf(request), consent)),
        errorPage: async (request, { error, description, status }) =>
          html(
            approvalOutcomePage(
              await viewerOf(request).catch(() => undefined),
              // access_denied: this person may approve no more clients; the page links to theirs.
              error === "access_denied"
                ? description
                : `The client's request cannot be answered: ${description}.`,
              false,
            ),
            status,
          ),
        signedInAt,
        signInPath: "/login",
        maxSignInAgeSeconds: Math.max(30, Math.ceil(maxAgeMs / 1000)),
        clientMetadataDocuments: documents,
        // Clients that have no metadata document register themselves (mcp-remote and other
        // desktop clients): public clients only, each address and everyone together rate limited.
        dynamicRegistration: {},
        // mcp-remote comes back to http://localhost:<a port it picks>, not always the one it
        // registered with: localhost matches on any port here, as 127.0.0.1 and [::1] always do.
        redirectUris: { localhostAnyPort: true },
      },
      // The answer to the approval form, as a page of the example.
      approvalResponse: async ({ action, outcome }, request) => {
        const viewer = await viewerOf(request);
        if (outcome.ok && action === "approve") {
          const mine = (waiting.get(viewer.name) ?? []).slice(0, 9);
          mine.unshift({
            principalId: outcome.clientId,
            capabilities: outcome.scope,
            approvedAt: now(),
            userCodeHash: (await userCodeHash(outcome.userCode)) as string,
            expiresAt: outcome.expiresAt,
          });
          waiting.delete(viewer.name);
          if (waiting.size >= 1000) waiting.delete(waiting.keys().next().value as string);
          waiting.set(viewer.name, mine);
        }
        if (outcome.ok)
          return html(
            approvalOutcomePage(
              viewer,
              action === "approve"
                ? "The agent is approved. It can now use what it asked for."
                : "The agent's request was denied.",
              true,
            ),
          );
        const message = problemText(outcome.reason);
        return html(
          approvalOutcomePage(viewer, message, false),
          outcome.reason === "too_many_attempts"
            ? 429
            : outcome.reason === "limit_reached"
              ? 403
              : 400,
        );
      },
    },
    clients,
  );

  const viewerOf = async (request: Request): Promise<Viewer> => ({
    name: mustAuthentication(request).name,
    csrfToken: await csrfToken(request),
  });
  const wantsHtml = (accept: string | undefined) => (accept ?? "").includes("text/html");
  // Approving an agent asks for a recent sign-in: a session left open on a shared screen is not enough.
  const signInAgain = (request: Request, back: string): Response | undefined => {
    const at = signedInAt(request);
    if (at !== undefined && now() - at <= maxAgeMs) return undefined;
    const next = sameOriginPath(back) ?? "/device";
    return new Response(null, {
      status: 303,
      headers: {
        location: `/login?again&next=${encodeURIComponent(next)}`,
        "cache-control": "no-store",
      },
    });
  };

  const app = new Hono();
  app.get("/public/hello", (c) => c.json({ message: "hello, whoever you are" }));
  app.get("/style.css", (c) =>
    c.body(STYLESHEET, 200, {
      "content-type": "text/css; charset=utf-8",
      "cache-control": "public, max-age=3600",
    }),
  );
  app.get("/favicon.ico", (c) =>
    c.body(FAVICON, 200, {
      "content-type": "image/svg+xml",
      "cache-control": "public, max-age=86400",
    }),
  );

  app.get("/login", async (c) => {
    const token = await csrfToken(c);
    const next = sameOriginPath(c.req.query("next"));
    return c.html(
      loginPage(token, {
        failed: c.req.query("error") !== undefined,
        again: c.req.query("again") !== undefined,
        ...(next === undefined ? {} : { next }),
      }),
    );
  });

  app.get("/", async (c) => {
    // Integration pattern 1: the chain in front of the router resolved the principal.
    const me = mustAuthentication(c);
    if (!wantsHtml(c.req.header("accept")))
      return c.json({ name: me.name, authorities: me.authorities });
    return c.html(homePage(await viewerOf(c.req.raw), me.authorities));
  });

  app.get("/staff/*", async (c) => {
    if (!wantsHtml(c.req.header("accept")))
      return c.json({ area: "staff", path: c.req.path, name: mustAuthentication(c).name });
    return c.html(staffPage(await viewerOf(c.req.raw), c.req.path));
  });

  // The verification page agents send their human to. Typing a code leads to
  // the review (which agent asks for what, Approve / Deny); only the review's
  // form approves. A code in a link is shown pre-filled until the human submits it.
  const review = async (request: Request, code: string): Promise<Response> => {
    const viewer = await viewerOf(request);
    if (code === "") return html(enterCodePage(viewer, ""));
    const described = await agents.describe(request, code);
    if (described.ok) return html(reviewPage(viewer, described));
    if (described.reason === "unconfirmed")
      return html(
        enterCodePage(viewer, described.userCode ?? "", {
          text: "Check that this is the code your agent shows, then press Review.",
          problem: false,
        }),
      );
    return html(
      enterCodePage(viewer, code, { text: problemText(described.reason), problem: true }),
      described.reason === "too_many_attempts" ? 429 : 400,
    );
  };
  app.get("/device", async (c) => {
    const code = c.req.query("user_code") ?? "";
    const stale = signInAgain(
      c.req.raw,
      c.req.path + (code === "" ? "" : `?user_code=${encodeURIComponent(code)}`),
    );
    return stale ?? review(c.req.raw, code);
  });
  app.post("/device", async (c) => {
    const code = String((await c.req.formData()).get("user_code") ?? "");
    const stale = signInAgain(
      c.req.raw,
      `/device${code === "" ? "" : `?user_code=${encodeURIComponent(code)}`}`,
    );
    return stale ?? review(c.req.raw, code);
  });
  app.post("/device/approve", async (c) => {
    const stale = signInAgain(c.req.raw, "/device");
    if (stale) return stale;
    return agents.approve(c.req.raw);
  });

  // Connected agents: the signed-in human's grants, with a Revoke button each.
  app.get("/agents", async (c) => {
    const name = mustAuthentication(c).name;
    const grants = await Promise.all(
      (await agents.grantsApprovedBy(name)).map(async (grant) => {
        // An MCP client's grant is for its client id; its name comes from its registration
        // or its metadata document (cached), and is only ever what it calls itself.
        const client = await directory.get(grant.principalId).catch(() => undefined);
        const used = lastUsed.get(grant.grantId);
        return {
          ...grant,
          ...(client?.name === undefined ? {} : { name: client.name }),
          ...(client?.redirectUris === undefined
            ? {}
            : { redirectHosts: client.redirectUris.map((uri) => new URL(uri).host) }),
          ...(used === undefined ? {} : { lastUsedAt: used }),
        };
      }),
    );
    // Still waiting: the agent's request is pending under the code that was approved.
    const at = now();
    const still = [];
    for (const entry of waiting.get(name) ?? []) {
      const pending =
        entry.expiresAt > at
          ? await agents.runtime.store(() =>
              agents.runtime.pending.getByPrincipal(entry.principalId, at),
            )
          : undefined;
      if (pending?.userCodeHash === entry.userCodeHash) still.push(entry);
    }
    if (still.length === 0) waiting.delete(name);
    else waiting.set(name, still);
    return c.html(agentsPage(await viewerOf(c.req.raw), grants, still));
  });
  app.post("/agents/revoke", async (c) => {
    const grantId = String((await c.req.formData()).get("grant_id") ?? "");
    // Only a grant this person approved: a posted grant id cannot reach anyone else's.
    await agents.revokeApprovedBy(mustAuthentication(c).name, grantId);
    return c.redirect("/agents", 303);
  });

  // A capability served at its own location: only a token minted for this URL opens it.
  const reportGuard = agents.resolveSession(`${issuer}/reports/export`);
  app.get("/reports/export", (c) =>
    reportGuard(async (request) => {
      const session = agentSessionFrom(request);
      return Response.json({
        report: "demo report",
        for: session?.principalId,
        approvedBy: session?.approvedBy,
        generatedAt: new Date().toISOString(),
      });
    })(c.req.raw),
  );

  // Integration pattern 2: a literal role guard on the framework's route group.
  const admin = new Hono();
  admin.use("*", honoMiddleware(requireRole("ADMIN")));
  admin.get("/panel", async (c) => {
    if (!wantsHtml(c.req.header("accept")))
      return c.json({ area: "admin", name: mustAuthentication(c).name });
    return c.html(adminPage(await viewerOf(c.req.raw)));
  });
  app.route("/admin", admin);

  const corsOrigin =
    options.corsOrigin ?? process.env.PORTCULLIS_CORS_ORIGIN ?? "https://app.example.test";
  // The browser origins the app trusts besides its own, in one list: CORS, CSRF and /mcp read it.
  const trustedOrigins = [corsOrigin];
  // The capabilities as MCP tools at /mcp; the app's own pages and the trusted origins may call it
  // from a browser.
  const mcp = await mcpEndpoint(agents, {
    allowedOrigins: [new URL(issuer).origin, ...trustedOrigins],
  });
  // The MCP, agent and OAuth endpoints answer first; every other path goes to the router.
  const router: Handler = async (request, ...rest) =>
    (await mcp.route(request)) ?? app.fetch(request, ...rest);
  return newHandler(router, {
    headers: securityHeaders(),
    cors: cors({
      origin: trustedOrigins,
      credentials: true,
      // A browser agent sends DPoP proofs, and must read the nonce and the challenge to retry;
      // an MCP client in a page sends the Streamable HTTP headers too.
      allowedHeaders: [
        "Content-Type",
        "Authorization",
        "X-CSRF-Token",
        "DPoP",
        "Mcp-Protocol-Version",
        "Mcp-Method",
        "Mcp-Name",
      ],
      exposedHeaders: ["DPoP-Nonce", "WWW-Authenticate"],
    }),
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
        { name: "oauth", match: "/oauth/**", limit: 120, windowMs: 60_000 },
        { name: "capabilities", match: "/capability/**", limit: 240, windowMs: 60_000 },
        { name: "mcp", match: "/mcp", limit: 240, windowMs: 60_000 },
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
    // Agents list capabilities with their own credentials; API callers may use HTTP Basic.
    authentication: [
      agents.authenticator,
      basicAuth({ credentials, realm: "portcullis example", required: false }),
    ],
    // The trusted origins may send state-changing requests too, still with a token.
    csrf: csrf({ trustedOrigins }),
    login: login({
      credentials,
      successRedirect: "/",
      failureRedirect: "/login?error",
      logoutRedirect: "/login",
    }),
    // Page loads that are not signed in go to /login and back; a 403 gets a page, not JSON.
    browserDenials: {
      signInPath: "/login",
      // Refused while signed in: the header shows who is signed in, not "Sign in".
      forbiddenPage: async (request) =>
        html(forbiddenPage(await viewerOf(request).catch(() => undefined)), 403),
    },
    authorization: routes(
      [
        match("GET", "/public/**").permitAll(),
        match("GET", "/login").permitAll(),
        match("GET", "/style.css").permitAll(),
        match("GET", "/favicon.ico").permitAll(),
        match("GET", "/").authenticated(),
        match("GET", "/staff/**").hasRole("STAFF"),
        match("GET", "/admin/**").authenticated(), // the route group's guard asks for ADMIN
        // Agents: discovery and OAuth are public (clients authenticate themselves there);
        // the list answers 401 itself; execute and the report check the capability token.
        match("GET", "/.well-known/agent-configuration").permitAll(),
        match("GET", "/.well-known/oauth-authorization-server").permitAll(),
        match("GET", "/.well-known/jwks.json").permitAll(),
        match("GET", "/.well-known/oauth-protected-resource/capability/execute").permitAll(),
        match("GET", "/.well-known/oauth-protected-resource/mcp").permitAll(),
        // Other well-known documents do not exist here: discovery probes get the router's 404.
        match("GET", "/.well-known/**").permitAll(),
        match("POST", "/oauth/device_authorization").permitAll(),
        match("POST", "/oauth/token").permitAll(),
        // Dynamic client registration answers in RFC 7591's shape and budgets itself.
        match("POST", "/oauth/register").permitAll(),
        // The authorization endpoint sends a person who is not signed in to sign in itself, so
        // that a request with prompt=none is answered login_required rather than a page; the
        // consent form's answer needs a signed-in person, and CSRF.
        match("GET", "/oauth/authorize").permitAll(),
        match("POST", "/oauth/authorize").authenticated(),
        match("GET", "/capability/list").permitAll(),
        match("POST", "/capability/execute").permitAll(),
        // The MCP endpoint authenticates every request itself (GET and DELETE answer 405).
        match(["POST", "GET", "DELETE"], "/mcp").permitAll(),
        match("GET", "/reports/export").permitAll(),
        // The human side: signed-in people (USER and up; an agent's key carries only AGENT),
        // ordinary pages with CSRF-protected forms.
        match("GET", "/device").hasRole("USER"),
        match("POST", "/device").hasRole("USER"),
        match("POST", "/device/approve").hasRole("USER"),
        match("GET", "/agents").hasRole("USER"),
        match("POST", "/agents/revoke").hasRole("USER"),
        // Anything else, including paths the router has no route for, is denied.
      ],
      { hierarchy: "ADMIN > STAFF > USER" },
    ),
  });
}

/** What the approval pages say when a code did not lead to a decision. */
function problemText(reason: string): string {
  switch (reason) {
    case "too_many_attempts":
      return "Too many wrong codes. Wait a while before trying again.";
    case "expired":
      return "That code has expired. Ask the agent for a new one.";
    case "invalid_request":
      return "The form was incomplete.";
    case "not_reviewed":
      return "Enter the code and check what the agent asks for before approving.";
    case "limit_reached":
      return "You have approved as many agents as allowed. Revoke one you no longer use under Connected agents, then try again.";
    default:
      return "That code is unknown or has expired. Check it, or ask the agent for a new one.";
  }
}

function html(body: string, status = 200): Response {
  return new Response(body, {
    status,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
  });
}
