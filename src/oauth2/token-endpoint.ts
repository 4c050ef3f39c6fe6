import { dpopHeader } from "../core/dpop-header.ts";
import {
  DpopNonceRequiredError,
  DpopProofInvalidError,
  StoreUnavailableError,
} from "../core/errors.ts";
import type { Handler } from "../core/handler.ts";
import { reportError } from "../core/problem.ts";
import { lookUpClient } from "./client-lookup.ts";
import { DEVICE_CODE_GRANT, type OAuthClient } from "./clients.ts";
import { authorizationCodeGrant, refreshTokenGrant } from "./code-grants.ts";
import type { PollResult } from "./device-authorization.ts";
import { type ClientCall, clientEndpoint, clientSource } from "./endpoint-support.ts";
import { parseScope } from "./scope.ts";
import type { DpopTokenSettings, IssuedToken, ServerSettings } from "./server-options.ts";
import { noStoreJson, type OAuthFailure, oauthError, type TokenResponseBody } from "./wire.ts";

/**
 * A request's valid DPoP proof: the thumbprint of its key, and `spend`, which
 * records its id once (`false` when it was used already). A grant spends it
 * only when it is about to hand out a token, so requests that mint nothing
 * (a pending poll, an unknown code) add nothing to the replay store.
 */
export interface TokenProof {
  readonly jkt: string;
  readonly spend: () => Promise<boolean>;
}

/** A token request of an authenticated client allowed its `grant_type`. */
export interface TokenCall extends ClientCall {
  /**
   * The client as looked up, still allowed this grant, or the answer refusing
   * it. A grant that serves metadata document clients calls it once it found
   * the code or refresh token it was given issued to `client.clientId`: only
   * then is the document read (a fetch, unless cached since the consent),
   * with a signed-in person's priority, since a person's consent issued what
   * was found. For any other client it is `client` at once.
   */
  readonly confirmClient: () => Promise<OAuthClient | Response>;
}

/** Serves one `grant_type` for an authenticated client allowed to use it. */
export type TokenGrant = (call: TokenCall, proof: TokenProof | undefined) => Promise<Response>;

/**
 * The grants the token endpoint serves, keyed by `grant_type` (RFC 6749
 * §4.1.3, RFC 8628 §3.4, RFC 6749 §4.4): a new grant is one entry here.
 */
export function tokenGrants(settings: ServerSettings): ReadonlyMap<string, TokenGrant> {
  const grants = new Map<string, TokenGrant>([[DEVICE_CODE_GRANT, deviceCodeGrant(settings)]]);
  if (settings.clientCredentials !== undefined)
    grants.set("client_credentials", clientCredentialsGrant(settings));
  if (settings.authorizationCode !== undefined) {
    grants.set("authorization_code", authorizationCodeGrant(settings));
    grants.set("refresh_token", refreshTokenGrant(settings));
  }
  return grants;
}

/** `POST {token}`: the client authenticated, then the grant its `grant_type` names. */
export function tokenEndpoint(
  settings: ServerSettings,
  grants: ReadonlyMap<string, TokenGrant>,
): Handler {
  const source = clientSource(settings);
  return clientEndpoint(settings, async (call) => {
    const grantType = call.params.get("grant_type");
    if (grantType === undefined) return oauthError("invalid_request", "grant_type is missing");
    const grant = grants.get(grantType);
    if (grant === undefined)
      return oauthError("unsupported_grant_type", "this grant type is not supported");
    // A metadata document client not yet read is refused here what no document could allow it.
    const refused = grantRefusal(call.client, grantType);
    if (refused !== undefined) return refused;
    // Checked before any grant-specific work: a refused proof spends no device code.
    const proof = await tokenProof(settings.dpop, call);
    if (proof instanceof Response) return withNonce(settings.dpop, call.request, proof);
    const confirmClient = async () => {
      if (!call.unread) return call.client;
      const client = await lookUpClient(source, call.client.clientId, "signed_in");
      if (client === undefined)
        return oauthError("invalid_client", "the client's metadata document cannot be used");
      return grantRefusal(client, grantType) ?? client;
    };
    return withNonce(settings.dpop, call.request, await grant({ ...call, confirmClient }, proof));
  });
}

/** The answer refusing `client` the grant `grantType`, if its registration does not allow it. */
function grantRefusal(client: OAuthClient, grantType: string): Response | undefined {
  if (!client.grantTypes.includes(grantType as never))
    return oauthError("unauthorized_client", "this client may not use this grant type");
  return undefined;
}

/**
 * RFC 9449 §5 at the token endpoint: the request's proof checked against
 * `POST` and the configured token URL; the proof (its id spent by the grant
 * that mints), `undefined` when there is none and none is required, or the
 * answer refusing it.
 */
async function tokenProof(
  dpop: DpopTokenSettings | undefined,
  { request, client }: ClientCall,
): Promise<TokenProof | undefined | Response> {
  const proof = dpopHeader(request);
  if (dpop === undefined) {
    // A client registered for bound tokens is never handed a bearer one: fail closed.
    if (client.dpopBoundAccessTokens === true)
      return oauthError("invalid_dpop_proof", "this server does not bind tokens to keys");
    return undefined;
  }
  if (proof === undefined)
    return oauthError("invalid_dpop_proof", "more than one DPoP header, or one too long");
  if (proof === null) {
    if (dpop.required || client.dpopBoundAccessTokens === true)
      return oauthError("invalid_dpop_proof", "a DPoP proof is required");
    return undefined;
  }
  let verified: Awaited<ReturnType<DpopTokenSettings["verifyProof"]>>;
  try {
    verified = await dpop.verifyProof(proof, { method: "POST", url: dpop.tokenUrl });
  } catch (error) {
    if (error instanceof DpopNonceRequiredError)
      return oauthError("use_dpop_nonce", "use the server's DPoP nonce");
    if (error instanceof DpopProofInvalidError)
      return oauthError("invalid_dpop_proof", "the DPoP proof is invalid");
    throw error;
  }
  return { jkt: verified.jkt, spend: () => dpop.consumeProof(verified) };
}

const PROOF_USED = () => oauthError("invalid_dpop_proof", "the DPoP proof was already used");

/** RFC 9449 §8: with nonces on, every answer to a request that carried a proof names the current one. */
async function withNonce(
  dpop: DpopTokenSettings | undefined,
  request: Request,
  response: Response,
): Promise<Response> {
  if (dpop?.nonces === undefined || !request.headers.has("dpop")) return response;
  response.headers.set("dpop-nonce", await dpop.nonces.current());
  return response;
}

function deviceCodeGrant(settings: ServerSettings): TokenGrant {
  const { service, issueAccessToken, onError, protectedResources = [] } = settings;
  return async ({ params, client, request }, proof) => {
    const deviceCode = params.get("device_code");
    if (deviceCode === undefined) return oauthError("invalid_request", "device_code is missing");
    // Checked before the poll: a refused resource spends no approval.
    const resource = params.get("resource");
    if (resource !== undefined && !(isResource(resource) && protectedResources.includes(resource)))
      return oauthError("invalid_target", "resource is not a protected resource of this server");
    const result = await service.poll(deviceCode, client.clientId);
    if (result.outcome !== "approved") return pollRefusal(result);
    const jkt = proof?.jkt;
    let issued: IssuedToken | OAuthFailure;
    try {
      // The proof is spent only now that a token is due; a replayed one gives the approval back.
      if (proof !== undefined && !(await proof.spend())) {
        await service.release(deviceCode, client.clientId, result.consumedAt);
        return PROOF_USED();
      }
      issued = await issueAccessToken({
        client,
        subject: result.subject,
        scope: result.scope,
        approvedBy: result.approvedBy,
        userCodeHash: result.userCodeHash,
        ...(jkt === undefined ? {} : { jkt }),
        ...(resource === undefined ? {} : { resource }),
      });
    } catch (error) {
      // The poll spent the approval; put it back so the retry the 503 invites can succeed.
      if (await service.release(deviceCode, client.clientId, result.consumedAt)) throw error;
      // Spent for good: a retry could only fail, so say so, and tell the operator why.
      if (!(error instanceof StoreUnavailableError)) reportError(onError, error, request);
      return oauthError(
        "expired_token",
        "the approval was lost to a server failure; start a new device authorization",
      );
    }
    // A resource that serves nothing approved, or a proof of the wrong key, is the client's
    // mistake, refused before anything changed: the approval is given back.
    if (
      "error" in issued &&
      (issued.error === "invalid_target" || issued.error === "invalid_dpop_proof")
    )
      await service.release(deviceCode, client.clientId, result.consumedAt);
    return tokenResponse(issued, result.scope, boundFor(client, proof));
  };
}

/** Whether the token handed out must be a DPoP one: a proof came, or the client asks for bound tokens. */
function boundFor(client: ClientCall["client"], proof: TokenProof | undefined): boolean {
  return proof !== undefined || client.dpopBoundAccessTokens === true;
}

/** RFC 8628 §3.5: the answer to a poll that brought no approval. */
function pollRefusal(result: Exclude<PollResult, { outcome: "approved" }>): Response {
  switch (result.outcome) {
    case "pending":
      return oauthError("authorization_pending", "the request has not been approved yet");
    case "slow_down":
      return oauthError(
        "slow_down",
        `polling too fast; wait ${result.intervalSeconds} seconds between polls`,
      );
    case "denied":
      return oauthError("access_denied", "the request was denied");
    case "expired":
      return oauthError("expired_token", "the device code has expired");
    case "invalid":
      return oauthError("invalid_grant", "the device code is invalid or was already used");
  }
}

function clientCredentialsGrant({ clientCredentials, allowed }: ServerSettings): TokenGrant {
  const handler = clientCredentials as NonNullable<typeof clientCredentials>;
  return async ({ params, client }, proof) => {
    // Also for a client from a store of its own that lists the grant for a public client.
    if (client.public)
      return oauthError("invalid_client", "client_credentials needs client authentication");
    const scopeParam = params.get("scope");
    const scope = parseScope(scopeParam, allowed);
    if (scope === undefined)
      return oauthError("invalid_scope", "the scope names something unknown");
    const resource = params.get("resource");
    if (resource !== undefined && !isResource(resource))
      return oauthError("invalid_target", "resource must be one absolute URL without a fragment");
    const issued = await handler({
      client,
      ...(scopeParam === undefined ? {} : { scope }),
      ...(resource === undefined ? {} : { resource }),
      ...(proof === undefined ? {} : { jkt: proof.jkt }),
    });
    // Spent only for a token about to be handed out: a refusal records nothing.
    if (proof !== undefined && !("error" in issued) && !(await proof.spend())) return PROOF_USED();
    return tokenResponse(issued, scope, boundFor(client, proof));
  };
}

/** RFC 6749 §5.1 from what the issuer answered; an answer that is neither token nor error is a bug. */
function tokenResponse(
  issued: IssuedToken | OAuthFailure,
  asked: readonly string[],
  bound: boolean,
): Response {
  if ("error" in issued) return oauthError(issued.error, issued.description);
  // A proof was checked, or the client registered for bound tokens: a bearer token would undo it.
  if (bound && issued.tokenType !== "DPoP")
    throw new TypeError("the token issuer answered a bearer token where a DPoP-bound one is due");
  if (
    typeof issued?.accessToken !== "string" ||
    issued.accessToken === "" ||
    !Number.isSafeInteger(issued.expiresIn) ||
    issued.expiresIn < 1 ||
    (issued.tokenType !== undefined && issued.tokenType !== "Bearer" && issued.tokenType !== "DPoP")
  )
    throw new TypeError("the token issuer answered neither a token nor an OAuth error");
  const scope = issued.scope ?? asked;
  const body: TokenResponseBody = {
    access_token: issued.accessToken,
    token_type: issued.tokenType ?? "Bearer",
    expires_in: issued.expiresIn,
    ...(scope.length === 0 ? {} : { scope: scope.join(" ") }),
  };
  return noStoreJson(body);
}

/** RFC 8707 §2: one absolute URI without a fragment (http(s) only here). */
function isResource(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return url.hash === "" && (url.protocol === "https:" || url.protocol === "http:");
}
