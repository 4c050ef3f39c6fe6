import { generateKeySet, jwtSigner } from "portcullis/jwt";
import {
  type AuthorizationServer,
  authorizationServer,
  DeviceAuthorizationService,
  deviceApproveHandler,
  MemoryClientStore,
} from "portcullis/oauth2";

/** The demo device client: for local use only, its secret is public. */
export const DEMO_DEVICE = {
  clientId: "demo-device",
  secret: process.env.PORTCULLIS_DEMO_DEVICE_SECRET ?? "demo-device-secret",
} as const;

export interface DeviceFlow {
  readonly server: AuthorizationServer;
  readonly approve: ReturnType<typeof deviceApproveHandler>;
  readonly service: DeviceAuthorizationService;
}

/**
 * The OAuth device flow of the example: a TV or CLI signs in as the human who
 * approves it at /device. (Agents are approved differently: see agentauth.)
 */
export async function createDeviceFlow(issuer: string): Promise<DeviceFlow> {
  const clients = new MemoryClientStore();
  await clients.register({
    clientId: DEMO_DEVICE.clientId,
    secret: DEMO_DEVICE.secret,
    name: "Demo device",
  });
  // Keys made at start-up: tokens die with the process. Import stored keys in production.
  const keys = await generateKeySet();
  const sign = jwtSigner({ keys, typ: "portcullis-example+jwt", issuer, ttlSeconds: 600 });
  const service = new DeviceAuthorizationService({ verificationUri: `${issuer}/device` });
  const server = authorizationServer({
    issuer,
    service,
    clients,
    keys,
    scopes: ["profile"],
    issueAccessToken: async ({ subject, scope }) => {
      const { token, expiresAt, issuedAt } = await sign({
        subject,
        audience: `${issuer}/`,
        claims: { scope: scope.join(" ") },
      });
      return { accessToken: token, expiresIn: expiresAt - issuedAt };
    },
  });
  return { server, service, approve: deviceApproveHandler({ service }) };
}
