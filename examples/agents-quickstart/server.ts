import { serve } from "@hono/node-server";
import {
  authz,
  basicAuth,
  createPasswordEncoder,
  csrf,
  csrfToken,
  login,
  mustAuthentication,
  newHandler,
  nodeServerClientAddress,
  passwordCredentials,
  sameOriginPath,
  sessions,
  signedInAt,
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
  // MCP clients (desktop apps, IDEs, the MCP SDKs' auth()) sign in by authorization code: they
  // register themselves, a signed-in human approves on the consent page, refresh tokens follow.
  authorizationCode: {
    consentPage: (request, consent) => {
      // The name is the client's own claim: quoted, beside where the browser is sent back.
      const who = `"${consent.clientName ?? consent.clientId}" (back to ${consent.redirectHost})`;
      return decision(request, who, consent.capabilities, consent.action, {
        consent: consent.consentToken,
      });
    },
    signedInAt,
    signInPath: "/login",
    dynamicRegistration: {}, // POST /oauth/register: public clients only, rate limited
  },
  onEvent: (event) => console.log("agent event", event), // ids and outcomes, never tokens
});

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
const page = (body: string, status = 200) =>
  new Response(`<!doctype html><meta charset="utf-8"><title>Approve an agent</title>${body}`, {
    status,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
  });
// A form's hidden fields, the CSRF token first.
const hidden = async (request: Request, fields: Record<string, string> = {}) =>
  Object.entries({ _csrf: await csrfToken(request), ...fields })
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`)
    .join("");
type Asked = readonly { name: string; description: string }[];
// Every approval, by device flow or by an MCP client's consent: who asks for what, Approve and
// Deny; `fields` prove this human was shown this request (`review`, `consent`).
const decision = async (request: Request, who: string, asked: Asked, action: string, fields = {}) =>
  page(`<h1>${escapeHtml(who)} asks for</h1>
    <ul>${asked.map((c) => `<li>${escapeHtml(c.name)}: ${escapeHtml(c.description)}</li>`).join("")}</ul>
    <form method="post" action="${escapeHtml(action)}">${await hidden(request, fields)}
      <button name="action" value="approve">Approve</button>
      <button name="action" value="deny">Deny</button></form>`);
// The device flow's page: a typed code leads to its review; a GET from a link is only pre-filled
// (`unconfirmed`), and the human submits it to see the request.
async function approvalPage(request: Request, code: string): Promise<Response> {
  const found = code === "" ? undefined : await agents.describe(request, code);
  if (found?.ok) {
    const who = found.agentName ?? found.principalId;
    return decision(request, who, found.capabilities, "/agent/approve", {
      user_code: found.userCode,
      review: found.reviewToken,
    });
  }
  const problem =
    found === undefined || found.reason === "unconfirmed"
      ? ""
      : `<p>${found.reason === "too_many_attempts" ? "Too many wrong codes; wait a while." : "That code is unknown or has expired."}</p>`;
  return page(
    `${problem}<form method="post" action="/agent/review">${await hidden(request)}
      <input name="user_code" value="${escapeHtml(found?.ok === false ? (found.userCode ?? code) : code)}">
      <button>Review</button></form>`,
    found?.ok === false && found.reason === "too_many_attempts" ? 429 : 200,
  );
}
// What this human approved, agents and MCP clients alike, each with Revoke.
async function approvedPage(request: Request): Promise<Response> {
  let rows = "";
  for (const grant of await agents.grantsApprovedBy(mustAuthentication(request).name))
    rows += `<li>${escapeHtml(`${grant.principalId}: ${grant.capabilities.join(", ")} (${grant.status})`)}
      <form method="post" action="/agents">${await hidden(request, { grant_id: grant.grantId })}
      <button>Revoke</button></form></li>`;
  return page(`<h1>Agents you approved</h1><ul>${rows}</ul>`);
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
      `<form method="post" action="/login">${await hidden(request, { next })}
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
  if (url.pathname === "/agents" && request.method === "POST") {
    const grantId = String((await request.formData()).get("grant_id") ?? "");
    await agents.revokeApprovedBy(mustAuthentication(request).name, grantId); // hers only
    return new Response(null, { status: 303, headers: { location: "/agents" } });
  }
  if (url.pathname === "/agents") return approvedPage(request);
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
      authz.match("POST", "/oauth/register").permitAll(), // MCP clients register themselves
      // The consent: a person who is not signed in is sent to sign in by the endpoint itself.
      authz.match("GET", "/oauth/authorize").permitAll(),
      authz.match("POST", "/oauth/authorize").hasRole("USER"),
      authz.match("GET", "/capability/list").permitAll(), // answers 401 + AgentAuth itself
      authz.match("POST", "/capability/execute").permitAll(), // checks the capability token itself
      authz.match(["POST", "GET", "DELETE"], "/mcp").permitAll(), // so does the MCP endpoint
      authz.match(["GET", "POST"], "/agent/approve").authenticated(), // the human's page and form
      authz.match("POST", "/agent/review").authenticated(), // a typed code, to its review
      authz.match(["GET", "POST"], "/agents").hasRole("USER"), // what she approved, and Revoke
    ]),
  }),
});
console.log(`agents quick start on ${issuer}: run the agent with the same RESEARCH_KEY`);
