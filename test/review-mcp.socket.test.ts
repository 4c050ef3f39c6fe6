/**
 * The MCP endpoint against requests no stock client sends: JSON-RPC batches
 * of the 2025 protocol era, methods other than POST.
 */
import { describe, expect, it } from "vitest";
import { activeGrant } from "./support/grants.ts";
import { AGENT_ID, AGENT_SECRET, postMcp, type Site, sitesClosedAfterAll } from "./support/mcp.ts";

const site = sitesClosedAfterAll();

async function mcpToken(s: Site, scope: string): Promise<string> {
  const response = await fetch(`${s.base}/oauth/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${btoa(`${AGENT_ID}:${AGENT_SECRET}`)}`,
    },
    body: new URLSearchParams({ grant_type: "client_credentials", resource: s.mcpUrl, scope }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

function batch(s: Site, token: string, version: string, messages: unknown[]) {
  return postMcp(s, token, version, JSON.stringify(messages));
}

describe("a JSON-RPC batch", () => {
  for (const version of ["2025-03-26", "2025-06-18", "2025-11-25"])
    it(`runs no tool outside token ∩ grant, wherever it stands in the batch (${version})`, async () => {
      const s = await site();
      await activeGrant(s.agents.runtime.grants, Date.now(), ["read_notes", "add_note"]);
      const token = await mcpToken(s, "read_notes");
      const answer = await batch(s, token, version, [
        {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "read_notes", arguments: {} },
        },
        {
          jsonrpc: "2.0",
          id: 2,
          method: "tools/call",
          params: { name: "add_note", arguments: { text: "x" } },
        },
      ]);
      const text = await answer.text();
      expect(answer.status, text).not.toBe(500);
      expect(
        s.ran.filter((name) => name.startsWith("add_note")),
        text,
      ).toEqual([]);
    });
});

describe("other methods", () => {
  for (const method of ["GET", "DELETE", "PUT", "PATCH"])
    it(`answers ${method} without running anything or failing 500`, async () => {
      const s = await site();
      await activeGrant(s.agents.runtime.grants, Date.now(), ["read_notes"]);
      const token = await mcpToken(s, "read_notes");
      const answer = await fetch(s.mcpUrl, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: "application/json, text/event-stream",
        },
      });
      const text = await answer.text();
      expect(answer.status, text).toBeGreaterThanOrEqual(400);
      expect(answer.status, text).toBeLessThan(500);
      expect(s.ran).toEqual([]);
    });
});

describe("odd bodies", () => {
  const bodies: [string, string][] = [
    ["null", "null"],
    ["an empty batch", "[]"],
    ["a string", '"x"'],
    ["a number", "1"],
    ["a call with no params", '{"jsonrpc":"2.0","id":1,"method":"tools/call"}'],
    [
      "a call with a non-string name",
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}',
    ],
    [
      "a call with array arguments",
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_notes","arguments":[1]}}',
    ],
    [
      "a call of __proto__",
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"__proto__","arguments":{}}}',
    ],
    [
      "a call of toString",
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"toString","arguments":{}}}',
    ],
    ["a batch of nulls", "[null,null]"],
  ];
  for (const version of ["2025-03-26", "2025-11-25"])
    for (const [name, body] of bodies)
      it(`answers ${name} (${version}) without a 500 and runs nothing`, async () => {
        const s = await site();
        await activeGrant(s.agents.runtime.grants, Date.now(), ["read_notes"]);
        const token = await mcpToken(s, "read_notes");
        const answer = await postMcp(s, token, version, body);
        const text = await answer.text();
        expect(answer.status, text).toBeLessThan(500);
        expect(s.errors, text).toEqual([]);
        if (!name.includes("array")) expect(s.ran).toEqual([]);
      });
});
