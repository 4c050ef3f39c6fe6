/**
 * A device (a TV, a CLI) signing in with the OAuth device flow, using
 * openid-client: it shows a code, a human approves it at /device in a
 * browser, and the device receives a token issued to that human.
 *
 *   npx tsx examples/device/device.ts http://127.0.0.1:3000
 */
import * as oidc from "openid-client";

const issuer = new URL(process.argv[2] ?? "http://127.0.0.1:3000");
const clientId = process.env.PORTCULLIS_DEMO_DEVICE_ID ?? "demo-device";
const secret = process.env.PORTCULLIS_DEMO_DEVICE_SECRET ?? "demo-device-secret";

const config = await oidc.discovery(issuer, clientId, undefined, oidc.ClientSecretPost(secret), {
  algorithm: "oauth2",
  // Plain HTTP only because the example runs on localhost.
  ...(issuer.protocol === "http:" ? { execute: [oidc.allowInsecureRequests] } : {}),
});
const authorization = await oidc.initiateDeviceAuthorization(config, { scope: "profile" });
console.log(`To sign this device in, open ${authorization.verification_uri}`);
console.log(`and enter the code ${authorization.user_code}`);
console.log(`(or open ${authorization.verification_uri_complete})`);

try {
  const tokens = await oidc.pollDeviceAuthorizationGrant(config, authorization);
  const [, payload = ""] = tokens.access_token.split(".");
  const claims = JSON.parse(atob(payload.replace(/-/g, "+").replace(/_/g, "/")));
  console.log(`Signed in as ${claims.sub}; the token expires in ${tokens.expires_in} s.`);
} catch (error) {
  const code = (error as { error?: string }).error;
  console.log(
    code === "access_denied" ? "The request was denied." : `Sign-in failed: ${code ?? error}`,
  );
  process.exitCode = 1;
}
