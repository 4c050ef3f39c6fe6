/**
 * RFC 9728 protected resource metadata for the execute URL, over a real
 * socket: the document agentAuth serves, the 401 challenges that point to it
 * (with DPoP off, on, and required), the RFC 8414 `protected_resources`, and
 * the MCP SDK's own client-side discovery reading both.
 */
import { request as httpRequest } from "node:http";
import {
  discoverOAuthProtectedResourceMetadata,
  extractResourceMetadataUrl,
  extractWWWAuthenticateParams,
} from "@modelcontextprotocol/sdk/client/auth.js";
import { afterAll, describe, expect, it } from "vitest";
import {
  type AgentAuth,
  type AgentAuthPaths,
  type AgentDpopOptions,
  agentAuth,
} from "../src/agentauth/index.ts";
import { MemoryClientStore } from "../src/oauth2/index.ts";
import { type Served, serveFetch } from "./serve.ts";

const ALGS = 'algs="ES256 EdDSA Ed25519"';
const WELL_KNOWN = "/.well-known/oauth-protected-resource";
const servers: Served[] = [];

afterAll(async () => {
  for (const server of servers) await server.close();
});

interface Site {
  readonly base: string;
  readonly agents: AgentAuth;
  readonly execute: string;
  readonly metadata: string;
  readonly location: string;
}

/** agentAuth on its own socket: its routes, one location, 404 for anything else. */
async function site(options: { dpop?: AgentDpopOptions; paths?: AgentAuthPaths } = {}) {
  let route: (request: Request) => Promise<Response> = async () => new Response(null);
  const served = await serveFetch((request) => route(request));
  servers.push(served);
  const base = served.url;
  const location = `${base}/files/export`;
  const agents = await agentAuth({
    issuer: base,
    clients: new MemoryClientStore(),
    providerName: "Notes",
    onStoreError: () => {},
    ...(options.dpop === undefined ? {} : { dpop: options.dpop }),
    ...(options.paths === undefined ? {} : { paths: options.paths }),
    capabilities: [
      { name: "write", description: "Writes.", handler: () => "written" },
      { name: "read", description: "Reads.", handler: () => "read" },
      { name: "export", description: "Exports.", location },
    ],
  });
  const exported = agents.resolveSession(location)(async () => Response.json({ ok: true }));
  route = async (request) => {
    const answered = await agents.route(request);
    if (answered !== undefined) return answered;
    if (new URL(request.url).pathname === "/files/export") return exported(request);
    return new Response("not found", { status: 404 });
  };
  const executePath = options.paths?.execute ?? "/capability/execute";
  return {
    base,
    agents,
    execute: `${base}${executePath}`,
    metadata: `${base}${WELL_KNOWN}${executePath}`,
    location,
  } satisfies Site;
}

/** The challenges of a 401, one per scheme, in the order they were sent. */
function challengesOf(response: Response): string[] {
  return (response.headers.get("www-authenticate") ?? "").split(
    /, (?=[A-Z][A-Za-z]+ |[A-Z][A-Za-z]+$)/,
  );
}

/** `POST` execute, with `authorization` when given. */
function execute(url: string, authorization?: string): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(authorization === undefined ? {} : { authorization }),
    },
    body: JSON.stringify({ capability: "read" }),
  });
}

/** A raw HTTP/1.1 request with the headers exactly as given (a spoofed `Host` included). */
function rawRequest(
  url: string,
  method: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        body += chunk;
      });
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
      );
    });
    request.on("error", reject);
    request.end(method === "POST" ? JSON.stringify({ capability: "read" }) : undefined);
  });
}

describe("the execute URL's protected resource metadata", () => {
  it("serves resource, authorization server, executable capabilities and provider name, for an hour", async () => {
    const s = await site();
    const response = await fetch(s.metadata);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("cache-control")).toBe("public, max-age=3600");
    expect(await response.json()).toEqual({
      resource: s.execute,
      authorization_servers: [s.base],
      // Sorted, and never a capability served at its own location.
      scopes_supported: ["read", "write"],
      bearer_methods_supported: ["header"],
      resource_name: "Notes",
    });
    const head = await fetch(s.metadata, { method: "HEAD" });
    expect([head.status, await head.text()]).toEqual([200, ""]);
  });

  it("answers 405 to other methods, and 404 at the root and beside the path", async () => {
    const s = await site();
    for (const method of ["POST", "PUT", "DELETE"]) {
      const refused = await fetch(s.metadata, { method });
      expect([refused.status, refused.headers.get("allow")], method).toEqual([405, "GET, HEAD"]);
    }
    for (const path of [
      WELL_KNOWN,
      `${WELL_KNOWN}/`,
      `${WELL_KNOWN}/capability`,
      `${WELL_KNOWN}/capability/execute/more`,
      `${WELL_KNOWN}/capability/list`,
    ]) {
      const missing = await fetch(`${s.base}${path}`);
      expect(missing.status, path).toBe(404);
    }
  });

  it("publishes the DPoP algorithms and whether bound tokens are required", async () => {
    for (const required of [false, true]) {
      const s = await site({ dpop: { required } });
      expect(await (await fetch(s.metadata)).json()).toEqual({
        resource: s.execute,
        authorization_servers: [s.base],
        scopes_supported: ["read", "write"],
        bearer_methods_supported: ["header"],
        resource_name: "Notes",
        dpop_signing_alg_values_supported: ["ES256", "EdDSA", "Ed25519"],
        dpop_bound_access_tokens_required: required,
      });
    }
  });

  it("follows a configured execute path (RFC 9728 §3.1), and nothing stays at the default", async () => {
    const s = await site({ paths: { execute: "/agents/run" } });
    expect(s.metadata).toBe(`${s.base}/.well-known/oauth-protected-resource/agents/run`);
    const document = await (await fetch(s.metadata)).json();
    expect(document.resource).toBe(`${s.base}/agents/run`);
    expect((await fetch(`${s.base}${WELL_KNOWN}/capability/execute`)).status).toBe(404);
    const challenge = (await execute(s.execute)).headers.get("www-authenticate");
    expect(challenge).toContain(`resource_metadata="${s.metadata}"`);
  });

  it("is listed in the RFC 8414 metadata as protected_resources", async () => {
    const s = await site();
    const metadata = await (await fetch(`${s.base}/.well-known/oauth-authorization-server`)).json();
    expect(metadata.protected_resources).toEqual([s.execute]);
  });

  it("never takes a URL from Host or X-Forwarded-*", async () => {
    const s = await site({ dpop: {} });
    const spoofed = {
      host: "evil.example",
      "x-forwarded-host": "evil.example",
      "x-forwarded-proto": "https",
    };
    const document = await rawRequest(s.metadata, "GET", spoofed);
    expect(document.status).toBe(200);
    expect(document.body).not.toContain("evil");
    expect(JSON.parse(document.body).resource).toBe(s.execute);
    for (const authorization of [undefined, "Bearer not-a-token"]) {
      const refused = await rawRequest(s.execute, "POST", {
        ...spoofed,
        "content-type": "application/json",
        ...(authorization === undefined ? {} : { authorization }),
      });
      expect(refused.status).toBe(401);
      const challenges = String(refused.headers["www-authenticate"]);
      expect(challenges).not.toContain("evil");
      expect(challenges).toContain(`resource_metadata="${s.metadata}"`);
    }
    const metadata = await rawRequest(
      `${s.base}/.well-known/oauth-authorization-server`,
      "GET",
      spoofed,
    );
    expect(metadata.body).not.toContain("evil");
  });
});

describe("execute's 401 challenges", () => {
  it("without DPoP: Bearer naming the metadata, then AgentAuth; invalid_token once a token was presented", async () => {
    const s = await site();
    const discovery = `AgentAuth discovery="${s.base}/.well-known/agent-configuration"`;
    const pointer = `resource_metadata="${s.metadata}", scope="read write"`;
    const anonymous = await execute(s.execute);
    expect(anonymous.status).toBe(401);
    expect(challengesOf(anonymous)).toEqual([`Bearer ${pointer}`, discovery]);
    const presented = await execute(s.execute, "Bearer not-a-token");
    expect(presented.status).toBe(401);
    expect(challengesOf(presented)).toEqual([
      `Bearer error="invalid_token", ${pointer}`,
      discovery,
    ]);
  });

  it("with DPoP accepted beside Bearer: Bearer naming the metadata, then DPoP, then AgentAuth", async () => {
    const s = await site({ dpop: {} });
    const discovery = `AgentAuth discovery="${s.base}/.well-known/agent-configuration"`;
    const pointer = `resource_metadata="${s.metadata}", scope="read write"`;
    expect(challengesOf(await execute(s.execute))).toEqual([
      `Bearer ${pointer}`,
      `DPoP ${ALGS}`,
      discovery,
    ]);
    expect(challengesOf(await execute(s.execute, "Bearer not-a-token"))).toEqual([
      `Bearer error="invalid_token", ${pointer}`,
      `DPoP ${ALGS}`,
      discovery,
    ]);
    // A refused DPoP presentation: the error moves to the DPoP challenge, the pointer stays first.
    expect(challengesOf(await execute(s.execute, "DPoP not-a-token"))).toEqual([
      `Bearer ${pointer}`,
      `DPoP error="invalid_token", ${ALGS}`,
      discovery,
    ]);
  });

  it("with DPoP required: the DPoP challenge comes first and names the metadata", async () => {
    const s = await site({ dpop: { required: true } });
    const discovery = `AgentAuth discovery="${s.base}/.well-known/agent-configuration"`;
    const pointer = `resource_metadata="${s.metadata}", scope="read write"`;
    expect(challengesOf(await execute(s.execute))).toEqual([`DPoP ${ALGS}, ${pointer}`, discovery]);
    expect(challengesOf(await execute(s.execute, "Bearer not-a-token"))).toEqual([
      `DPoP error="invalid_token", ${ALGS}, ${pointer}`,
      discovery,
    ]);
  });

  it("leaves a capability's own location without a metadata pointer", async () => {
    for (const dpop of [undefined, {}]) {
      const s = await site(dpop === undefined ? {} : { dpop });
      const response = await fetch(s.location);
      expect(response.status).toBe(401);
      expect(response.headers.get("www-authenticate")).not.toContain("resource_metadata");
    }
  });
});

describe("the MCP SDK's client-side discovery", () => {
  it("reads the execute URL's metadata from its path-suffixed well-known URL", async () => {
    for (const options of [{}, { dpop: {} }, { dpop: { required: true } }]) {
      const s = await site(options);
      const discovered = await discoverOAuthProtectedResourceMetadata(s.execute);
      expect(discovered).toEqual(await (await fetch(s.metadata)).json());
      expect(discovered.resource).toBe(s.execute);
      expect(discovered.authorization_servers).toEqual([s.base]);
    }
  });

  it("finds the metadata URL in execute's 401, with and without a presented token", async () => {
    for (const options of [{}, { dpop: {} }]) {
      const s = await site(options);
      const anonymous = await execute(s.execute);
      expect(extractResourceMetadataUrl(anonymous)?.href).toBe(s.metadata);
      const presented = await execute(s.execute, "Bearer not-a-token");
      expect(extractWWWAuthenticateParams(presented)).toEqual({
        resourceMetadataUrl: new URL(s.metadata),
        scope: "read write",
        error: "invalid_token",
      });
      const discovered = await discoverOAuthProtectedResourceMetadata(s.execute, {
        resourceMetadataUrl: extractResourceMetadataUrl(anonymous) as URL,
      });
      expect(discovered.resource).toBe(s.execute);
    }
  });
});
