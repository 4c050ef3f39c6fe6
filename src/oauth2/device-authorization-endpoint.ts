import type { Handler } from "../core/handler.ts";
import { DEVICE_CODE_GRANT } from "./clients.ts";
import { clientEndpoint } from "./endpoint-support.ts";
import { parseScope } from "./scope.ts";
import type { ServerSettings } from "./server-options.ts";
import { noStoreJson, oauthError } from "./wire.ts";

/**
 * `POST {device_authorization}` (RFC 8628 §3.1-3.2): an authenticated client
 * allowed the device flow, a known scope, then a new device and user code. A
 * metadata document client never is (it has no secret to authenticate with,
 * and a document gives the authorization-code grants only): refused
 * `unauthorized_client` without its document being fetched.
 */
export function deviceAuthorizationEndpoint(settings: ServerSettings): Handler {
  const { service, allowed, onDeviceAuthorization } = settings;
  return clientEndpoint(settings, async ({ request, params, client }) => {
    if (!client.grantTypes.includes(DEVICE_CODE_GRANT))
      return oauthError("unauthorized_client", "this client may not use the device flow");
    const scope = parseScope(params.get("scope"), allowed);
    if (scope === undefined)
      return oauthError("invalid_scope", "the scope names something unknown");
    const body = await service.begin(client.clientId, scope);
    await onDeviceAuthorization?.({
      client,
      scope,
      userCode: body.user_code,
      // On the service's clock, which may not be the wall clock.
      expiresAt: service.now() + body.expires_in * 1000,
      request,
    });
    return noStoreJson(body);
  });
}
