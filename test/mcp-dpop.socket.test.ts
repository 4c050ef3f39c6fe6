/**
 * The MCP endpoint with DPoP on, over a real socket, driven by the MCP SDK
 * 2.4 client with `provider.dpop()` (SEP-1932): one DPoP-bound token for
 * many calls, a fresh proof for each, the step-up challenge naming the
 * schemes the endpoint accepts, and what a thief holding a recorded request
 * can do with it (nothing).
 */
import { DpopSession } from "@modelcontextprotocol/client";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { describe, expect, it } from "vitest";
import { activeGrant } from "./support/grants.ts";
import { connect, LINES, recordingFetch, type Site, sitesClosedAfterAll } from "./support/mcp.ts";

const NONCE_SECRET = "a-dpop-nonce-secret-of-32-characters-or-more";
const PRM_PATH = "/.well-known/oauth-protected-resource/mcp";
const closedAfterAll = sitesClosedAfterAll();

async function site(nonces: boolean): Promise<Site> {
  const made = await closedAfterAll({
    dpop: nonces ? { nonce: { secret: NONCE_SECRET, required: true } } : {},
  });
  await activeGrant(made.agents.runtime.grants, Date.now(), ["read_notes", "add_note"]);
  return made;
}

/** The requests to /mcp the server saw, with their `authorization` and `dpop` headers. */
function mcpRequests(s: Site) {
  return s.seen.filter((entry) => entry.path === "/mcp" && entry.method === "POST");
}

describe.each([
  ["without nonces", false],
  ["with nonces required", true],
])("DPoP at /mcp %s", (_name, nonces) => {
  for (const line of LINES.filter((l) => l !== "sdk 1.32"))
    it(`the ${line} client: one bound token for many calls, each proof distinct`, async () => {
      const s = await site(nonces);
      const recorded = recordingFetch();
      const dpop = await DpopSession.create();
      const client = await connect(line, s.base, s.mcpUrl, { fetch: recorded.fetch, dpop });
      await client.listTools();
      for (let i = 0; i < 3; i++) await client.callTool({ name: "read_notes", arguments: {} });
      await client.callTool({ name: "add_note", arguments: { text: "bound" } });
      const tokens = client.provider.tokens() as { token_type: string; access_token: string };
      await client.close();
      expect(s.ran).toEqual(["read_notes", "read_notes", "read_notes", "add_note:bound"]);
      expect(tokens.token_type.toLowerCase()).toBe("dpop");
      expect(decodeJwt(tokens.access_token).cnf).toEqual({ jkt: expect.any(String) });
      // One token minted (with nonces, the first request is answered use_dpop_nonce and retried).
      const tokenRequests = recorded.log.filter((entry) => entry.url.endsWith("/oauth/token"));
      expect(tokenRequests.map((entry) => entry.status)).toEqual(nonces ? [400, 200] : [200]);
      const presented = mcpRequests(s).filter((entry) => entry.headers.has("authorization"));
      expect(presented.length).toBeGreaterThanOrEqual(5);
      for (const entry of presented)
        expect(entry.headers.get("authorization")).toBe(`DPoP ${tokens.access_token}`);
      const proofs = presented.map((entry) => entry.headers.get("dpop") ?? "");
      const ids = proofs.map((proof) => decodeJwt(proof).jti);
      expect(new Set(ids).size).toBe(proofs.length);
      for (const proof of proofs) {
        expect(decodeProtectedHeader(proof).typ).toBe("dpop+jwt");
        expect(decodeJwt(proof)).toMatchObject({ htm: "POST", htu: s.mcpUrl });
        if (nonces) expect(decodeJwt(proof).nonce).toEqual(expect.any(String));
      }
    });

  it("refuses a replayed proof, and the bound token under Bearer or without its proof", async () => {
    const s = await site(nonces);
    const dpop = await DpopSession.create();
    const client = await connect("client 2.4 (2026-07-28)", s.base, s.mcpUrl, { dpop });
    await client.callTool({ name: "read_notes", arguments: {} });
    const tokens = client.provider.tokens() as { access_token: string };
    await client.close();
    const ran = s.ran.length;
    // The last call the client made, sent again byte for byte: its proof's jti is spent.
    const last = mcpRequests(s).at(-1);
    const authorization = last?.headers.get("authorization") ?? "";
    const proof = last?.headers.get("dpop") ?? "";
    expect(authorization).toMatch(/^DPoP /);
    const send = (headers: Record<string, string>) =>
      fetch(s.mcpUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
          ...headers,
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "read_notes", arguments: {} },
        }),
      });
    const replayed = await send({ authorization, dpop: proof });
    expect(replayed.status).toBe(401);
    expect(((await replayed.json()) as { error: string }).error).toBe("invalid_dpop_proof");
    expect(replayed.headers.get("www-authenticate")).toContain('error="invalid_dpop_proof"');
    const asBearer = await send({ authorization: `Bearer ${tokens.access_token}` });
    expect(asBearer.status).toBe(401);
    const asBearerWithProof = await send({
      authorization: `Bearer ${tokens.access_token}`,
      dpop: proof,
    });
    expect(asBearerWithProof.status).toBe(401);
    const noProof = await send({ authorization });
    expect(noProof.status).toBe(401);
    expect(s.ran).toHaveLength(ran);
  });
});

describe.each([
  ["required", true],
  ["optional", false],
])("the step-up at /mcp with DPoP %s", (_name, required) => {
  for (const line of LINES.filter((l) => l !== "sdk 1.32"))
    it(`names the schemes the endpoint accepts, and the ${line} client steps up with its key`, async () => {
      const s = await closedAfterAll({ dpop: { required }, mcp: { scopes: ["read_notes"] } });
      await activeGrant(s.agents.runtime.grants, Date.now(), ["read_notes", "add_note"]);
      const recorded = recordingFetch();
      const dpop = await DpopSession.create();
      const client = await connect(line, s.base, s.mcpUrl, { fetch: recorded.fetch, dpop });
      await client.callTool({ name: "read_notes", arguments: {} });
      const added = await client.callTool({ name: "add_note", arguments: { text: "more" } });
      const tokens = client.provider.tokens() as { access_token: string };
      await client.close();
      expect(added.structuredContent).toEqual({ count: 2 });
      expect(s.ran).toEqual(["read_notes", "add_note:more"]);
      const stepUp = recorded.log.filter((entry) => entry.status === 403);
      expect(stepUp).toHaveLength(1);
      const metadata = `resource_metadata="${s.base}${PRM_PATH}"`;
      const onDpop = `DPoP error="insufficient_scope", algs="ES256 EdDSA Ed25519", scope="add_note", ${metadata}`;
      // Bearer is refused when DPoP is required: a challenge for it would lead nowhere.
      expect(stepUp[0]?.answered.get("www-authenticate")).toBe(
        required
          ? onDpop
          : `Bearer error="insufficient_scope", scope="add_note", ${metadata}, ${onDpop}`,
      );
      expect(decodeJwt(tokens.access_token)).toMatchObject({
        cnf: { jkt: expect.any(String) },
        capabilities: expect.arrayContaining(["read_notes", "add_note"]),
      });
    });
});
