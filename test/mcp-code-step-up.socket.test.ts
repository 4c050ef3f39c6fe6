/**
 * The MCP step-up for a client that signed in by authorization code and holds a refresh token:
 * `mcp.scopes` names fewer scopes than the tools, a call outside them answers 403
 * `insufficient_scope`, and what each SDK line's own transport does then. The person's part
 * (sign-in, consent) is played with the code-flow helpers, over a real socket.
 */
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
  UnauthorizedError as ModernUnauthorized,
  type OAuthClientMetadata,
  type OAuthTokens,
} from "@modelcontextprotocol/client";
import { UnauthorizedError as LegacyUnauthorized } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CodeSite,
  codeSite,
  DESKTOP,
  LOOPBACK_REDIRECT,
  openAuthorize,
  postConsent,
} from "./support/code-flow.ts";

let site: CodeSite;
beforeAll(async () => {
  // Clients ask for read_notes first; add_note needs a step-up.
  site = await codeSite({ mcp: { scopes: ["read_notes"] } });
});
afterAll(async () => {
  await site?.close();
});

/** The registered public client `desktop-client`, as the SDKs' `OAuthClientProvider`. */
class DesktopProvider {
  saved: OAuthTokens[] = [];
  authorizations: URL[] = [];
  #verifier = "";
  readonly redirectUrl = LOOPBACK_REDIRECT;
  get clientMetadata(): OAuthClientMetadata {
    return { redirect_uris: [LOOPBACK_REDIRECT], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return { client_id: DESKTOP };
  }
  tokens() {
    return this.saved.at(-1);
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved.push(tokens);
  }
  redirectToAuthorization(url: URL) {
    this.authorizations.push(url);
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    return this.#verifier;
  }
}

/** alice approves the authorization request the client opened last: the callback's query. */
async function consent(provider: DesktopProvider): Promise<URLSearchParams> {
  const shown = await openAuthorize(site, provider.authorizations.at(-1) as URL);
  expect(shown.status).toBe(200);
  const { consentToken } = (await shown.json()) as { consentToken: string };
  const answer = await postConsent(site, { consent: consentToken, action: "approve" });
  return new URL(answer.headers.get("location") as string).searchParams;
}

interface McpClient {
  callTool(request: { name: string; arguments?: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

describe("the step-up of a client that holds a refresh token", () => {
  it("@modelcontextprotocol/sdk 1.32 refreshes instead of asking again, and stops at the second 403", async () => {
    const provider = new DesktopProvider();
    const endpoint = new URL(site.mcpUrl);
    const client = new LegacyClient({ name: "step-up", version: "1.0.0" });
    const first = new LegacyTransport(endpoint, { authProvider: provider });
    await expect(client.connect(first)).rejects.toBeInstanceOf(LegacyUnauthorized);
    expect(provider.authorizations[0]?.searchParams.get("scope")).toBe("read_notes");
    await first.finishAuth((await consent(provider)).get("code") as string);
    await client.connect(new LegacyTransport(endpoint, { authProvider: provider }));
    const mcp = client as unknown as McpClient;
    await expect(mcp.callTool({ name: "read_notes" })).resolves.toBeDefined();
    expect(provider.saved.at(-1)?.scope).toBe("read_notes");

    // add_note answers 403 insufficient_scope: the SDK runs auth() with the scope, which
    // refreshes (the grant holds read_notes only) and never opens a new authorization.
    await expect(mcp.callTool({ name: "add_note", arguments: { text: "x" } })).rejects.toThrow(
      /403 after trying upscoping/,
    );
    expect(provider.authorizations).toHaveLength(1);
    expect(provider.saved).toHaveLength(2);
    expect(provider.saved.at(-1)?.scope).toBe("read_notes");
    expect(site.ran).not.toContain("add_note:x");
    await client.close();
  });

  it("@modelcontextprotocol/client 2.4 asks the person again for the wider scope", async () => {
    const provider = new DesktopProvider();
    const endpoint = new URL(site.mcpUrl);
    const client = new ModernClient({ name: "step-up", version: "1.0.0" });
    const first = new ModernTransport(endpoint, { authProvider: provider });
    await expect(client.connect(first)).rejects.toBeInstanceOf(ModernUnauthorized);
    await first.finishAuth(await consent(provider));
    const transport = new ModernTransport(endpoint, { authProvider: provider });
    await client.connect(transport);
    const mcp = client as unknown as McpClient;
    await expect(mcp.callTool({ name: "read_notes" })).resolves.toBeDefined();

    const stepping = mcp.callTool({ name: "add_note", arguments: { text: "y" } });
    await expect(stepping).rejects.toBeInstanceOf(ModernUnauthorized);
    const asked = provider.authorizations.at(-1) as URL;
    expect(provider.authorizations).toHaveLength(2);
    expect(asked.searchParams.get("scope")?.split(" ")).toContain("add_note");
    await transport.finishAuth(await consent(provider));
    await expect(
      mcp.callTool({ name: "add_note", arguments: { text: "y" } }),
    ).resolves.toBeDefined();
    expect(site.ran).toContain("add_note:y");
    await client.close();
  });
});
