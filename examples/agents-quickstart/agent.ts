import * as oidc from "openid-client";

const issuer = new URL(process.env.NOTES_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`);
const key = process.env.RESEARCH_KEY;
if (!key) throw new Error("set RESEARCH_KEY to the key the service registered");
// openid-client refuses plain HTTP; allow it for this machine only, never for a remote service.
const loopback = ["127.0.0.1", "[::1]", "localhost"].includes(issuer.hostname);
const insecure = issuer.protocol === "http:" && loopback;
// What a person should read when it stops: one line, and exit code 1.
const stop = (line: string): never => {
  console.error(line);
  process.exit(1);
};

const discovery = (await (
  await fetch(new URL("/.well-known/agent-configuration", issuer)).catch(() =>
    stop(`Cannot reach ${issuer.origin}: is the service running, with the same PORT?`),
  )
).json()) as {
  endpoints: { execute: string };
};
const oauth = await oidc.discovery(issuer, "key_research", undefined, oidc.ClientSecretBasic(key), {
  algorithm: "oauth2",
  ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}),
});

const request = await oidc.initiateDeviceAuthorization(oauth, { scope: "list_notes add_note" });
console.log(`Ask a human to open ${request.verification_uri_complete}`);
console.log(`(or to enter ${request.user_code} at ${request.verification_uri})`);
const { access_token } = await oidc
  .pollDeviceAuthorizationGrant(oauth, request) // one token per approval
  .catch((error: unknown) => {
    const code = error instanceof oidc.ResponseBodyError ? error.error : undefined;
    if (code === "access_denied") return stop("Denied: the person did not approve this agent.");
    if (code === "expired_token")
      return stop("The code expired before anyone approved it: run the agent again.");
    throw error;
  });

const call = async (token: string, capability: string, args = {}) =>
  (
    await fetch(discovery.endpoints.execute, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ capability, arguments: args }),
    })
  ).json();

console.log(await call(access_token, "add_note", { text: "hello" })); // { data: { count: 1 } }
// Each token is single-use: take a fresh one from the grant for the next call.
const fresh = await oidc.clientCredentialsGrant(oauth, { scope: "list_notes" });
console.log(await call(fresh.access_token, "list_notes"));
