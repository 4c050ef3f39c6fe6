import { sha256Base64url } from "../core/digest.ts";
import { randomToken } from "../core/encoding.ts";
import { storeCaller } from "../core/store-call.ts";
import type {
  AuthorizationCodeRecord,
  AuthorizationCodeStore,
} from "./authorization-code-store.ts";
import { verifierMatches } from "./pkce.ts";
import type { RefreshTokenRecord } from "./refresh-token-store.ts";
import type { CodeGrantSettings, IssuedToken, ServerSettings } from "./server-options.ts";
import type { TokenGrant, TokenProof } from "./token-endpoint.ts";
import { noStoreJson, type OAuthFailure, oauthError, type TokenResponseBody } from "./wire.ts";

/**
 * The authorization-code grant (RFC 6749 §4.1.3, RFC 7636 §4.6) and the
 * refresh-token grant (RFC 6749 §6), for public clients: each redemption is
 * single use in the store, and a replay ends the grant it came from.
 */

/** The hash under which a code or refresh token is stored: the value itself never is. */
export function tokenHash(value: string): Promise<string> {
  return sha256Base64url(value);
}

/**
 * A new authorization code for `record` (its hash filled in), stored; the
 * code is returned once. `call` runs the store call (a bounded caller such as
 * `storeCaller`'s); the hash is made before, so the store call starts within
 * the caller's deadline.
 */
export async function issueAuthorizationCode(
  codes: AuthorizationCodeStore,
  now: number,
  record: Omit<AuthorizationCodeRecord, "codeHash">,
  call: (operation: () => Promise<void>) => Promise<void> = (operation) => operation(),
): Promise<string> {
  const code = randomToken(32);
  const codeHash = await tokenHash(code);
  await call(() => codes.create({ ...record, codeHash }, now));
  return code;
}

const INVALID_CODE = "the code is invalid, expired, or was already used";

/** `grant_type=authorization_code`: the code spent, then everything it was bound to checked. */
export function authorizationCodeGrant(server: ServerSettings): TokenGrant {
  const settings = boundedStores(server);
  return async ({ params, client, confirmClient }, proof) => {
    const code = params.get("code");
    const redirectUri = params.get("redirect_uri");
    const verifier = params.get("code_verifier");
    if (code === undefined || redirectUri === undefined || verifier === undefined)
      return oauthError(
        "invalid_request",
        "code, redirect_uri and code_verifier are required (PKCE S256)",
      );
    // Spent before the code: a replayed proof then costs the client nothing it cannot retry.
    if (proof !== undefined && !(await proof.spend())) return PROOF_USED();
    const redeemed = await settings.codes.redeem(await tokenHash(code), settings.now());
    if (redeemed.outcome === "unknown") return oauthError("invalid_grant", INVALID_CODE);
    const { record } = redeemed;
    if (redeemed.outcome === "reused") {
      // RFC 6749 §4.1.2: a code used twice was stolen by one of the two; end what it issued.
      await endGrant(settings, record.grantId, record.codeHash);
      return oauthError("invalid_grant", INVALID_CODE);
    }
    // Spent whatever follows: a code tried by the wrong client or verifier is gone for all.
    if (
      record.clientId !== client.clientId ||
      record.redirectUri !== redirectUri ||
      !(await verifierMatches(verifier, record.codeChallenge))
    )
      return oauthError("invalid_grant", INVALID_CODE);
    const resource = params.get("resource");
    if (resource !== undefined && resource !== record.resource)
      return oauthError("invalid_target", "resource differs from the authorization request's");
    // Only now, for a code a consent issued to it, is a metadata document client read.
    const confirmed = await confirmClient();
    if (confirmed instanceof Response) return confirmed;
    return mintWithRefresh(settings, proof, {
      client: confirmed,
      grantId: record.grantId,
      approvedBy: record.approvedBy,
      scope: record.scope,
      resource: record.resource,
      // The family is named after the code: a replayed code ends it too.
      familyId: record.codeHash,
    });
  };
}

/** `grant_type=refresh_token`: rotated in one step; a token used twice ends its grant. */
export function refreshTokenGrant(server: ServerSettings): TokenGrant {
  const settings = boundedStores(server);
  return async ({ params, client: named, confirmClient }, proof) => {
    const presented = params.get("refresh_token");
    if (presented === undefined) return oauthError("invalid_request", "refresh_token is missing");
    const hash = await tokenHash(presented);
    const now = settings.now();
    const found = await settings.refreshTokens.find(hash, now);
    if (found === undefined || found.clientId !== named.clientId)
      return oauthError("invalid_grant", "the refresh token is invalid or expired");
    // Only now, for a token issued to it, is a metadata document client read.
    const client = await confirmClient();
    if (client instanceof Response) return client;
    // RFC 9449 §5: a bound family refreshes only with a proof by its key; a refused try rotates nothing.
    if (found.jkt !== undefined && proof?.jkt !== found.jkt)
      return oauthError("invalid_grant", "the refresh token is bound to another DPoP key");
    const scope = narrowedScope(params.get("scope"), found.scope);
    if (scope === undefined)
      return oauthError("invalid_scope", "the scope is wider than the refresh token's");
    const resource = params.get("resource");
    if (resource !== undefined && resource !== found.resource)
      return oauthError("invalid_target", "resource differs from the refresh token's");
    if (proof !== undefined && !(await proof.spend())) return PROOF_USED();
    // Minted before the rotation: a grant store that fails here leaves the token unspent, so the
    // retry a 503 invites is not taken for a stolen token's reuse.
    const issued = await settings.issue({
      grantType: "refresh_token",
      client,
      grantId: found.grantId,
      scope,
      resource: found.resource,
      ...(proof === undefined ? {} : { jkt: proof.jkt }),
    });
    if ("error" in issued) return oauthError(issued.error, issued.description);
    const next = randomToken(32);
    const rotated = await settings.refreshTokens.rotate(
      hash,
      { ...found, tokenHash: await tokenHash(next) },
      now,
    );
    if (rotated.outcome === "reused") {
      // RFC 9700 §4.14.2: the legitimate client and a thief both hold it; end the grant for both.
      await endGrant(settings, found.grantId, found.familyId);
      return oauthError("invalid_grant", "the refresh token was already used");
    }
    if (rotated.outcome === "unknown")
      return oauthError("invalid_grant", "the refresh token is invalid or expired");
    return answer(issued, proof, next);
  };
}

/**
 * The code grants' settings with every code and refresh-token store call
 * bounded by the server's store timeout: a store that fails or stalls is a
 * 503 `temporarily_unavailable` in bounded time, never a 500 or a hang; one
 * full for a quota is warned about (see `storeCaller`).
 */
function boundedStores(server: ServerSettings): CodeGrantSettings {
  const settings = server.authorizationCode as CodeGrantSettings;
  const caller = (what: string) => {
    const call = storeCaller({
      what,
      timeoutMs: server.storeTimeoutMs,
      // The token endpoint's answer (503) is the report: a store down is seen by every caller.
      report: () => {},
      timed: true,
    });
    return <A extends unknown[], T>(operation: (...args: A) => Promise<T>) =>
      (...args: A): Promise<T> =>
        call(() => operation(...args));
  };
  const codeCall = caller("the code store");
  const refreshCall = caller("the refresh token store");
  const { codes, refreshTokens } = settings;
  return {
    ...settings,
    codes: {
      create: codeCall(codes.create.bind(codes)),
      redeem: codeCall(codes.redeem.bind(codes)),
    },
    refreshTokens: {
      create: refreshCall(refreshTokens.create.bind(refreshTokens)),
      find: refreshCall(refreshTokens.find.bind(refreshTokens)),
      rotate: refreshCall(refreshTokens.rotate.bind(refreshTokens)),
      revokeFamily: refreshCall(refreshTokens.revokeFamily.bind(refreshTokens)),
    },
  };
}

async function endGrant(settings: CodeGrantSettings, grantId: string, familyId: string) {
  await settings.refreshTokens.revokeFamily(familyId);
  await settings.revokeGrant(grantId);
}

/** `asked` (space-separated) when it is within `held`; `held` when nothing is asked. */
function narrowedScope(
  asked: string | undefined,
  held: readonly string[],
): readonly string[] | undefined {
  if (asked === undefined) return held;
  const names = [...new Set(asked.split(" ").filter((name) => name !== ""))];
  return names.length > 0 && names.every((name) => held.includes(name)) ? names : undefined;
}

/** The first access token of a code, with the first refresh token of its family. */
async function mintWithRefresh(
  settings: CodeGrantSettings,
  proof: TokenProof | undefined,
  granted: Omit<RefreshTokenRecord, "tokenHash" | "expiresAt" | "clientId"> & {
    readonly client: Parameters<CodeGrantSettings["issue"]>[0]["client"];
  },
): Promise<Response> {
  const { client, grantId, approvedBy, scope, resource, familyId } = granted;
  const issued = await settings.issue({
    grantType: "authorization_code",
    client,
    grantId,
    scope,
    resource,
    ...(proof === undefined ? {} : { jkt: proof.jkt }),
  });
  if ("error" in issued) return oauthError(issued.error, issued.description);
  const refresh = randomToken(32);
  await settings.refreshTokens.create(
    {
      tokenHash: await tokenHash(refresh),
      familyId,
      clientId: client.clientId,
      approvedBy,
      grantId,
      scope,
      resource,
      ...(proof === undefined ? {} : { jkt: proof.jkt }),
      expiresAt: settings.now() + settings.refreshTokenTtlSeconds * 1000,
    },
    settings.now(),
  );
  return answer(issued, proof, refresh);
}

const PROOF_USED = () => oauthError("invalid_dpop_proof", "the DPoP proof was already used");

/** RFC 6749 §5.1 with the refresh token. */
function answer(
  issued: IssuedToken | OAuthFailure,
  proof: TokenProof | undefined,
  refreshToken: string,
): Response {
  if ("error" in issued) return oauthError(issued.error, issued.description);
  if (proof !== undefined && issued.tokenType !== "DPoP")
    throw new TypeError("the token issuer answered a bearer token where a DPoP-bound one is due");
  const body: TokenResponseBody = {
    access_token: issued.accessToken,
    token_type: issued.tokenType ?? "Bearer",
    expires_in: issued.expiresIn,
    ...(issued.scope === undefined || issued.scope.length === 0
      ? {}
      : { scope: issued.scope.join(" ") }),
    refresh_token: refreshToken,
  };
  return noStoreJson(body);
}
