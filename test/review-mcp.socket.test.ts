/**
 * The MCP endpoint against requests no stock client sends: JSON-RPC batches
 * (only 2025-03-26 has them), prototype keys in tool arguments, methods other
 * than POST.
 */
import { describe, expect, it } from "vitest";
import { activeGrant } from "./support/grants.ts";
import {
  AGENT_ID,
  AGENT_SECRET,
  postMcp,
  rpcAnswers,
  type Site,
  sitesClosedAfterAll,
} from "./support/mcp.ts";

const site = sitesClosedAfterAll();

async function mcpToken(s: Site, scope = "read_notes add_note"): Promise<string> {
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

function batch(s: Site, token: string, version: string | undefined, messages: unknown[]) {
  return postMcp(s, token, version, JSON.stringify(messages));
}

let rpcId = 0;

/** A `tools/call` message; `args` as JSON text, so that it may carry keys an object literal cannot. */
function toolCall(name: string, args = "{}"): string {
  return `{"jsonrpc":"2.0","id":${++rpcId},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${args}}}`;
}

/** What a tool call answered: the JSON-RPC error's code, or the result's `isError` and text. */
function outcome(message: Record<string, unknown> | undefined) {
  if (message === undefined) return "no answer";
  const error = message.error as { code: number } | undefined;
  if (error !== undefined) return { code: error.code };
  const result = message.result as { isError?: boolean; content: { text: string }[] };
  return { isError: result.isError ?? false, text: result.content[0]?.text };
}

/** The 2026-07-28 form of a `tools/call`, with its envelope and headers. */
function modernCall(s: Site, token: string, name: string, args: string) {
  const meta = JSON.stringify({
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1.0.0" },
    "io.modelcontextprotocol/clientCapabilities": {},
  });
  return postMcp(
    s,
    token,
    "2026-07-28",
    `{"jsonrpc":"2.0","id":${++rpcId},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${args},"_meta":${meta}}}`,
    { "mcp-method": "tools/call", "mcp-name": name },
  );
}

describe("a JSON-RPC batch under a revision that has none", () => {
  // 2025-06-18 removed batching; the modern revision never had it; a client of those sends
  // its version on every request.
  for (const version of ["2025-06-18", "2025-11-25", "2026-07-28"])
    it(`is refused whole, 400 invalid request, with a reusable token (${version})`, async () => {
      const s = await site();
      await activeGrant(s.agents.runtime.grants, Date.now(), ["read_notes"]);
      const token = await mcpToken(s);
      const answer = await postMcp(
        s,
        token,
        version,
        `[${toolCall("read_notes")},${toolCall("read_notes")}]`,
      );
      expect(answer.status).toBe(400);
      expect(await answer.json()).toMatchObject({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: expect.stringContaining("batch") },
      });
      expect(s.ran).toEqual([]);
      // The token is still good for single messages.
      const single = await postMcp(
        s,
        token,
        version === "2026-07-28" ? "2025-11-25" : version,
        toolCall("read_notes"),
      );
      expect(single.status).toBe(200);
      expect(s.ran).toEqual(["read_notes"]);
    });
});

describe("a JSON-RPC batch of 2025-03-26 (no version header, or that one)", () => {
  for (const version of [undefined, "2025-03-26"])
    it(`is refused whole with a single-use token: one token, one call (${version ?? "no header"})`, async () => {
      const s = await site({ mcp: { singleUseBearer: true } });
      await activeGrant(s.agents.runtime.grants, Date.now(), ["read_notes"]);
      const token = await mcpToken(s);
      const calls = Array.from({ length: 100 }, () => toolCall("read_notes"));
      const answer = await postMcp(s, token, version, `[${calls.join(",")}]`);
      expect(answer.status).toBe(400);
      expect(await answer.json()).toMatchObject({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: expect.stringContaining("single-use") },
      });
      // Even a batch of one: a single-use token carries one message, never a list.
      const fresh = await mcpToken(s);
      const one = await postMcp(s, fresh, version, `[${toolCall("read_notes")}]`);
      expect(one.status).toBe(400);
      expect(s.ran).toEqual([]);
      // The token was spent by the request that carried it, as any request spends it.
      expect((await postMcp(s, token, version, toolCall("read_notes"))).status).toBe(401);
      // One token, one message.
      const next = await mcpToken(s);
      expect((await postMcp(s, next, version, toolCall("read_notes"))).status).toBe(200);
      expect(s.ran).toEqual(["read_notes"]);
    });

  it("runs each tools/call of a reusable token's batch on its own decision, and answers each", async () => {
    const s = await site();
    await activeGrant(s.agents.runtime.grants, Date.now(), ["read_notes", "add_note"]);
    const token = await mcpToken(s);
    const answer = await postMcp(
      s,
      token,
      undefined,
      `[${toolCall("read_notes")},${toolCall("add_note", '{"text":"one"}')},${toolCall("add_note", '{"text":""}')},${toolCall("add_note", '{"text":"two","__proto__":{"text":"x"}}')}]`,
    );
    expect(answer.status).toBe(200);
    const answers = await rpcAnswers(answer);
    const byId = new Map(answers.map((message) => [message.id, message]));
    const ids = [rpcId - 3, rpcId - 2, rpcId - 1, rpcId];
    expect(ids.map((id) => outcome(byId.get(id)))).toEqual([
      { isError: false, text: '{"notes":["first"]}' },
      { isError: false, text: '{"count":2}' },
      {
        isError: true,
        text: expect.stringMatching(/^the arguments do not match the input schema: /),
      },
      { isError: true, text: expect.stringContaining("__proto__") },
    ]);
    expect(s.ran).toEqual(["read_notes", "add_note:one"]);
  });
});

describe("a prototype key in tool arguments", () => {
  const poisoned: [string, string, string][] = [
    ["__proto__ beside the text", "add_note", '{"text":"x","__proto__":{"text":"y"}}'],
    ["__proto__ alone", "add_note", '{"__proto__":{"text":"y"}}'],
    ["__proto__ nested, no input schema", "read_notes", '{"filter":{"__proto__":{"all":true}}}'],
    ["__proto__ in a list", "read_notes", '{"filter":[{"__proto__":{"all":true}}]}'],
    ["constructor", "read_notes", '{"constructor":{"prototype":{"all":true}}}'],
    ["prototype", "read_notes", '{"prototype":{"all":true}}'],
  ];
  for (const version of [undefined, "2025-11-25", "2026-07-28"])
    for (const [name, tool, args] of poisoned)
      it(`is refused as bad arguments before anything runs: ${name} (${version ?? "no header"})`, async () => {
        const s = await site();
        const grant = await activeGrant(s.agents.runtime.grants, Date.now(), [
          "read_notes",
          "add_note",
        ]);
        const token = await mcpToken(s);
        const answer =
          version === "2026-07-28"
            ? await modernCall(s, token, tool, args)
            : await postMcp(s, token, version, toolCall(tool, args));
        expect(answer.status).toBe(200);
        const [message] = await rpcAnswers(answer);
        expect(outcome(message)).toEqual({
          isError: true,
          text: expect.stringMatching(
            /^the arguments do not match the input schema: .*the key (__proto__|constructor|prototype) is not allowed/,
          ),
        });
        expect(s.ran).toEqual([]);
        expect(s.events).toContainEqual({
          type: "execute.denied",
          error: "invalid_request",
          principalId: AGENT_ID,
          grantId: grant.grantId,
          capability: tool,
          via: "mcp",
        });
        // The same token runs clean arguments.
        const clean =
          version === "2026-07-28"
            ? await modernCall(s, token, "add_note", '{"text":"ok"}')
            : await postMcp(s, token, version, toolCall("add_note", '{"text":"ok"}'));
        expect(outcome((await rpcAnswers(clean))[0])).toEqual({
          isError: false,
          text: '{"count":2}',
        });
        expect(s.ran).toEqual(["add_note:ok"]);
      });

  it("is refused as at execute: the same message from the same check", async () => {
    const s = await site();
    await activeGrant(s.agents.runtime.grants, Date.now(), ["read_notes", "add_note"]);
    const executeToken = async () => {
      const response = await fetch(`${s.base}/oauth/token`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Basic ${btoa(`${AGENT_ID}:${AGENT_SECRET}`)}`,
        },
        body: new URLSearchParams({ grant_type: "client_credentials", scope: "add_note" }),
      });
      return ((await response.json()) as { access_token: string }).access_token;
    };
    const atExecute = await fetch(`${s.base}/capability/execute`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await executeToken()}`,
        "content-type": "application/json",
      },
      body: '{"capability":"add_note","arguments":{"text":"x","__proto__":{"text":"y"}}}',
    });
    expect(atExecute.status).toBe(400);
    const { errors } = (await atExecute.json()) as { errors: { path: string; message: string }[] };
    const atMcp = await postMcp(
      s,
      await mcpToken(s),
      "2025-11-25",
      toolCall("add_note", '{"text":"x","__proto__":{"text":"y"}}'),
    );
    const [message] = await rpcAnswers(atMcp);
    expect(outcome(message)).toEqual({
      isError: true,
      text: `the arguments do not match the input schema: ${errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`,
    });
    expect(s.ran).toEqual([]);
  });
});

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
