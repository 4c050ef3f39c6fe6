import { serve } from "@hono/node-server";
import {
  authz,
  basicAuth,
  createPasswordEncoder,
  csrf,
  csrfToken,
  login,
  newHandler,
  nodeServerClientAddress,
  passwordCredentials,
  sameOriginPath,
  sessions,
} from "portcullis";
import { agentAuth } from "portcullis/agentauth";
import { mcpEndpoint } from "portcullis/mcp";
import { MemoryClientStore } from "portcullis/oauth2";

const port = Number(process.env.PORT ?? 3000);
const issuer = `http://127.0.0.1:${port}`; // your public https URL in production
const { ALICE_PASSWORD, RESEARCH_KEY } = process.env;
if (!ALICE_PASSWORD || !RESEARCH_KEY || RESEARCH_KEY.length < 16)
  throw new Error("set ALICE_PASSWORD, and RESEARCH_KEY to at least 16 characters");

// The humans who approve agents (your user table: hashes only).
const encoder = createPasswordEncoder();
const users = new Map([
  [
    "alice",
    {
      name: "alice",
      authorities: ["USER"],
      passwordHash: await encoder.hash(ALICE_PASSWORD),
    },
  ],
]);
const credentials = passwordCredentials({
  findUser: (name) => users.get(name),
  passwordEncoder: encoder,
});

// The agents: API keys (or OAuth clients) they already hold.
const clients = new MemoryClientStore();
await clients.register({
  clientId: "key_research",
  kind: "api_key",
  secret: RESEARCH_KEY,
  name: "Research agent",
});

const notes: string[] = [];
const agents = await agentAuth({
  issuer,
  clients,
  capabilities: [
    { name: "list_notes", description: "Lists the notes.", handler: () => ({ notes }) },
    {
      name: "add_note",
      description: "Adds a note.",
      input: {
        type: "object",
        properties: { text: { type: "string", maxLength: 500 } },
        required: ["text"],
        additionalProperties: false,
      },
      handler: (args, session) => {
        notes.push(`${session.principalId}: ${args.text}`);
        return { count: notes.length };
      },
    },
  ],
  mcp: {}, // tokens for <issuer>/mcp too, where the same capabilities are MCP tools
  onEvent: (event) => console.log("agent event", event), // ids and outcomes, never tokens
});

// The approval page: a typed code leads to what the agent asks for, with Approve and Deny;
// only that review's form (it carries `review`, the proof it was shown) can approve.
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
const page = (body: string, status = 200) =>
  new Response(`<!doctype html><meta charset="utf-8"><title>Approve an agent</title>${body}`, {
    status,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
  });
async function approvalPage(request: Request, code: string): Promise<Response> {
  const csrfField = `<input type="hidden" name="_csrf" value="${escapeHtml(await csrfToken(request))}">`;
  // A GET from a link is only pre-filled (`unconfirmed`); the human submits it to see the request.
  const found = code === "" ? undefined : await agents.describe(request, code);
  if (found?.ok)
    return page(`<h1>${escapeHtml(found.agentName ?? found.principalId)} asks for</h1>
      <ul>${found.capabilities.map((c) => `<li>${escapeHtml(c.name)}: ${escapeHtml(c.description)}</li>`).join("")}</ul>
      <form method="post" action="/agent/approve">${csrfField}
        <input type="hidden" name="user_code" value="${escapeHtml(found.userCode)}">
        <input type="hidden" name="review" value="${escapeHtml(found.reviewToken)}">
        <button name="action" value="approve">Approve</button>
        <button name="action" value="deny">Deny</button></form>`);
  const problem =
    found === undefined || found.reason === "unconfirmed"
      ? ""
      : `<p>${found.reason === "too_many_attempts" ? "Too many wrong codes; wait a while." : "That code is unknown or has expired."}</p>`;
  return page(
    `${problem}<form method="post" action="/agent/review">${csrfField}
      <input name="user_code" value="${escapeHtml(found?.ok === false ? (found.userCode ?? code) : code)}">
      <button>Review</button></form>`,
    found?.ok === false && found.reason === "too_many_attempts" ? 429 : 200,
  );
}

// The same capabilities as MCP tools at /mcp, for MCP clients (the MCP SDK's server does the protocol).
const mcp = await mcpEndpoint(agents);

const router = async (request: Request): Promise<Response> => {
  const answered = await mcp.route(request); // /mcp, then discovery, list, execute, OAuth endpoints
  if (answered) return answered;
  const url = new URL(request.url);
  if (url.pathname === "/login") {
    // The sign-in form; the login leg answers its POST and sends the browser back to `next`.
    const next = sameOriginPath(url.searchParams.get("next")) ?? "/agent/approve";
    return page(
      `<form method="post" action="/login"><input type="hidden" name="_csrf" value="${await csrfToken(request)}">
       <input type="hidden" name="next" value="${escapeHtml(next)}">
       ${url.searchParams.has("error") ? "<p>Wrong username or password.</p>" : ""}
       <label>Username <input name="username"></label>
       <label>Password <input name="password" type="password"></label><button>Sign in</button></form>`,
    );
  }
  if (url.pathname === "/agent/approve" && request.method === "POST")
    return agents.approve(request); // Approve needs the review's token; Deny needs only the code
  if (url.pathname === "/agent/approve")
    return approvalPage(request, url.searchParams.get("user_code") ?? "");
  if (url.pathname === "/agent/review" && request.method === "POST")
    return approvalPage(request, String((await request.formData()).get("user_code") ?? ""));
  return new Response("not found", { status: 404 });
};

serve({
  hostname: "127.0.0.1",
  port,
  fetch: newHandler(router, {
    clientAddress: nodeServerClientAddress, // the peer's address, for the login throttle
    session: sessions({ secure: false }), // plain HTTP on localhost only; keep the default behind TLS
    csrf: csrf(),
    login: login({ credentials, failureRedirect: "/login?error" }), // POST /login, CSRF token
    // A page load that is not signed in goes to /login and comes back after.
    browserDenials: { signInPath: "/login" },
    // Agents list capabilities with their own key; humans may use Basic too.
    authentication: [agents.authenticator, basicAuth({ credentials, required: false })],
    authorization: authz.routes([
      authz.match("GET", "/login").permitAll(),
      authz.match("GET", "/.well-known/agent-configuration").permitAll(),
      authz.match("GET", "/.well-known/oauth-authorization-server").permitAll(),
      authz.match("GET", "/.well-known/jwks.json").permitAll(),
      // RFC 9728 metadata of the execute URL; 404 for paths nothing is served at.
      authz.match("GET", "/.well-known/oauth-protected-resource/**").permitAll(),
      authz.match("POST", "/oauth/device_authorization").permitAll(), // clients authenticate there
      authz.match("POST", "/oauth/token").permitAll(),
      authz.match("GET", "/capability/list").permitAll(), // answers 401 + AgentAuth itself
      authz.match("POST", "/capability/execute").permitAll(), // checks the capability token itself
      authz.match(["POST", "GET", "DELETE"], "/mcp").permitAll(), // so does the MCP endpoint
      authz.match(["GET", "POST"], "/agent/approve").authenticated(), // the human's page and form
      authz.match("POST", "/agent/review").authenticated(), // a typed code, to its review
    ]),
  }),
});
console.log(`agents quick start on ${issuer}: run the agent with the same RESEARCH_KEY`);
