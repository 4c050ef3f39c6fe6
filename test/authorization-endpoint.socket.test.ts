/**
 * The authorization endpoint over a real socket: what goes back to the
 * client's redirect URI (with `state` and `iss`) and what only to an error
 * page (no redirect while the client or the URI is in doubt), and the
 * consent: who may answer it, how recent their sign-in, once, and never in
 * a frame; `prompt`, `max_age`, request objects and `response_mode` as
 * openid-client sends them.
 */
import { decodeJwt } from "jose";
import * as oauth from "oauth4webapi";
import * as oidc from "openid-client";
import { DEFAULT_CSP_DIRECTIVES } from "portcullis";
import { jwtSigner } from "portcullis/jwt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AUTHORIZE_PATH,
  authorizeUrl,
  type CodeSite,
  codeSite,
  consentFor,
  DESKTOP,
  LOOPBACK_REDIRECT,
  openAuthorize,
  pkce,
  postConsent,
  signedInHeader,
  WEB,
  WEB_REDIRECT,
  XSS_CLIENT,
  XSS_NAME,
} from "./support/code-flow.ts";
import { AGENT_ID, AGENT_SECRET } from "./support/mcp.ts";

let site: CodeSite;
let challenge: string;
beforeAll(async () => {
  site = await codeSite();
  ({ challenge } = await pkce());
});
afterAll(async () => {
  await site?.close();
});

/** An error page: 400, HTML, no Location, and the description in it. */
async function expectErrorPage(response: Response): Promise<string> {
  expect(response.status).toBe(400);
  expect(response.headers.get("location")).toBeNull();
  expect(response.headers.get("content-type")).toMatch(/^text\/html/);
  return response.text();
}

/** A redirect to the client's URI, with error, state and iss. */
function expectRedirectError(
  response: Response,
  error: string,
  state: string | undefined,
  redirect = LOOPBACK_REDIRECT,
) {
  expect(response.status).toBe(303);
  const location = new URL(response.headers.get("location") as string);
  expect(`${location.origin}${location.pathname}`).toBe(redirect);
  expect(location.searchParams.get("error")).toBe(error);
  expect(location.searchParams.get("state")).toBe(state ?? null);
  expect(location.searchParams.getAll("iss")).toEqual([site.base]);
  return location;
}

/** How many approvals alice's consents recorded: grants made, or her grant of the client widened. */
async function grantsOfAlice() {
  return site.events.filter(
    (event) =>
      (event.type === "grant.created" || event.type === "grant.extended") &&
      event.approvedBy === "alice",
  ).length;
}

describe("requests whose client or redirect URI is in doubt: an error page, never a redirect", () => {
  const cases: [string, Record<string, string | undefined>][] = [
    ["an unknown client", { clientId: "nobody" }],
    ["a redirect URI not registered", { redirectUri: "http://127.0.0.1:7777/elsewhere" }],
    ["a registered URI with an extra path", { redirectUri: `${LOOPBACK_REDIRECT}/more` }],
    ["a registered URI with a query", { redirectUri: `${LOOPBACK_REDIRECT}?next=evil` }],
    ["a registered URI with a fragment", { redirectUri: `${LOOPBACK_REDIRECT}#x` }],
    [
      "a non-loopback URI on another port",
      { clientId: WEB, redirectUri: "https://app.example:9443/cb" },
    ],
    ["a non-loopback URI with no port", { clientId: WEB, redirectUri: "https://app.example/cb" }],
    ["localhost for a registered 127.0.0.1", { redirectUri: "http://localhost:7777/callback" }],
    ["https for a registered http loopback", { redirectUri: "https://127.0.0.1:7777/callback" }],
    ["an attacker's site", { redirectUri: "https://evil.example/callback" }],
    // `\` ends the authority in a browser: these are other paths of the loopback host.
    [
      "a loopback URI with a path behind its port",
      { redirectUri: "http://127.0.0.1:7777\\x/callback" },
    ],
    [
      "a loopback URI climbing out of its path behind its port",
      { redirectUri: "http://127.0.0.1:7777\\..\\admin/callback" },
    ],
    ["a client with no redirect URIs (an agent)", { clientId: AGENT_ID }],
  ];
  for (const [name, params] of cases)
    it(`refuses ${name}`, async () => {
      const url = authorizeUrl(site, { challenge, state: "s1", ...params });
      if (params.redirectUri !== undefined)
        url.searchParams.set("redirect_uri", params.redirectUri);
      const response = await openAuthorize(site, url);
      await expectErrorPage(response);
    });

  it("refuses a repeated client_id or redirect_uri on a page", async () => {
    for (const name of ["client_id", "redirect_uri"]) {
      const url = authorizeUrl(site, { challenge });
      url.searchParams.append(name, url.searchParams.get(name) as string);
      await expectErrorPage(await openAuthorize(site, url));
    }
  });

  it("refuses a missing redirect_uri on a page", async () => {
    const url = authorizeUrl(site, { challenge });
    url.searchParams.delete("redirect_uri");
    await expectErrorPage(await openAuthorize(site, url));
  });

  it("never puts the request's own text on the default error page", async () => {
    const markup = "<b>x</b><script>alert(1)</script>";
    for (const params of [
      { clientId: markup },
      { redirectUri: `http://127.0.0.1:7777/${markup}` },
      { clientId: WEB, redirectUri: `https://app.example:8443/cb?${markup}` },
    ]) {
      const url = authorizeUrl(site, { challenge, ...params });
      const page = await expectErrorPage(await openAuthorize(site, url));
      expect(page).not.toMatch(/<b>|<script/);
      expect(page).toMatch(/<p id="error">[^<]+<\/p>/);
    }
  });
});

describe("loopback redirect URIs (RFC 8252 §7.3)", () => {
  it("accepts the registered loopback URI on another port, and sends the code there", async () => {
    const redirect = "http://127.0.0.1:49152/callback";
    const consent = await consentFor(site, { challenge, redirectUri: redirect });
    expect(consent.redirectHost).toBe("127.0.0.1:49152");
    const answer = await postConsent(site, { consent: consent.consentToken, action: "approve" });
    const location = new URL(answer.headers.get("location") as string);
    expect(`${location.origin}${location.pathname}`).toBe(redirect);
    expect(location.searchParams.get("code")).toBeTypeOf("string");
  });

  it("frees the port of an IPv6 loopback literal too, but never of localhost (a name, not the interface)", async () => {
    await site.clients.register({
      clientId: "loopback-names",
      public: true,
      redirectUris: ["http://[::1]:7777/callback", "http://localhost:7777/callback"],
    });
    const v6 = await consentFor(site, {
      challenge,
      clientId: "loopback-names",
      redirectUri: "http://[::1]:50000/callback",
    });
    expect(v6.redirectHost).toBe("[::1]:50000");
    // localhost exactly as registered is fine; on another port it is not.
    await consentFor(site, {
      challenge,
      clientId: "loopback-names",
      redirectUri: "http://localhost:7777/callback",
    });
    await expectErrorPage(
      await openAuthorize(
        site,
        authorizeUrl(site, {
          challenge,
          clientId: "loopback-names",
          redirectUri: "http://localhost:50000/callback",
        }),
      ),
    );
  });

  it("accepts the registered non-loopback URI only exactly", async () => {
    const consent = await consentFor(site, { challenge, clientId: WEB, redirectUri: WEB_REDIRECT });
    expect(consent.redirectHost).toBe("app.example:8443");
  });
});

describe("the server's redirect-URI policy (authorizationCode.redirectUris)", () => {
  const CURSOR = "cursor://anysphere.cursor-retrieval/oauth/callback";
  let widened: CodeSite;
  beforeAll(async () => {
    widened = await codeSite({
      authorizationCode: {
        consentPage: (_request, consent) => Response.json(consent),
        signedInAt: signedInHeader,
        signInPath: "/login",
        redirectUris: { privateUseSchemes: ["cursor"], localhostAnyPort: true },
      },
    });
    for (const at of [site, widened]) {
      await at.clients.register({ clientId: "cursor", public: true, redirectUris: [CURSOR] });
      await at.clients.register({
        clientId: "my-app",
        public: true,
        redirectUris: ["myapp:/callback"],
      });
      await at.clients.register({
        clientId: "localhost-app",
        public: true,
        redirectUris: ["http://localhost:7777/callback"],
      });
    }
  });
  afterAll(async () => {
    await widened?.close();
  });

  it("refuses a registered single-label scheme by default, on a page that names the option", async () => {
    for (const [clientId, redirectUri] of [
      ["cursor", CURSOR],
      ["my-app", "myapp:/callback"],
    ] as const) {
      const url = authorizeUrl(site, { challenge, clientId, redirectUri });
      const page = await expectErrorPage(await openAuthorize(site, url));
      expect(page).toContain("privateUseSchemes");
    }
  });

  it("sends the code to a scheme the server names, and refuses the schemes it does not", async () => {
    const consent = await consentFor(widened, {
      challenge,
      clientId: "cursor",
      redirectUri: CURSOR,
    });
    expect(consent.redirectHost).toBe("cursor");
    const answer = await postConsent(widened, {
      consent: consent.consentToken,
      action: "approve",
    });
    expect(answer.status).toBe(303);
    const location = new URL(answer.headers.get("location") as string);
    expect(`${location.protocol}//${location.host}${location.pathname}`).toBe(CURSOR);
    expect(location.searchParams.get("code")).toBeTypeOf("string");
    // The consent form may be redirected to the app's scheme, and nowhere else.
    const page = await openAuthorize(
      widened,
      authorizeUrl(widened, { challenge, clientId: "cursor", redirectUri: CURSOR }),
    );
    expect(page.headers.get("content-security-policy")).toMatch(/form-action 'self' cursor:/);
    const url = authorizeUrl(widened, {
      challenge,
      clientId: "my-app",
      redirectUri: "myapp:/callback",
    });
    await expectErrorPage(await openAuthorize(widened, url));
  });

  it("matches localhost on any port only when localhostAnyPort is on", async () => {
    const other = "http://localhost:50123/callback";
    const params = { challenge, clientId: "localhost-app", redirectUri: other };
    await expectErrorPage(await openAuthorize(site, authorizeUrl(site, params)));
    const consent = await consentFor(widened, params);
    expect(consent.redirectHost).toBe("localhost:50123");
    // Still only localhost and the loopback literals: another host, or localhost with a
    // path of its own, never matches.
    for (const redirectUri of [
      "http://localhost.:50123/callback",
      "http://localhost:50123/callback/more",
      "http://localhost:50123\\x/callback",
      "http://127.0.0.1:50123/callback",
    ])
      await expectErrorPage(
        await openAuthorize(
          widened,
          authorizeUrl(widened, { challenge, clientId: "localhost-app", redirectUri }),
        ),
      );
  });
});

describe("requests with a good client and redirect URI: errors go back with state and iss", () => {
  it("unsupported_response_type for response_type token", async () => {
    const response = await openAuthorize(
      site,
      authorizeUrl(site, { challenge, state: "s2", responseType: "token" }),
    );
    expectRedirectError(response, "unsupported_response_type", "s2");
  });

  it("invalid_request for PKCE plain, and for a missing challenge", async () => {
    const verifier = oauth.generateRandomCodeVerifier();
    expectRedirectError(
      await openAuthorize(
        site,
        authorizeUrl(site, { challenge: verifier, method: "plain", state: "s3" }),
      ),
      "invalid_request",
      "s3",
    );
    const url = authorizeUrl(site, { state: "s4" });
    url.searchParams.delete("code_challenge");
    expectRedirectError(await openAuthorize(site, url), "invalid_request", "s4");
    const noMethod = authorizeUrl(site, { challenge, state: "s5" });
    noMethod.searchParams.delete("code_challenge_method");
    expectRedirectError(await openAuthorize(site, noMethod), "invalid_request", "s5");
  });

  it("invalid_scope for a scope the server does not serve", async () => {
    expectRedirectError(
      await openAuthorize(
        site,
        authorizeUrl(site, { challenge, scope: "read_notes delete_all", state: "s6" }),
      ),
      "invalid_scope",
      "s6",
    );
  });

  it("invalid_target for a resource that is not one of the server's", async () => {
    for (const resource of ["https://other.example/mcp", `${site.base}/admin`])
      expectRedirectError(
        await openAuthorize(site, authorizeUrl(site, { challenge, resource, state: "s7" })),
        "invalid_target",
        "s7",
      );
  });

  it("invalid_request for a repeated parameter", async () => {
    const extra: Record<string, string> = {
      prompt: "consent",
      max_age: "60",
      response_mode: "query",
      request: "e30.e30.e30",
      request_uri: "urn:ietf:params:oauth:request_uri:x",
      signed_in_after: "1",
    };
    for (const name of [
      "scope",
      "state",
      "code_challenge",
      "response_type",
      "resource",
      ...Object.keys(extra),
    ]) {
      const url = authorizeUrl(site, { challenge, scope: "read_notes", state: "s8" });
      const value = extra[name] ?? (url.searchParams.get(name) as string);
      url.searchParams.set(name, value);
      url.searchParams.append(name, value);
      const location = expectRedirectError(
        await openAuthorize(site, url),
        "invalid_request",
        // A repeated state is refused; the first one still goes back, as the client sent it.
        "s8",
      );
      expect(location.searchParams.get("error_description")).toContain(name);
    }
  });

  it("unauthorized_client for a registered client not allowed the code grant", async () => {
    await site.clients.register({
      clientId: "device-only",
      public: true,
      redirectUris: [LOOPBACK_REDIRECT],
      grantTypes: ["urn:ietf:params:oauth:grant-type:device_code"],
    });
    expectRedirectError(
      await openAuthorize(
        site,
        authorizeUrl(site, { challenge, clientId: "device-only", state: "s9" }),
      ),
      "unauthorized_client",
      "s9",
    );
  });

  it("keeps the redirect URI's own query and adds the answer after it", async () => {
    const withQuery = "http://127.0.0.1:7777/callback?app=1";
    await site.clients.register({
      clientId: "query-client",
      public: true,
      redirectUris: [withQuery],
    });
    const consent = await consentFor(site, {
      challenge,
      clientId: "query-client",
      redirectUri: withQuery,
      state: "q",
    });
    const answer = await postConsent(site, { consent: consent.consentToken, action: "approve" });
    const location = new URL(answer.headers.get("location") as string);
    expect(location.searchParams.get("app")).toBe("1");
    expect(location.searchParams.get("state")).toBe("q");
    expect(location.searchParams.get("iss")).toBe(site.base);
    expect(location.searchParams.get("code")).toBeTypeOf("string");
  });
});

describe("who may consent", () => {
  it("no human signed in: sent to sign in and back (the client not yet looked up), and no answer taken", async () => {
    const shown = site.consents.length;
    const url = authorizeUrl(site, { challenge, state: "anon" });
    const response = await openAuthorize(site, url, { human: undefined });
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get("location") as string, site.base);
    expect(location.pathname).toBe("/login");
    expect(location.searchParams.has("again")).toBe(false);
    const next = new URL(location.searchParams.get("next") as string, site.base);
    expect(next.pathname).toBe(AUTHORIZE_PATH);
    expect(Object.fromEntries(next.searchParams)).toEqual(Object.fromEntries(url.searchParams));
    expect(site.consents.length).toBe(shown);
    const consent = await consentFor(site, { challenge });
    const before = await grantsOfAlice();
    const answer = await postConsent(
      site,
      { consent: consent.consentToken, action: "approve" },
      { human: undefined },
    );
    expect(answer.status).toBe(401);
    expect(await grantsOfAlice()).toBe(before);
  });

  it("a client authenticated with its own credentials: 403, no consent page, and it cannot answer one", async () => {
    const shown = site.consents.length;
    const basic = { authorization: `Basic ${btoa(`${AGENT_ID}:${AGENT_SECRET}`)}` };
    const response = await openAuthorize(site, authorizeUrl(site, { challenge }), {
      human: undefined,
      headers: basic,
    });
    expect(response.status).toBe(403);
    expect(site.consents.length).toBe(shown);
    const consent = await consentFor(site, { challenge });
    const before = await grantsOfAlice();
    const answer = await postConsent(
      site,
      { consent: consent.consentToken, action: "approve" },
      { human: undefined, headers: basic },
    );
    expect(answer.status).toBe(403);
    expect(await grantsOfAlice()).toBe(before);
  });

  it("a stale sign-in: 303 to sign in, with next back to the same authorization request (GET)", async () => {
    const url = authorizeUrl(site, { challenge, state: "stale", scope: "read_notes" });
    const response = await openAuthorize(site, url, { signedInAt: site.now() - 601_000 });
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get("location") as string, site.base);
    expect(location.pathname).toBe("/login");
    const next = new URL(location.searchParams.get("next") as string, site.base);
    expect(next.pathname).toBe(AUTHORIZE_PATH);
    expect(Object.fromEntries(next.searchParams)).toEqual(Object.fromEntries(url.searchParams));
    // No sign-in time at all is stale too.
    const none = await fetch(url, { headers: { "x-test-human": "alice" }, redirect: "manual" });
    expect(none.status).toBe(303);
  });

  it("a stale sign-in at the answer: 303 to sign in, nothing granted, and the consent still answerable after", async () => {
    const consent = await consentFor(site, { challenge, state: "stale2", scope: "read_notes" });
    const before = await grantsOfAlice();
    const answer = await postConsent(
      site,
      { consent: consent.consentToken, action: "approve" },
      { signedInAt: site.now() - 601_000 },
    );
    expect(answer.status).toBe(303);
    const location = new URL(answer.headers.get("location") as string, site.base);
    expect(location.pathname).toBe("/login");
    const next = new URL(location.searchParams.get("next") as string, site.base);
    expect(next.pathname).toBe(AUTHORIZE_PATH);
    expect(next.searchParams.get("client_id")).toBe(DESKTOP);
    expect(next.searchParams.get("state")).toBe("stale2");
    expect(await grantsOfAlice()).toBe(before);
    // Signed in again, the same consent is answered: the stale attempt spent nothing.
    const again = await postConsent(site, { consent: consent.consentToken, action: "approve" });
    expect(again.status).toBe(303);
    expect(new URL(again.headers.get("location") as string).searchParams.get("code")).toBeTypeOf(
      "string",
    );
    expect(await grantsOfAlice()).toBe(before + 1);
  });

  it("a consent token answered twice: the second is refused, one grant, one code", async () => {
    const consent = await consentFor(site, { challenge, state: "once" });
    const before = await grantsOfAlice();
    const first = await postConsent(site, { consent: consent.consentToken, action: "approve" });
    expect(first.status).toBe(303);
    const second = await postConsent(site, { consent: consent.consentToken, action: "approve" });
    await expectErrorPage(second);
    expect(await grantsOfAlice()).toBe(before + 1);
    // Nor can a deny after the approval send another answer.
    await expectErrorPage(
      await postConsent(site, { consent: consent.consentToken, action: "deny" }),
    );
  });

  it("a consent token of another human is refused", async () => {
    const consent = await consentFor(site, { challenge }, { human: "bob" });
    const before = await grantsOfAlice();
    await expectErrorPage(
      await postConsent(site, { consent: consent.consentToken, action: "approve" }),
    );
    expect(await grantsOfAlice()).toBe(before);
    expect((await site.agents.grantsApprovedBy("bob")).length).toBe(0);
  });

  it("a consent token made for another endpoint (audience) or of another type is refused; the same for this one is taken", async () => {
    const consent = await consentFor(site, { challenge, state: "aud" });
    const claims = decodeJwt(consent.consentToken);
    const { iss, aud, sub, iat, exp, jti, ...rest } = claims;
    const forge = (typ: string, audience: string) =>
      jwtSigner({ keys: site.agents.keys, typ, issuer: site.base, now: site.now, ttlSeconds: 600 })(
        {
          subject: "alice",
          audience,
          claims: rest,
        },
      );
    const before = await grantsOfAlice();
    for (const [typ, audience] of [
      ["portcullis-consent+jwt", `${site.base}/agent/approve`],
      ["portcullis-review+jwt", `${site.base}${AUTHORIZE_PATH}`],
    ] as const)
      await expectErrorPage(
        await postConsent(site, {
          consent: (await forge(typ, audience)).token,
          action: "approve",
        }),
      );
    expect(await grantsOfAlice()).toBe(before);
    // The control: the same claims, this endpoint's audience and type, are an answer.
    const good = await forge("portcullis-consent+jwt", aud as string);
    expectRedirectError(
      await postConsent(site, { consent: good.token, action: "deny" }),
      "access_denied",
      "aud",
    );
    expect([iss, sub, typeof iat, typeof exp, typeof jti]).toEqual([
      site.base,
      "alice",
      "number",
      "number",
      "string",
    ]);
  });

  it("a consent token's sign-in bound: only a time, and a sign-in after it answers", async () => {
    const consent = await consentFor(site, { challenge, state: "bound" });
    const { iss, sub, iat, exp, jti, aud, ...rest } = decodeJwt(consent.consentToken);
    const forge = async (bound: unknown) =>
      (
        await jwtSigner({
          keys: site.agents.keys,
          typ: "portcullis-consent+jwt",
          issuer: site.base,
          now: site.now,
          ttlSeconds: 600,
        })({
          subject: "alice",
          audience: aud as string,
          claims: { ...rest, signed_in_after: bound },
        })
      ).token;
    const before = await grantsOfAlice();
    for (const bound of ["0", 1.5, -1e30, null])
      await expectErrorPage(
        await postConsent(site, { consent: await forge(bound), action: "approve" }),
      );
    const bound = site.now() - 10_000;
    const token = await forge(bound);
    signInRedirect(
      await postConsent(site, { consent: token, action: "approve" }, { signedInAt: bound - 1 }),
    );
    expect(await grantsOfAlice()).toBe(before);
    const answer = await postConsent(
      site,
      { consent: token, action: "approve" },
      { signedInAt: bound + 1 },
    );
    expect(answer.status).toBe(303);
    expect(new URL(answer.headers.get("location") as string).searchParams.get("code")).toEqual(
      expect.any(String),
    );
    expect([iss, sub, typeof iat, typeof exp, typeof jti]).toEqual([
      site.base,
      "alice",
      "number",
      "number",
      "string",
    ]);
  });

  it("a token that is not a consent token (an access token) is refused", async () => {
    const response = await fetch(`${site.base}/oauth/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${btoa(`${AGENT_ID}:${AGENT_SECRET}`)}`,
      },
      body: new URLSearchParams({ grant_type: "client_credentials" }).toString(),
    });
    // No grant for the agent: the server refuses; a forged consent string is what is left to try.
    expect(response.status).toBe(400);
    await expectErrorPage(await postConsent(site, { consent: "e30.e30.e30", action: "approve" }));
    await expectErrorPage(await postConsent(site, { action: "approve" }));
  });

  it("an answer that is neither approve nor deny is refused and spends nothing", async () => {
    const consent = await consentFor(site, { challenge });
    await expectErrorPage(
      await postConsent(site, { consent: consent.consentToken, action: "maybe" }),
    );
    const answer = await postConsent(site, { consent: consent.consentToken, action: "approve" });
    expect(answer.status).toBe(303);
  });

  it("a client removed between the page and the answer: an error page, no grant", async () => {
    await site.clients.register({
      clientId: "leaving-client",
      public: true,
      redirectUris: [LOOPBACK_REDIRECT],
    });
    const consent = await consentFor(site, { challenge, clientId: "leaving-client" });
    await site.clients.remove("leaving-client");
    const before = await grantsOfAlice();
    await expectErrorPage(
      await postConsent(site, { consent: consent.consentToken, action: "approve" }),
    );
    expect(await grantsOfAlice()).toBe(before);
  });

  it("deny: back to the client with access_denied, state and iss, and no grant", async () => {
    const consent = await consentFor(site, { challenge, state: "denied" });
    const before = await grantsOfAlice();
    const answer = await postConsent(site, { consent: consent.consentToken, action: "deny" });
    const location = expectRedirectError(answer, "access_denied", "denied");
    expect(location.searchParams.get("code")).toBeNull();
    expect(await grantsOfAlice()).toBe(before);
  });

  it("hands the consent page the client's name as given, for the page to escape", async () => {
    const consent = await consentFor(site, {
      challenge,
      clientId: XSS_CLIENT,
      scope: "read_notes",
    });
    expect(consent.clientName).toBe(XSS_NAME);
    expect(consent.redirectHost).toBe("127.0.0.1:7777");
    expect(consent.capabilities).toEqual([{ name: "read_notes", description: "Lists the notes." }]);
    expect(consent.action).toBe(AUTHORIZE_PATH);
  });
});

describe("framing", () => {
  it("the consent page, the error page and the redirects say never in a frame", async () => {
    const answers = [
      await openAuthorize(site, authorizeUrl(site, { challenge })),
      await openAuthorize(site, authorizeUrl(site, { challenge, clientId: "nobody" })),
      await openAuthorize(site, authorizeUrl(site, { challenge, responseType: "token" })),
    ];
    for (const response of answers) {
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(response.headers.get("cache-control")).toBe("no-store");
    }
    expect(answers.map((response) => response.status)).toEqual([200, 400, 303]);
  });
});

/** A policy's directives by name. */
function directives(policy: string | null): Record<string, string> {
  return Object.fromEntries(
    (policy ?? "")
      .split(";")
      .map((part) => part.trim())
      .filter((part) => part !== "")
      .map((part) => {
        const [name, ...sources] = part.split(/\s+/);
        return [name as string, sources.join(" ")];
      }),
  );
}

const DEFAULT_POLICY = Object.fromEntries(
  Object.entries(DEFAULT_CSP_DIRECTIVES).map(([name, sources]) => [name, sources.join(" ")]),
);

describe("the pages' Content Security Policy", () => {
  it("the consent page: the default policy, never framed, its form may reach only this site and the client", async () => {
    const response = await openAuthorize(site, authorizeUrl(site, { challenge }));
    expect(response.status).toBe(200);
    expect(directives(response.headers.get("content-security-policy"))).toEqual({
      ...DEFAULT_POLICY,
      "frame-ancestors": "'none'",
      "form-action": "'self' http://127.0.0.1:7777",
    });
    const web = await openAuthorize(
      site,
      authorizeUrl(site, { challenge, clientId: WEB, redirectUri: WEB_REDIRECT }),
    );
    expect(directives(web.headers.get("content-security-policy"))["form-action"]).toBe(
      "'self' https://app.example:8443",
    );
  });

  it("a loopback redirect URI on another port: that port", async () => {
    const response = await openAuthorize(
      site,
      authorizeUrl(site, { challenge, redirectUri: "http://127.0.0.1:49153/callback" }),
    );
    expect(directives(response.headers.get("content-security-policy"))["form-action"]).toBe(
      "'self' http://127.0.0.1:49153",
    );
  });

  it("an app's own scheme, or an IPv6 loopback: the scheme (no CSP source names such a host)", async () => {
    await site.clients.register({
      clientId: "native-app",
      public: true,
      redirectUris: ["com.example.app:/callback", "http://[::1]:7777/callback"],
    });
    for (const [redirectUri, source] of [
      ["com.example.app:/callback", "com.example.app:"],
      ["http://[::1]:50001/callback", "http:"],
    ] as const) {
      const response = await openAuthorize(
        site,
        authorizeUrl(site, { challenge, clientId: "native-app", redirectUri }),
      );
      expect(response.status).toBe(200);
      expect(directives(response.headers.get("content-security-policy"))["form-action"]).toBe(
        `'self' ${source}`,
      );
    }
  });

  it("a consent page with a policy of its own keeps it, never framed, its forms let through to the client", async () => {
    let policy = "";
    const own = await codeSite({
      authorizationCode: {
        consentPage: () =>
          new Response("<p>consent</p>", {
            headers: { "content-type": "text/html", "content-security-policy": policy },
          }),
        signedInAt: signedInHeader,
        signInPath: "/login",
      },
    });
    try {
      const shown = async (given: string) => {
        policy = given;
        const url = authorizeUrl(own, { challenge });
        const response = await openAuthorize(own, url);
        expect(response.status).toBe(200);
        return response.headers.get("content-security-policy");
      };
      expect(await shown("default-src 'none'; form-action 'self'")).toBe(
        "default-src 'none'; form-action 'self' http://127.0.0.1:7777; frame-ancestors 'none'",
      );
      expect(await shown("default-src 'none'; frame-ancestors 'self'")).toBe(
        "default-src 'none'; frame-ancestors 'self'",
      );
      // Two policies: each that limits forms lets the redirect through; 'none' stays none.
      expect(await shown("form-action 'self', script-src 'none'; FORM-ACTION 'none'")).toBe(
        "form-action 'self' http://127.0.0.1:7777, script-src 'none'; FORM-ACTION 'none'; frame-ancestors 'none'",
      );
    } finally {
      await own.close();
    }
  });

  it("the error page: the default policy, never framed, forms to this site only", async () => {
    const response = await openAuthorize(
      site,
      authorizeUrl(site, { challenge, clientId: "nobody" }),
    );
    expect(response.status).toBe(400);
    expect(directives(response.headers.get("content-security-policy"))).toEqual({
      ...DEFAULT_POLICY,
      "frame-ancestors": "'none'",
    });
  });
});

/** openid-client as the public desktop client, from the server's metadata. */
function desktopClient(): Promise<oidc.Configuration> {
  return oidc.discovery(new URL(site.base), DESKTOP, undefined, oidc.None(), {
    execute: [oidc.allowInsecureRequests],
    algorithm: "oauth2",
  });
}

/** The authorization URL openid-client builds with `extra` beside the usual parameters. */
async function clientUrl(extra: Record<string, string>, state = oidc.randomState()) {
  const config = await desktopClient();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: LOOPBACK_REDIRECT,
    code_challenge: challenge,
    code_challenge_method: "S256",
    resource: site.mcpUrl,
    state,
    ...extra,
  });
  return { config, url, state };
}

/** The error openid-client reads from the redirect back (it checks state and iss). */
async function clientError(
  config: oidc.Configuration,
  response: Response,
  state: string,
): Promise<{ error: string; description?: string }> {
  expect(response.status).toBe(303);
  const callback = new URL(response.headers.get("location") as string);
  expect(`${callback.origin}${callback.pathname}`).toBe(LOOPBACK_REDIRECT);
  expect(callback.searchParams.has("code")).toBe(false);
  try {
    await oidc.authorizationCodeGrant(config, callback, {
      expectedState: state,
      pkceCodeVerifier: "v".repeat(43),
    });
  } catch (error) {
    if (error instanceof oidc.AuthorizationResponseError)
      return {
        error: error.error,
        ...(error.error_description === undefined ? {} : { description: error.error_description }),
      };
    throw error;
  }
  throw new Error("the client was not sent an error");
}

/** A 303 to the sign-in page: its `again`, and the authorization request it comes back to. */
function signInRedirect(response: Response): { again: boolean; next: URL } {
  expect(response.status).toBe(303);
  const location = new URL(response.headers.get("location") as string, site.base);
  expect(location.pathname).toBe("/login");
  const next = new URL(location.searchParams.get("next") as string, site.base);
  expect(next.pathname).toBe(AUTHORIZE_PATH);
  return { again: location.searchParams.has("again"), next };
}

describe("prompt (OpenID Connect Core §3.1.2.1)", () => {
  it("none, nobody signed in: login_required back to the client, no page", async () => {
    const shown = site.consents.length;
    const { config, url, state } = await clientUrl({ prompt: "none" });
    const response = await openAuthorize(site, url, { human: undefined });
    expect(await clientError(config, response, state)).toMatchObject({ error: "login_required" });
    expect(site.consents.length).toBe(shown);
  });

  it("none, signed in too long ago (the house's bound, or max_age): login_required", async () => {
    const { config, url, state } = await clientUrl({ prompt: "none" });
    const stale = await openAuthorize(site, url, { signedInAt: site.now() - 601_000 });
    expect((await clientError(config, stale, state)).error).toBe("login_required");
    const aged = await clientUrl({ prompt: "none", max_age: "60" });
    const older = await openAuthorize(site, aged.url, { signedInAt: site.now() - 61_000 });
    expect((await clientError(aged.config, older, aged.state)).error).toBe("login_required");
  });

  it("none, signed in: consent_required (every approval is asked for), no page, nothing granted", async () => {
    const shown = site.consents.length;
    const before = await grantsOfAlice();
    // Even after this client was approved for the same: consent is never remembered.
    await approvedCallbackFor({});
    const { config, url, state } = await clientUrl({ prompt: "none" });
    const response = await openAuthorize(site, url);
    expect((await clientError(config, response, state)).error).toBe("consent_required");
    expect(site.consents.length).toBe(shown + 1);
    expect(await grantsOfAlice()).toBe(before + 1);
  });

  it("none, for a request that fails a check first: that check's error", async () => {
    const { config, url, state } = await clientUrl({ prompt: "none", scope: "delete_all" });
    const response = await openAuthorize(site, url, { human: undefined });
    expect((await clientError(config, response, state)).error).toBe("invalid_scope");
  });

  it("none, for a client or redirect URI in doubt: the error page, never a redirect", async () => {
    const { url } = await clientUrl({ prompt: "none" });
    url.searchParams.set("redirect_uri", "https://evil.example/callback");
    await expectErrorPage(await openAuthorize(site, url, { human: undefined }));
  });

  it("none beside another value, or a value not defined: invalid_request", async () => {
    for (const prompt of ["none login", "consent none", "none bogus", "bogus", "login create"]) {
      const { config, url, state } = await clientUrl({ prompt });
      const response = await openAuthorize(site, url);
      expect((await clientError(config, response, state)).error).toBe("invalid_request");
    }
  });

  it("a repeated prompt: invalid_request", async () => {
    const { config, url, state } = await clientUrl({ prompt: "login" });
    url.searchParams.append("prompt", "consent");
    expect((await clientError(config, await openAuthorize(site, url), state)).error).toBe(
      "invalid_request",
    );
  });

  it("select_account: account_selection_required (the signed-in person is the account)", async () => {
    const { config, url, state } = await clientUrl({ prompt: "select_account" });
    const response = await openAuthorize(site, url);
    expect((await clientError(config, response, state)).error).toBe("account_selection_required");
  });

  it("consent: the consent page, as always", async () => {
    const shown = site.consents.length;
    const { url } = await clientUrl({ prompt: "consent" });
    expect((await openAuthorize(site, url)).status).toBe(200);
    expect(site.consents.length).toBe(shown + 1);
  });

  it("login: a sign-in newer than the request first, then the consent, which an older sign-in cannot answer", async () => {
    const shown = site.consents.length;
    const { url, state } = await clientUrl({ prompt: "login consent" });
    const requestedAt = site.now();
    // Signed in a moment ago: still sent to sign in again.
    const first = signInRedirect(await openAuthorize(site, url, { signedInAt: requestedAt - 1 }));
    expect(first.again).toBe(true);
    expect(first.next.searchParams.get("prompt")).toBe("consent");
    expect(first.next.searchParams.get("state")).toBe(state);
    expect(site.consents.length).toBe(shown);
    // Back with the same sign-in: sent again; never a loop once signed in anew.
    signInRedirect(await openAuthorize(site, first.next, { signedInAt: requestedAt - 1 }));
    const signedIn = site.now() + 1;
    const shownAfter = await openAuthorize(site, first.next, { signedInAt: signedIn });
    expect(shownAfter.status).toBe(200);
    const consent = (await shownAfter.json()) as { consentToken: string };
    // The answer needs that newer sign-in too.
    const before = await grantsOfAlice();
    const old = await postConsent(
      site,
      { consent: consent.consentToken, action: "approve" },
      { signedInAt: requestedAt - 1 },
    );
    const again = signInRedirect(old);
    expect(again.again).toBe(true);
    expect(again.next.searchParams.get("state")).toBe(state);
    expect(await grantsOfAlice()).toBe(before);
    const answer = await postConsent(
      site,
      { consent: consent.consentToken, action: "approve" },
      { signedInAt: signedIn },
    );
    expect(answer.status).toBe(303);
    expect(new URL(answer.headers.get("location") as string).searchParams.get("code")).toEqual(
      expect.any(String),
    );
    expect(await grantsOfAlice()).toBe(before + 1);
  });

  it("login, nobody signed in: one sign-in is enough", async () => {
    const { url } = await clientUrl({ prompt: "login" });
    const first = signInRedirect(await openAuthorize(site, url, { human: undefined }));
    expect(first.again).toBe(false);
    expect(first.next.searchParams.has("prompt")).toBe(false);
    expect((await openAuthorize(site, first.next, { signedInAt: site.now() + 1 })).status).toBe(
      200,
    );
  });
});

describe("max_age (OpenID Connect Core §3.1.2.1)", () => {
  it("a sign-in older than max_age: sign in again, then the consent", async () => {
    const { url } = await clientUrl({ max_age: "60" });
    expect((await openAuthorize(site, url, { signedInAt: site.now() - 30_000 })).status).toBe(200);
    const requestedAt = site.now();
    const first = signInRedirect(
      await openAuthorize(site, url, { signedInAt: requestedAt - 61_000 }),
    );
    expect(first.again).toBe(true);
    expect(first.next.searchParams.has("max_age")).toBe(false);
    // Signed in again, however long the way back took.
    expect((await openAuthorize(site, first.next, { signedInAt: site.now() + 1 })).status).toBe(
      200,
    );
    signInRedirect(await openAuthorize(site, first.next, { signedInAt: requestedAt - 61_000 }));
  });

  it("max_age=0: a sign-in every time, like prompt=login", async () => {
    const { url } = await clientUrl({ max_age: "0" });
    const requestedAt = site.now();
    const first = signInRedirect(await openAuthorize(site, url, { signedInAt: requestedAt }));
    expect(first.again).toBe(true);
    expect((await openAuthorize(site, first.next, { signedInAt: site.now() + 1 })).status).toBe(
      200,
    );
  });

  it("a malformed max_age: invalid_request", async () => {
    for (const maxAge of ["-1", "1.5", "1e3", "sixty", " 60", "12345678901"]) {
      const { config, url, state } = await clientUrl({ max_age: maxAge });
      const response = await openAuthorize(site, url);
      expect((await clientError(config, response, state)).error, maxAge).toBe("invalid_request");
    }
  });

  it("a sign-in bound in the request's future (written by hand): invalid_request", async () => {
    const plain = new Set((await clientUrl({})).url.searchParams.keys());
    const first = signInRedirect(
      await openAuthorize(site, (await clientUrl({ prompt: "login" })).url),
    );
    // The parameter the endpoint added to carry the request's time through the sign-in.
    const added = [...first.next.searchParams.keys()].filter((key) => !plain.has(key));
    expect(added).toHaveLength(1);
    const { config, url, state } = await clientUrl({
      [added[0] as string]: String(site.now() + 3_600_000),
    });
    expect((await clientError(config, await openAuthorize(site, url), state)).error).toBe(
      "invalid_request",
    );
  });
});

describe("request objects (RFC 9101): not supported, and said so", () => {
  it("request, as openid-client sends a JAR: an error page (where to answer is only inside it)", async () => {
    const config = await desktopClient();
    const { privateKey } = await oidc.randomDPoPKeyPair("ES256");
    const url = await oidc.buildAuthorizationUrlWithJAR(
      config,
      {
        redirect_uri: LOOPBACK_REDIRECT,
        code_challenge: challenge,
        code_challenge_method: "S256",
        state: "jar",
      },
      privateKey,
    );
    expect(url.searchParams.has("request")).toBe(true);
    const page = await expectErrorPage(await openAuthorize(site, url));
    expect(page).toContain("request objects are not supported");
  });

  it("request beside the plain parameters: request_not_supported back to the client", async () => {
    const config = await desktopClient();
    const { privateKey } = await oidc.randomDPoPKeyPair("ES256");
    const jar = await oidc.buildAuthorizationUrlWithJAR(config, { state: "x" }, privateKey);
    const { url, state } = await clientUrl({
      request: jar.searchParams.get("request") as string,
    });
    expect((await clientError(config, await openAuthorize(site, url), state)).error).toBe(
      "request_not_supported",
    );
  });

  it("request_uri: request_uri_not_supported; both: invalid_request", async () => {
    const uri = { request_uri: "urn:ietf:params:oauth:request_uri:abc" };
    const one = await clientUrl(uri);
    expect(
      (await clientError(one.config, await openAuthorize(site, one.url), one.state)).error,
    ).toBe("request_uri_not_supported");
    const both = await clientUrl({ ...uri, request: "e30.e30.e30" });
    expect(
      (await clientError(both.config, await openAuthorize(site, both.url), both.state)).error,
    ).toBe("invalid_request");
  });

  it("the metadata says so, and names the response modes and prompt values served", async () => {
    const metadata = await (
      await fetch(`${site.base}/.well-known/oauth-authorization-server`)
    ).json();
    expect(metadata).toMatchObject({
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
      response_modes_supported: ["query"],
      prompt_values_supported: ["none", "login", "consent"],
    });
  });
});

describe("response_mode", () => {
  it("query (the code's default): the consent page", async () => {
    const { url } = await clientUrl({ response_mode: "query" });
    expect((await openAuthorize(site, url)).status).toBe(200);
  });

  it("anything else: invalid_request, in the query", async () => {
    for (const mode of ["fragment", "form_post", "query.jwt", "jwt", "web_message", "QUERY"]) {
      const { config, url, state } = await clientUrl({ response_mode: mode });
      const response = await openAuthorize(site, url);
      expect((await clientError(config, response, state)).error, mode).toBe("invalid_request");
    }
  });
});

/** Authorize and approve as alice, for the desktop client. */
async function approvedCallbackFor(params: { scope?: string }) {
  const consent = await consentFor(site, { challenge, ...params });
  const answer = await postConsent(site, { consent: consent.consentToken, action: "approve" });
  expect(answer.status).toBe(303);
}
