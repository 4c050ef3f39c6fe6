/**
 * The authorization endpoint mounted as applications mount it: behind the
 * chain's sessions, CSRF, login leg and authorization rules, with the
 * application's consent page. A browser (a cookie jar) signs in with the
 * chain's own form, consents, and oauth4webapi redeems the code.
 */
import { request as httpRequest } from "node:http";
import * as oauth from "oauth4webapi";
import {
  authz,
  createPasswordEncoder,
  csrf,
  csrfToken,
  login,
  newHandler,
  nodeServerClientAddress,
  passwordCredentials,
  sameOriginPath,
  sessions,
  signedInAt,
} from "portcullis";
import type { ConsentRequest } from "portcullis/agentauth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AUTHORIZE_PATH,
  authorizeUrl,
  type CodeSite,
  codeClients,
  DESKTOP,
  insecure,
  LOOPBACK_REDIRECT,
  mcpStatus,
  pkce,
} from "./support/code-flow.ts";
import { CookieJar } from "./support/cookie-jar.ts";
import { mcpSite } from "./support/mcp.ts";

const { match, routes } = authz;
const PASSWORD = "correct horse battery staple";
const NAVIGATE = { accept: "text/html", "sec-fetch-mode": "navigate", "sec-fetch-site": "none" };

let site: CodeSite;
const consents: ConsentRequest[] = [];

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

beforeAll(async () => {
  const encoder = createPasswordEncoder();
  const alice = {
    name: "alice",
    authorities: ["USER"],
    passwordHash: await encoder.hash(PASSWORD),
  };
  const credentials = passwordCredentials({
    findUser: (name) => (name === "alice" ? alice : undefined),
    passwordEncoder: encoder,
  });
  const clients = await codeClients();
  const page = (body: string) =>
    new Response(`<!doctype html><meta charset="utf-8">${body}`, {
      headers: { "content-type": "text/html; charset=utf-8" },
    });
  const made = await mcpSite(
    {
      clients,
      authorizationCode: {
        // The application's consent page: its own dress, its CSRF field, the names escaped.
        consentPage: async (request, consent) => {
          consents.push(consent);
          return page(
            `<h1>${escapeHtml(consent.clientName ?? consent.clientId)}</h1>
             <form method="post" action="${escapeHtml(consent.action)}">
             <input type="hidden" name="_csrf" value="${escapeHtml(await csrfToken(request))}">
             <input type="hidden" name="consent" value="${escapeHtml(consent.consentToken)}">
             <button name="action" value="approve">Approve</button>
             <button name="action" value="deny">Deny</button></form>`,
          );
        },
        signedInAt,
        signInPath: "/login",
      },
    },
    {},
    undefined,
    (router, agents) =>
      newHandler(
        async (request) => {
          const url = new URL(request.url);
          if (url.pathname === "/login" && request.method === "GET") {
            const next = sameOriginPath(url.searchParams.get("next")) ?? "/";
            return page(
              `<form method="post" action="/login">
               <input type="hidden" name="_csrf" value="${await csrfToken(request)}">
               <input type="hidden" name="next" value="${escapeHtml(next)}"></form>`,
            );
          }
          return router(request);
        },
        {
          clientAddress: nodeServerClientAddress,
          session: sessions({ secure: false }),
          csrf: csrf(),
          login: login({ credentials, failureRedirect: "/login?error" }),
          browserDenials: { signInPath: "/login" },
          authentication: [agents.authenticator],
          authorization: routes([
            match("GET", "/login").permitAll(),
            match("GET", "/.well-known/**").permitAll(),
            match("POST", "/oauth/token").permitAll(),
            // As the guide mounts it: the endpoint sends to sign in itself, prompt=none included.
            match("GET", AUTHORIZE_PATH).permitAll(),
            match("POST", AUTHORIZE_PATH).authenticated(),
            match(["POST", "GET", "DELETE"], "/mcp").permitAll(),
          ]),
        },
      ),
  );
  const issuer = new URL(made.base);
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }),
  );
  site = {
    ...made,
    clients,
    consents,
    clock: { offset: 0 },
    now: Date.now,
    as,
  };
});
afterAll(async () => {
  await site?.close();
});

/**
 * One request over node:http: unlike fetch, it sends the Fetch Metadata of
 * a page load (`Sec-Fetch-Mode: navigate`) as a browser does.
 */
function raw(url: URL, method: string, headers: Headers, body?: string): Promise<Response> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(url, { method, headers: Object.fromEntries(headers) }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on("data", (chunk: Buffer) => chunks.push(chunk));
      answer.on("end", () => {
        const received = new Headers();
        for (const [name, value] of Object.entries(answer.headers))
          for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value])
            received.append(name, one);
        resolve(
          new Response(Buffer.concat(chunks), {
            status: answer.statusCode ?? 0,
            headers: received,
          }),
        );
      });
    });
    sent.on("error", reject);
    sent.end(body);
  });
}

/** A browser: cookies kept, redirects not followed. */
function browser() {
  const jar = new CookieJar();
  const go = async (
    url: string | URL,
    init: { method?: string; headers?: Record<string, string>; body?: string } = {},
  ) => {
    const headers = new Headers(init.headers);
    for (const [name, value] of Object.entries(NAVIGATE))
      if (!headers.has(name)) headers.set(name, value);
    const cookie = jar.header();
    if (cookie !== undefined) headers.set("cookie", cookie);
    const response = await raw(new URL(url, site.base), init.method ?? "GET", headers, init.body);
    jar.store(response);
    return response;
  };
  const form = (url: string | URL, fields: Record<string, string>) =>
    go(url, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: site.base,
        "sec-fetch-site": "same-origin",
      },
      body: new URLSearchParams(fields).toString(),
    });
  return { jar, go, form };
}

function field(html: string, name: string): string {
  const found = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (found === null) throw new Error(`no ${name} field`);
  return (found[1] as string).replace(/&#(\d+);/g, (_, code) => String.fromCharCode(Number(code)));
}

/** Signs in through the chain's form, from the redirect an authorization request got. */
async function signIn(b: ReturnType<typeof browser>, signInLocation: string): Promise<string> {
  const loginPage = await (await b.go(signInLocation)).text();
  const answer = await b.form("/login", {
    _csrf: field(loginPage, "_csrf"),
    next: field(loginPage, "next"),
    username: "alice",
    password: PASSWORD,
  });
  expect(answer.status).toBe(303);
  return answer.headers.get("location") as string;
}

/** How many approvals alice's consents recorded: grants made, or her grant of the client widened. */
async function grantsOfAlice() {
  return site.events.filter(
    (event) =>
      (event.type === "grant.created" || event.type === "grant.extended") &&
      event.approvedBy === "alice",
  ).length;
}

describe("the authorization endpoint behind the chain", () => {
  it("signs in with the chain's form, comes back, consents with the CSRF token, and the code is redeemed", async () => {
    const b = browser();
    const { verifier, challenge } = await pkce();
    const state = oauth.generateRandomState();
    const url = authorizeUrl(site, { challenge, state, scope: "read_notes" });
    // Not signed in: to the sign-in page, and back.
    const first = await b.go(url);
    expect(first.status).toBe(303);
    const signInAt = new URL(first.headers.get("location") as string, site.base);
    expect(signInAt.pathname).toBe("/login");
    const shownBefore = consents.length;
    const back = await signIn(b, `${signInAt.pathname}${signInAt.search}`);
    expect(consents.length).toBe(shownBefore);
    const backUrl = new URL(back, site.base);
    expect(backUrl.pathname).toBe(AUTHORIZE_PATH);
    expect(backUrl.searchParams.get("state")).toBe(state);

    const consentPage = await b.go(backUrl);
    expect(consentPage.status).toBe(200);
    expect(consentPage.headers.get("x-frame-options")).toBe("DENY");
    expect(consentPage.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const html = await consentPage.text();
    const answer = await b.form(AUTHORIZE_PATH, {
      _csrf: field(html, "_csrf"),
      consent: field(html, "consent"),
      action: "approve",
    });
    expect(answer.status).toBe(303);
    const callback = new URL(answer.headers.get("location") as string);
    expect(`${callback.origin}${callback.pathname}`).toBe(LOOPBACK_REDIRECT);
    const params = oauth.validateAuthResponse(site.as, { client_id: DESKTOP }, callback, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      site.as,
      { client_id: DESKTOP },
      await oauth.authorizationCodeGrantRequest(
        site.as,
        { client_id: DESKTOP },
        oauth.None(),
        params,
        LOOPBACK_REDIRECT,
        verifier,
        { ...insecure, additionalParameters: { resource: site.mcpUrl } },
      ),
    );
    expect(await mcpStatus(site, tokens.access_token)).toBe(200);
  });

  it("prompt=none from a browser not signed in: login_required back to the client, no page", async () => {
    const b = browser();
    const { challenge } = await pkce();
    const state = oauth.generateRandomState();
    const url = authorizeUrl(site, { challenge, state, scope: "read_notes" });
    url.searchParams.set("prompt", "none");
    const shown = consents.length;
    const answer = await b.go(url);
    expect(answer.status).toBe(303);
    const callback = new URL(answer.headers.get("location") as string);
    expect(`${callback.origin}${callback.pathname}`).toBe(LOOPBACK_REDIRECT);
    expect(() =>
      oauth.validateAuthResponse(site.as, { client_id: DESKTOP }, callback, state),
    ).toThrow(expect.objectContaining({ error: "login_required" }));
    expect(consents.length).toBe(shown);
    // Signed in, it is still no page: consent is asked for every time.
    await signIn(
      b,
      (await b.go(authorizeUrl(site, { challenge }))).headers.get("location") as string,
    );
    const signedIn = new URL((await b.go(url)).headers.get("location") as string);
    expect(signedIn.searchParams.get("error")).toBe("consent_required");
    expect(consents.length).toBe(shown);
  });

  it("refuses a consent POST without the CSRF token (403 from the chain), and nothing is issued", async () => {
    const b = browser();
    const { challenge } = await pkce();
    const url = authorizeUrl(site, { challenge });
    const first = await b.go(url);
    await signIn(b, first.headers.get("location") as string);
    const html = await (await b.go(url)).text();
    const before = await grantsOfAlice();
    const answer = await b.form(AUTHORIZE_PATH, {
      consent: field(html, "consent"),
      action: "approve",
    });
    expect(answer.status).toBe(403);
    expect(answer.headers.get("location")).toBeNull();
    expect(await grantsOfAlice()).toBe(before);
    // With it, the same consent is still good: the refusal spent nothing.
    const again = await b.form(AUTHORIZE_PATH, {
      _csrf: field(html, "_csrf"),
      consent: field(html, "consent"),
      action: "approve",
    });
    expect(again.status).toBe(303);
    expect(await grantsOfAlice()).toBe(before + 1);
  });

  it("refuses a consent POST from a browser that is not signed in: the chain answers, nothing issued", async () => {
    const b = browser();
    const { challenge } = await pkce();
    const url = authorizeUrl(site, { challenge });
    const signed = browser();
    await signIn(signed, (await signed.go(url)).headers.get("location") as string);
    const html = await (await signed.go(url)).text();
    const before = await grantsOfAlice();
    // A fresh browser with the signed-in one's consent token but no session of its own.
    const loginPage = await (await b.go("/login")).text();
    const answer = await b.form(AUTHORIZE_PATH, {
      _csrf: field(loginPage, "_csrf"),
      consent: field(html, "consent"),
      action: "approve",
    });
    expect(answer.status).toBe(303);
    expect(answer.headers.get("location")).toBe("/login");
    expect(await grantsOfAlice()).toBe(before);
  });

  it("the application's page escapes the client's name; agentAuth handed it over raw", async () => {
    const b = browser();
    const { challenge } = await pkce();
    const url = authorizeUrl(site, { challenge, clientId: "named-client" });
    await signIn(b, (await b.go(url)).headers.get("location") as string);
    const html = await (await b.go(url)).text();
    expect(consents.at(-1)?.clientName).toBe("<script>alert(1)</script>");
    expect(html).not.toContain("<script>");
    expect(html).toContain("&#60;script&#62;");
  });
});
