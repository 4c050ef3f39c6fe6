/**
 * The authorization-code grant with PKCE over a real socket, redeemed and
 * refreshed by oauth4webapi (an independent client): the happy path from
 * discovery to refresh, and each binding of a code (verifier, client,
 * redirect URI, resource, lifetime, single use) and of a refresh token
 * (rotation, reuse, revocation, scope) refused when broken.
 */
import { decodeJwt } from "jose";
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  approvedCallback,
  type CodeSite,
  codeSite,
  DESKTOP,
  LOOPBACK_REDIRECT,
  mcpStatus,
  OTHER_DESKTOP,
  pkce,
  redeem,
  refreshRequest,
  tokenError,
  tokensFor,
} from "./support/code-flow.ts";
import { AGENT_ID } from "./support/mcp.ts";

let site: CodeSite;
beforeAll(async () => {
  site = await codeSite({ dpop: {} });
});
afterAll(async () => {
  await site?.close();
});

/** The grant a token response's access token belongs to. */
function grantOf(tokens: oauth.TokenEndpointResponse): string {
  return decodeJwt(tokens.access_token).grant_id as string;
}

async function refreshed(response: Response) {
  return oauth.processRefreshTokenResponse(site.as, { client_id: DESKTOP }, response);
}

describe("the happy path, as oauth4webapi walks it", () => {
  it("discovers, authorizes with PKCE S256 and state, gets a code with state and iss, redeems it, calls /mcp, refreshes", async () => {
    expect(site.as.authorization_endpoint).toBe(`${site.base}/oauth/authorize`);
    expect(site.as.code_challenge_methods_supported).toEqual(["S256"]);
    expect(site.as.response_types_supported).toEqual(["code"]);
    expect(site.as.grant_types_supported).toEqual(
      expect.arrayContaining(["authorization_code", "refresh_token"]),
    );
    expect(site.as.authorization_response_iss_parameter_supported).toBe(true);

    const { verifier, challenge } = await pkce();
    const state = oauth.generateRandomState();
    const callback = await approvedCallback(site, {
      challenge,
      state,
      scope: "read_notes count_notes",
    });
    expect(`${callback.origin}${callback.pathname}`).toBe(LOOPBACK_REDIRECT);
    expect(callback.searchParams.get("state")).toBe(state);
    expect(callback.searchParams.get("iss")).toBe(site.base);
    const response = await redeem(site, callback, verifier, { state });
    const tokens = await oauth.processAuthorizationCodeResponse(
      site.as,
      { client_id: DESKTOP },
      response,
    );
    expect(tokens.token_type).toBe("bearer");
    expect(tokens.scope).toBe("read_notes count_notes");
    expect(typeof tokens.refresh_token).toBe("string");
    const claims = decodeJwt(tokens.access_token);
    expect(claims.sub).toBe(DESKTOP);
    expect(claims.aud).toBe(site.mcpUrl);
    expect(await mcpStatus(site, tokens.access_token)).toBe(200);
    // The grant is the client's, approved by the human.
    const grant = await site.agents.runtime.grants.get(grantOf(tokens));
    expect(grant).toMatchObject({
      principalId: DESKTOP,
      approvedBy: "alice",
      capabilities: ["read_notes", "count_notes"],
    });

    const next = await refreshed(await refreshRequest(site, tokens.refresh_token as string));
    expect(next.refresh_token).not.toBe(tokens.refresh_token);
    expect(grantOf(next)).toBe(grantOf(tokens));
    expect(await mcpStatus(site, next.access_token)).toBe(200);
  });

  it("binds the token to a DPoP key when the code is redeemed with a proof (token_type DPoP)", async () => {
    const DPoP = oauth.DPoP({}, await oauth.generateKeyPair("ES256"));
    const tokens = await tokensFor(site, {}, { DPoP });
    expect(tokens.token_type).toBe("dpop");
    expect((decodeJwt(tokens.access_token).cnf as { jkt?: string })?.jkt).toBeTypeOf("string");
    // A bound token is refused as a bearer one.
    expect(await mcpStatus(site, tokens.access_token)).toBe(401);
  });

  it("binds the refresh token to that key too (RFC 9449 §5): refused without a proof or with another key, refreshed with it", async () => {
    const keys = await oauth.generateKeyPair("ES256");
    const tokens = await tokensFor(site, {}, { DPoP: oauth.DPoP({}, keys) });
    const refresh = tokens.refresh_token as string;
    expect(await tokenError(site, await refreshRequest(site, refresh))).toEqual({
      status: 400,
      error: "invalid_grant",
    });
    const thief = oauth.DPoP({}, await oauth.generateKeyPair("ES256"));
    expect(await tokenError(site, await refreshRequest(site, refresh, { DPoP: thief }))).toEqual({
      status: 400,
      error: "invalid_grant",
    });
    // The refused tries rotated nothing: the client with its key still refreshes, bound.
    const next = await refreshed(
      await refreshRequest(site, refresh, { DPoP: oauth.DPoP({}, keys) }),
    );
    expect(next.token_type).toBe("dpop");
    expect((decodeJwt(next.access_token).cnf as { jkt?: string })?.jkt).toBe(
      (decodeJwt(tokens.access_token).cnf as { jkt?: string })?.jkt,
    );
    expect((await site.agents.runtime.grants.get(grantOf(tokens)))?.status).toBe("active");
  });
});

describe("PKCE", () => {
  it("refuses a verifier that does not match the challenge (invalid_grant)", async () => {
    const { challenge } = await pkce();
    const callback = await approvedCallback(site, { challenge });
    const wrong = oauth.generateRandomCodeVerifier();
    expect(await tokenError(site, await redeem(site, callback, wrong))).toEqual({
      status: 400,
      error: "invalid_grant",
    });
  });

  it("refuses a redemption with no verifier (invalid_request), and the code is not spent by it", async () => {
    const { verifier, challenge } = await pkce();
    const callback = await approvedCallback(site, { challenge });
    expect(await tokenError(site, await redeem(site, callback, oauth.nopkce))).toEqual({
      status: 400,
      error: "invalid_request",
    });
    const tokens = await oauth.processAuthorizationCodeResponse(
      site.as,
      { client_id: DESKTOP },
      await redeem(site, callback, verifier),
    );
    expect(tokens.access_token).toBeTypeOf("string");
  });
});

describe("codes", () => {
  it("a code redeemed twice: the second is invalid_grant, and the grant ends (access token and refresh token refused)", async () => {
    const { verifier, challenge } = await pkce();
    const callback = await approvedCallback(site, { challenge });
    const tokens = await oauth.processAuthorizationCodeResponse(
      site.as,
      { client_id: DESKTOP },
      await redeem(site, callback, verifier),
    );
    expect(await mcpStatus(site, tokens.access_token)).toBe(200);
    expect(await tokenError(site, await redeem(site, callback, verifier))).toEqual({
      status: 400,
      error: "invalid_grant",
    });
    expect((await site.agents.runtime.grants.get(grantOf(tokens)))?.status).toBe("revoked");
    expect(await mcpStatus(site, tokens.access_token)).toBe(401);
    expect(
      await tokenError(site, await refreshRequest(site, tokens.refresh_token as string)),
    ).toEqual({ status: 400, error: "invalid_grant" });
  });

  it("refuses a code redeemed with another redirect URI than the request's", async () => {
    const { verifier, challenge } = await pkce();
    const callback = await approvedCallback(site, {
      challenge,
      redirectUri: "http://127.0.0.1:8888/callback",
    });
    expect(
      await tokenError(
        site,
        await redeem(site, callback, verifier, { redirectUri: LOOPBACK_REDIRECT }),
      ),
    ).toEqual({ status: 400, error: "invalid_grant" });
  });

  it("redeems a loopback code with the same port the request named", async () => {
    const { verifier, challenge } = await pkce();
    const other = "http://127.0.0.1:8888/callback";
    const callback = await approvedCallback(site, { challenge, redirectUri: other });
    expect(`${callback.origin}${callback.pathname}`).toBe(other);
    const tokens = await oauth.processAuthorizationCodeResponse(
      site.as,
      { client_id: DESKTOP },
      await redeem(site, callback, verifier, { redirectUri: other }),
    );
    expect(tokens.access_token).toBeTypeOf("string");
  });

  it("refuses a code issued to another client, and that redemption spends it", async () => {
    const { verifier, challenge } = await pkce();
    const callback = await approvedCallback(site, { challenge });
    expect(
      await tokenError(
        site,
        await redeem(site, callback, verifier, { clientId: OTHER_DESKTOP }),
        OTHER_DESKTOP,
      ),
    ).toEqual({ status: 400, error: "invalid_grant" });
    // The code was tried by another client: it is spent for the real one too.
    expect(await tokenError(site, await redeem(site, callback, verifier))).toEqual({
      status: 400,
      error: "invalid_grant",
    });
  });

  it("refuses a code after its 60 seconds", async () => {
    const { verifier, challenge } = await pkce();
    const callback = await approvedCallback(site, { challenge });
    site.clock.offset += 61_000;
    try {
      expect(await tokenError(site, await redeem(site, callback, verifier))).toEqual({
        status: 400,
        error: "invalid_grant",
      });
    } finally {
      site.clock.offset -= 61_000;
    }
  });

  it("redeems a code just inside its 60 seconds", async () => {
    const { verifier, challenge } = await pkce();
    const callback = await approvedCallback(site, { challenge });
    site.clock.offset += 55_000;
    try {
      const response = await redeem(site, callback, verifier);
      expect(response.status).toBe(200);
    } finally {
      site.clock.offset -= 55_000;
    }
  });

  it("refuses a redemption naming another resource (invalid_target)", async () => {
    const { verifier, challenge } = await pkce();
    const callback = await approvedCallback(site, { challenge });
    expect(
      await tokenError(
        site,
        await redeem(site, callback, verifier, { resource: site.agents.runtime.urls.execute }),
      ),
    ).toEqual({ status: 400, error: "invalid_target" });
  });
});

describe("refresh tokens", () => {
  it("reuse of a rotated refresh token ends the grant: the new refresh and access tokens are refused", async () => {
    const first = await tokensFor(site);
    const second = await refreshed(await refreshRequest(site, first.refresh_token as string));
    expect(await mcpStatus(site, second.access_token)).toBe(200);
    expect(
      await tokenError(site, await refreshRequest(site, first.refresh_token as string)),
    ).toEqual({ status: 400, error: "invalid_grant" });
    expect((await site.agents.runtime.grants.get(grantOf(first)))?.status).toBe("revoked");
    expect(
      await tokenError(site, await refreshRequest(site, second.refresh_token as string)),
    ).toEqual({ status: 400, error: "invalid_grant" });
    expect(await mcpStatus(site, second.access_token)).toBe(401);
  });

  it("refuses a refresh once the human revoked the grant (agents.revoke)", async () => {
    const tokens = await tokensFor(site);
    await site.agents.revoke(grantOf(tokens));
    expect(
      await tokenError(site, await refreshRequest(site, tokens.refresh_token as string)),
    ).toEqual({ status: 400, error: "invalid_grant" });
    expect(await mcpStatus(site, tokens.access_token)).toBe(401);
  });

  it("refuses a wider scope (invalid_scope) and grants a narrower one", async () => {
    const tokens = await tokensFor(site, { scope: "read_notes count_notes" });
    expect(
      await tokenError(
        site,
        await refreshRequest(site, tokens.refresh_token as string, {
          scope: "read_notes count_notes add_note",
        }),
      ),
    ).toEqual({ status: 400, error: "invalid_scope" });
    // The refused request spent nothing: the token still refreshes, narrower.
    const narrower = await refreshed(
      await refreshRequest(site, tokens.refresh_token as string, { scope: "read_notes" }),
    );
    expect(narrower.scope).toBe("read_notes");
    expect(decodeJwt(narrower.access_token).capabilities).toEqual(["read_notes"]);
  });

  it("refuses a refresh token presented by another client", async () => {
    const tokens = await tokensFor(site);
    expect(
      await tokenError(
        site,
        await refreshRequest(site, tokens.refresh_token as string, { clientId: OTHER_DESKTOP }),
        OTHER_DESKTOP,
      ),
    ).toEqual({ status: 400, error: "invalid_grant" });
  });

  it("takes no secret-less request from a confidential client, though public clients are on", async () => {
    for (const grant of ["client_credentials", "refresh_token", "authorization_code"]) {
      const response = await fetch(`${site.base}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          client_id: AGENT_ID,
          grant_type: grant,
          refresh_token: "x",
          code: "x",
        }).toString(),
      });
      expect([response.status, ((await response.json()) as { error: string }).error]).toEqual([
        401,
        "invalid_client",
      ]);
    }
  });

  it("refuses a refresh token that was never issued", async () => {
    expect(await tokenError(site, await refreshRequest(site, "x".repeat(43)))).toEqual({
      status: 400,
      error: "invalid_grant",
    });
  });
});

describe("the client's side", () => {
  it("oauth4webapi refuses a callback whose iss is not the issuer", async () => {
    const { challenge } = await pkce();
    const callback = await approvedCallback(site, { challenge });
    callback.searchParams.set("iss", "http://127.0.0.1:9");
    expect(() =>
      oauth.validateAuthResponse(site.as, { client_id: DESKTOP }, callback, oauth.expectNoState),
    ).toThrow(oauth.OperationProcessingError);
  });
});
