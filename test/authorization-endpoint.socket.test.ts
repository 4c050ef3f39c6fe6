/**
 * The authorization endpoint over a real socket: what goes back to the
 * client's redirect URI (with `state` and `iss`) and what only to an error
 * page (no redirect while the client or the URI is in doubt), and the
 * consent: who may answer it, how recent their sign-in, once, and never in
 * a frame.
 */
import { decodeJwt } from "jose";
import * as oauth from "oauth4webapi";
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

async function grantsOfAlice() {
  return (await site.agents.grantsApprovedBy("alice")).length;
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
    for (const name of ["scope", "state", "code_challenge", "response_type", "resource"]) {
      const url = authorizeUrl(site, { challenge, scope: "read_notes", state: "s8" });
      url.searchParams.append(name, url.searchParams.get(name) as string);
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
  it("no human signed in: 401, no consent page", async () => {
    const shown = site.consents.length;
    const response = await openAuthorize(site, authorizeUrl(site, { challenge }), {
      human: undefined,
    });
    expect(response.status).toBe(401);
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
