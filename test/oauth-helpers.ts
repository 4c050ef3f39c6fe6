/**
 * Shared by the device-flow and agent socket suites: a human's browser over
 * the socket, an openid-client configuration, and the approval form post.
 */
import * as oidc from "openid-client";
import { Client } from "./support/session-app.ts";

/** A handler that sends what the in-process `Client` builds to the server at `base` instead. */
export function overSocket(base: string): (request: Request) => Promise<Response> {
  return async (request) => {
    const url = new URL(request.url);
    return fetch(`${base}${url.pathname}${url.search}`, {
      method: request.method,
      headers: request.headers,
      body: request.body === null ? undefined : await request.arrayBuffer(),
      redirect: "manual",
    });
  };
}

/** A browser-like client of the server at `base`, with the test app's cookie name. */
export function socketClient(base: string, cookieName: string): Client {
  return new Client(overSocket(base), cookieName);
}

/** openid-client configured from the server's RFC 8414 metadata (plain HTTP allowed: loopback). */
export function discover(
  issuer: string,
  clientId: string,
  secret: string,
  method: "basic" | "post" = "post",
): Promise<oidc.Configuration> {
  return oidc.discovery(
    new URL(issuer),
    clientId,
    undefined,
    method === "basic" ? oidc.ClientSecretBasic(secret) : oidc.ClientSecretPost(secret),
    { execute: [oidc.allowInsecureRequests], algorithm: "oauth2" },
  );
}

/** Posts the approval form (`user_code`, `action`, and `fields`) with the session's CSRF token. */
export async function decide(
  human: Client,
  path: string,
  userCode: string,
  action: "approve" | "deny",
  fields: Record<string, string> = {},
): Promise<Response> {
  const token = await human.csrf();
  return human.fetch(path, {
    method: "POST",
    token,
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...fields, user_code: userCode, action }).toString(),
  });
}
