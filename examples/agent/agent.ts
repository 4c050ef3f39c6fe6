/**
 * The demo agent: discovers the service, asks a human to approve what it
 * wants through the OAuth device flow (openid-client), executes a capability,
 * takes a fresh token from its grant and executes again.
 *
 *   npm start                                  # the example, in another terminal
 *   npm run agent -- get_time
 *   npm run agent -- echo '{"text":"hello"}'
 *   npm run agent -- export_report
 *   npm run agent -- echo '{"text":"hi"}' --every 5   # keeps going until the grant is revoked
 *   npm run agent -- get_time --dpop            # tokens bound to a key that never leaves memory
 *
 * PORTCULLIS_URL (default http://127.0.0.1:$PORT, PORT 3000 as for `npm start`),
 * PORTCULLIS_AGENT_ID (demo-agent) and PORTCULLIS_AGENT_SECRET choose the
 * service and the agent.
 */
import * as oidc from "openid-client";

const args = process.argv.slice(2);
const every = args.includes("--every") ? Number(args[args.indexOf("--every") + 1]) : undefined;
const useDpop = args.includes("--dpop");
const positional = args.filter((arg, i) => !arg.startsWith("--") && args[i - 1] !== "--every");
const [capability, json] = positional;
if (capability === undefined) {
  console.error(
    "usage: npm run agent -- <capability> [json arguments] [--every <seconds>] [--dpop]",
  );
  process.exit(2);
}
let argumentsObject: unknown = {};
try {
  argumentsObject = json === undefined ? {} : JSON.parse(json);
} catch {
  console.error(`the arguments are not JSON: ${json}`);
  process.exit(2);
}

const base = new URL(process.env.PORTCULLIS_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`);
const agentId = process.env.PORTCULLIS_AGENT_ID ?? "demo-agent";
const secret =
  process.env.PORTCULLIS_AGENT_SECRET ??
  (agentId === "demo-agent-2" ? "demo-agent-2-secret" : "demo-agent-secret");
const say = (line: string) => console.log(`[agent] ${line}`);

interface Listing {
  name: string;
  description: string;
  location?: string;
}

say(`discovering ${base.origin}`);
const configuration = (await (
  await fetch(new URL("/.well-known/agent-configuration", base)).catch(() => {
    say(
      `nothing answers at ${base.origin}: start the service (npm start), or set PORT or PORTCULLIS_URL to where it listens`,
    );
    process.exit(1);
  })
).json()) as {
  issuer: string;
  endpoints: { capabilities: string; execute: string };
};
const oauth = await oidc.discovery(
  new URL(configuration.issuer),
  agentId,
  undefined,
  oidc.ClientSecretBasic(secret),
  {
    algorithm: "oauth2",
    // Plain HTTP only for a service on this machine: never toward a remote one.
    ...(base.protocol === "http:" && ["127.0.0.1", "[::1]", "localhost"].includes(base.hostname)
      ? { execute: [oidc.allowInsecureRequests] }
      : {}),
  },
);
const basic = `Basic ${btoa(`${encodeURIComponent(agentId)}:${encodeURIComponent(secret)}`)}`;
const listing = (await (
  await fetch(configuration.endpoints.capabilities, { headers: { authorization: basic } })
).json()) as {
  capabilities: Listing[];
};
const wanted = listing.capabilities.find((c) => c.name === capability);
if (wanted === undefined) {
  say(
    `the service offers no capability "${capability}"; it offers ${listing.capabilities.map((c) => c.name).join(", ")}`,
  );
  process.exit(1);
}

// With --dpop: a P-256 key whose private half cannot be exported, even by this process. Every
// token is bound to it, and so is the grant, so the agent's secret alone mints nothing.
let dpop: { DPoP: oidc.DPoPHandle } | undefined;
if (useDpop) {
  const key = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  dpop = { DPoP: oidc.getDPoPHandle(oauth, key) };
  say(
    `DPoP key ${(await thumbprint(key.publicKey)).slice(0, 10)}… (shown on /agents once approved)`,
  );
}

/** The RFC 7638 SHA-256 thumbprint of a P-256 public key. */
async function thumbprint(publicKey: CryptoKey): Promise<string> {
  const { crv, kty, x, y } = await crypto.subtle.exportKey("jwk", publicKey);
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(JSON.stringify({ crv, kty, x, y })),
  );
  return Buffer.from(digest).toString("base64url");
}

const authorization = await oidc.initiateDeviceAuthorization(oauth, { scope: capability });
say(`a human must approve this: open ${authorization.verification_uri_complete}`);
say(`(or open ${authorization.verification_uri} and enter the code ${authorization.user_code})`);
say("waiting for the approval...");

let tokens: Awaited<ReturnType<typeof oidc.pollDeviceAuthorizationGrant>>;
try {
  tokens = await oidc.pollDeviceAuthorizationGrant(oauth, authorization, undefined, dpop);
} catch (error) {
  const code = (error as { error?: string }).error;
  if (code === "access_denied") say("the human denied the request (access_denied)");
  else if (code === "expired_token") say("nobody approved the request in time (expired_token)");
  else say(`no approval: ${code ?? String(error)}`);
  process.exit(1);
}
say(`approved for: ${tokens.scope} (${tokens.token_type} token)`);

/** Runs the capability with `token`; answers whether it succeeded. */
async function run(token: string): Promise<boolean> {
  let response: Response;
  const url = wanted?.location ?? configuration.endpoints.execute;
  const method = wanted?.location === undefined ? "POST" : "GET";
  const body =
    method === "POST" ? JSON.stringify({ capability, arguments: argumentsObject }) : undefined;
  const headers = new Headers(method === "POST" ? { "content-type": "application/json" } : {});
  if (dpop === undefined) {
    headers.set("authorization", `Bearer ${token}`);
    response = await fetch(url, { method, headers, ...(body === undefined ? {} : { body }) });
  } else {
    // openid-client signs a proof for each request and retries once with a server nonce.
    try {
      response = await oidc.fetchProtectedResource(
        oauth,
        token,
        new URL(url),
        method,
        body,
        headers,
        dpop,
      );
    } catch (error) {
      const refused = (error as { response?: unknown }).response;
      if (!(refused instanceof Response)) throw error;
      response = refused;
    }
  }
  const answer = (await response.json()) as { data?: unknown; error?: string; message?: string };
  if (response.ok) {
    say(`${capability} → ${JSON.stringify(answer.data ?? answer)}`);
    return true;
  }
  if (answer.error === "grant_revoked")
    say("the grant was revoked (grant_revoked): a human must approve again");
  else if (answer.error === "grant_expired")
    say("the grant has expired (grant_expired): a human must approve again");
  else say(`${capability} refused: ${response.status} ${answer.error}: ${answer.message}`);
  return false;
}

/** A fresh single-use token from the grant (client_credentials with the agent's own credentials). */
async function freshToken(): Promise<string | undefined> {
  try {
    const parameters: Record<string, string> = { scope: capability as string };
    if (wanted?.location !== undefined) parameters.resource = wanted.location;
    const fresh = await oidc.clientCredentialsGrant(oauth, parameters, dpop);
    return fresh.access_token;
  } catch (error) {
    const code = (error as { error?: string }).error;
    say(
      `no fresh token: ${code === "invalid_grant" ? "the grant was revoked or has expired (invalid_grant)" : (code ?? String(error))}`,
    );
    return undefined;
  }
}

// The token from the approval is for the execute URL; a location capability needs one for its own URL.
const first = wanted.location === undefined ? tokens.access_token : await freshToken();
if (first === undefined || !(await run(first))) process.exit(1);
do {
  const token = await freshToken();
  if (token === undefined) process.exit(1);
  if (every !== undefined) await new Promise((resolve) => setTimeout(resolve, every * 1000));
  if (!(await run(token))) process.exit(1);
} while (every !== undefined);
say("done");
