/** The example's HTML pages: plain markup, one stylesheet, no script (the CSP allows none inline). */
import type { ConsentRequest } from "portcullis/agentauth";

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

export interface Viewer {
  readonly name: string;
  readonly csrfToken: string;
}

/** The frame every page shares: a header with the signed-in name and a sign-out button. */
export function layout(title: string, body: string, viewer?: Viewer): string {
  const nav =
    viewer === undefined
      ? `<a href="/login">Sign in</a>`
      : `<span>Signed in as <strong>${escapeHtml(viewer.name)}</strong></span>
    <a href="/">Start</a> <a href="/agents">Connected agents</a>
    <form method="post" action="/logout" class="inline">
      <input type="hidden" name="_csrf" value="${escapeHtml(viewer.csrfToken)}">
      <button type="submit">Sign out</button>
    </form>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Portcullis example</title>
<link rel="stylesheet" href="/style.css">
</head>
<body>
<header><a class="brand" href="/">Portcullis example</a><nav>${nav}</nav></header>
<main>
${body}
</main>
</body>
</html>`;
}

export function loginPage(
  token: string,
  options: { failed: boolean; next?: string; again?: boolean },
): string {
  const notice = options.failed
    ? '<p id="error" class="error" role="alert">Wrong username or password.</p>'
    : options.again
      ? '<p id="again" class="notice" role="status">Please sign in again to approve an agent or a client: your sign-in is too old.</p>'
      : "";
  return layout(
    "Sign in",
    `<h1>Sign in</h1>
${notice}
<form method="post" action="/login" class="stack">
  <input type="hidden" name="_csrf" value="${escapeHtml(token)}">
  ${options.next === undefined ? "" : `<input type="hidden" name="next" value="${escapeHtml(options.next)}">`}
  <label for="username">Username</label>
  <input id="username" name="username" autocomplete="username" required autofocus>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <button type="submit">Sign in</button>
</form>
<p class="muted">Demo accounts, for local use only: alice / demo-alice (USER), sam / demo-sam (STAFF), ada / demo-ada (ADMIN).</p>`,
  );
}

export function homePage(viewer: Viewer, authorities: readonly string[]): string {
  return layout(
    "Start",
    `<h1 id="welcome">Signed in as ${escapeHtml(viewer.name)}</h1>
<p>Authorities: <span id="authorities">${escapeHtml(authorities.join(", "))}</span></p>
<ul>
  <li><a href="/staff/reports">Staff area</a> (STAFF, and ADMIN through the hierarchy)</li>
  <li><a href="/admin/panel">Admin panel</a> (ADMIN only, by the route group's literal guard)</li>
  <li><a href="/device">Approve an agent</a> and see your <a href="/agents">connected agents</a></li>
</ul>`,
    viewer,
  );
}

export function adminPage(viewer: Viewer): string {
  return layout("Admin panel", `<h1>Admin panel</h1><p>Only ADMIN sees this page.</p>`, viewer);
}

/** A signed-in person refused a page: the header shows who they are, not "Sign in". */
export function forbiddenPage(viewer: Viewer | undefined): string {
  return layout(
    "Not allowed",
    `<h1>Not allowed</h1>
<p>Your account may not open this page.</p>
<p><a href="/">Back to the start page</a></p>`,
    viewer,
  );
}

export function staffPage(viewer: Viewer, path: string): string {
  return layout(
    "Staff area",
    `<h1>Staff area</h1><p>Only STAFF (and ADMIN) see this page: <code>${escapeHtml(path)}</code>.</p>`,
    viewer,
  );
}

export interface ApprovalView {
  readonly agentName?: string;
  readonly principalId: string;
  readonly capabilities: readonly { readonly name: string; readonly description: string }[];
  /** As shown, `XXXX-XXXX`. */
  readonly userCode: string;
  /** The proof that this page was shown, carried by its approval form. */
  readonly reviewToken: string;
}

/**
 * The code form: it only leads to the review page (POST /device), never
 * approves. `notice` tells the human to compare a code that came in a link.
 */
export function enterCodePage(
  viewer: Viewer,
  userCode: string,
  message?: { readonly text: string; readonly problem: boolean },
): string {
  const shown =
    message === undefined
      ? ""
      : message.problem
        ? `<p id="error" class="error" role="alert">${escapeHtml(message.text)}</p>`
        : `<p id="notice" class="notice" role="status">${escapeHtml(message.text)}</p>`;
  return layout(
    "Approve an agent",
    `<h1>Approve an agent</h1>
${shown}
<form method="post" action="/device" class="stack">
  <input type="hidden" name="_csrf" value="${escapeHtml(viewer.csrfToken)}">
  <label for="user_code">Code</label>
  <input id="user_code" name="user_code" value="${escapeHtml(userCode)}" autocomplete="off" required>
  <div class="row"><button type="submit">Review</button></div>
</form>
<p class="muted">Enter the code your agent shows. You will see which agent asks for what before you decide.</p>`,
    viewer,
  );
}

/**
 * The one approval design: who asks, for what, Approve / Deny. The device
 * flow's review and an MCP client's consent both render through it, so a
 * person learns one page. `heading` and `details` are markup built here from
 * escaped parts; everything else is escaped on the way in.
 */
interface ApprovalCard {
  readonly title: string;
  readonly heading: string;
  readonly details: string;
  readonly capabilities: readonly { readonly name: string; readonly description: string }[];
  readonly action: string;
  readonly fields: Readonly<Record<string, string>>;
  readonly footnote: string;
}

function approvalPage(viewer: Viewer, card: ApprovalCard): string {
  const hidden = Object.entries({ _csrf: viewer.csrfToken, ...card.fields })
    .map(
      ([name, value]) =>
        `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`,
    )
    .join("\n  ");
  return layout(
    card.title,
    `<h1>${escapeHtml(card.title)}</h1>
<section class="card" id="request">
  <h2>${card.heading}</h2>
  <p class="muted">${card.details}</p>
  <ul id="capabilities">${card.capabilities
    .map((c) => `<li><code>${escapeHtml(c.name)}</code>: ${escapeHtml(c.description)}</li>`)
    .join("")}</ul>
</section>
<form method="post" action="${escapeHtml(card.action)}" class="stack">
  ${hidden}
  <div class="row">
    <button type="submit" name="action" value="approve">Approve</button>
    <button type="submit" name="action" value="deny" class="secondary">Deny</button>
  </div>
</form>
<p class="muted">${escapeHtml(card.footnote)}</p>`,
    viewer,
  );
}

/** What the agent asks for, with Approve and Deny: the only form that approves. */
export function reviewPage(viewer: Viewer, request: ApprovalView): string {
  return approvalPage(viewer, {
    title: "Approve an agent",
    heading: `<span id="agent-name">${escapeHtml(request.agentName ?? request.principalId)}</span> asks for`,
    details: `Agent id <code id="agent-id">${escapeHtml(request.principalId)}</code> · code <code id="user-code">${escapeHtml(request.userCode)}</code>`,
    capabilities: request.capabilities,
    action: "/device/approve",
    fields: { user_code: request.userCode, review: request.reviewToken },
    footnote: "Approving lets the agent use these capabilities for 24 hours, until you revoke it.",
  });
}

/**
 * The consent page: the device flow's approval page, for a client that sends
 * the person back to it. The name is shown as the client's claim, beside
 * where the person will be sent, which is what the server checked.
 */
export function consentPage(viewer: Viewer, request: ConsentRequest): string {
  const heading =
    request.clientName === undefined
      ? `<code id="agent-id">${escapeHtml(request.clientId)}</code> asks for`
      : `A client that calls itself “<span id="agent-name">${escapeHtml(request.clientName)}</span>” asks for`;
  const id =
    request.clientName === undefined
      ? ""
      : `Client id <code id="agent-id">${escapeHtml(request.clientId)}</code> · `;
  return approvalPage(viewer, {
    title: "Approve a client",
    heading,
    details: `${id}it sends you back to <code id="redirect-host">${escapeHtml(request.redirectHost)}</code> · for <code id="resource">${escapeHtml(request.resource)}</code>`,
    capabilities: request.capabilities,
    action: request.action,
    fields: { consent: request.consentToken },
    footnote:
      "Approving lets this client use these capabilities for 24 hours, renewing its access by itself, until you revoke it on Connected agents. Approve only a client you started yourself.",
  });
}

export function approvalOutcomePage(
  viewer: Viewer | undefined,
  message: string,
  ok: boolean,
): string {
  return layout(
    ok ? "Done" : "Not done",
    `<h1>${ok ? "Done" : "Not done"}</h1>
<p id="outcome" class="${ok ? "notice" : "error"}">${escapeHtml(message)}</p>
<p><a href="/agents">Connected agents</a> · <a href="/device">Approve another</a></p>`,
    viewer,
  );
}

export interface GrantRow {
  readonly grantId: string;
  readonly principalId: string;
  readonly status: string;
  readonly capabilities: readonly string[];
  readonly createdAt: number;
  readonly expiresAt: number;
  /** The DPoP key thumbprint the grant is bound to. */
  readonly jkt?: string;
  /** The client's name, as it calls itself. */
  readonly name?: string;
  /** Where an authorization-code client sends people back: its redirect URIs' hosts. */
  readonly redirectHosts?: readonly string[];
  /** When the grant last gave a token or ran a capability, as far as this process saw. */
  readonly lastUsedAt?: number;
}

/** A key thumbprint short enough to compare by eye with what the agent prints. */
function shortKey(jkt: string): string {
  return `${jkt.slice(0, 10)}…`;
}

/** An approval its agent has not collected yet: no grant exists until the agent polls. */
export interface WaitingRow {
  readonly principalId: string;
  readonly capabilities: readonly string[];
  readonly approvedAt: number;
}

/** Who a grant is for: the name it gave itself, its id, and where it sends people back. */
function agentCell(principalId: string, name?: string, redirectHosts?: readonly string[]): string {
  const shown = name === undefined ? "" : `<strong>${escapeHtml(name)}</strong><br>`;
  const back =
    redirectHosts === undefined || redirectHosts.length === 0
      ? ""
      : `<br><span class="muted">returns to ${escapeHtml(redirectHosts.join(", "))}</span>`;
  return `${shown}${escapeHtml(principalId)}${back}`;
}

export function agentsPage(
  viewer: Viewer,
  grants: readonly GrantRow[],
  waiting: readonly WaitingRow[] = [],
): string {
  const time = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace("T", " ");
  const waitingRows = waiting
    .map(
      (w) => `<tr class="waiting">
  <td>${agentCell(w.principalId)}</td>
  <td>${escapeHtml(w.capabilities.join(", ") || "none")}</td>
  <td>${time(w.approvedAt)}</td>
  <td></td>
  <td></td>
  <td></td>
  <td>approved, waiting for the agent</td>
  <td></td>
</tr>`,
    )
    .join("\n");
  const rows = grants
    .map(
      (g) => `<tr data-grant="${escapeHtml(g.grantId)}">
  <td>${agentCell(g.principalId, g.name, g.redirectHosts)}</td>
  <td>${escapeHtml(g.capabilities.join(", ") || "none")}</td>
  <td>${time(g.createdAt)}</td>
  <td>${g.lastUsedAt === undefined ? "not yet" : time(g.lastUsedAt)}</td>
  <td>${time(g.expiresAt)}</td>
  <td>${g.jkt === undefined ? "none" : `<code title="${escapeHtml(g.jkt)}">${escapeHtml(shortKey(g.jkt))}</code>`}</td>
  <td>${escapeHtml(g.status)}</td>
  <td>${
    g.status === "active"
      ? `<form method="post" action="/agents/revoke"><input type="hidden" name="_csrf" value="${escapeHtml(viewer.csrfToken)}"><input type="hidden" name="grant_id" value="${escapeHtml(g.grantId)}"><button type="submit">Revoke</button></form>`
      : ""
  }</td>
</tr>`,
    )
    .join("\n");
  return layout(
    "Connected agents",
    `<h1>Connected agents</h1>
${
  grants.length + waiting.length === 0
    ? "<p>You have not approved any agent.</p>"
    : `<table><thead><tr><th scope="col">Agent or client</th><th scope="col">Capabilities</th><th scope="col">Approved (UTC)</th><th scope="col">Last used (UTC)</th><th scope="col">Expires (UTC)</th><th scope="col">Key</th><th scope="col">Status</th><th scope="col"></th></tr></thead>
<tbody>${[waitingRows, rows].filter((r) => r !== "").join("\n")}</tbody></table>`
}`,
    viewer,
  );
}

export const STYLESHEET = `:root { color-scheme: light dark; --accent: #1d4ed8; --error: #b91c1c; --ok: #166534; }
* { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; }
header { display: flex; gap: 1rem; align-items: center; justify-content: space-between; padding: .75rem 1.5rem; border-bottom: 1px solid #8884; }
header nav { display: flex; gap: 1rem; align-items: center; }
.brand { font-weight: 600; text-decoration: none; }
main { max-width: 44rem; margin: 2rem auto; padding: 0 1.5rem; }
main:has(table) { max-width: 64rem; }
a { color: var(--accent); }
.stack { display: grid; gap: .5rem; max-width: 22rem; }
.row { display: flex; gap: .5rem; }
.inline { display: inline; }
input { font: inherit; padding: .45rem .6rem; border: 1px solid #888; border-radius: .3rem; }
button { font: inherit; padding: .45rem .9rem; border: 0; border-radius: .3rem; background: var(--accent); color: #fff; cursor: pointer; }
button.secondary { background: #4b5563; }
:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
.error { color: var(--error); font-weight: 600; }
.notice { color: var(--ok); font-weight: 600; }
.muted { color: #6b7280; }
.card { border: 1px solid #8884; border-radius: .5rem; padding: 1rem; margin: 1rem 0; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .4rem; border-bottom: 1px solid #8884; }
`;

/** A small shield, as SVG: browsers take it for /favicon.ico. */
export const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path d="M8 1 2 3v4c0 4 3 7 6 8 3-1 6-4 6-8V3z" fill="#1d4ed8"/></svg>`;
