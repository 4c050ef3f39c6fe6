/**
 * The agents quick start's agent (examples/agents-quickstart/agent.ts) when it
 * cannot go on: the person denied it, the code expired, or no service
 * listens. Each is one line a person can act on, and exit code 1, never a
 * stack. A stand-in service answers the device flow as the real one does.
 */
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "./processes.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
let service: Server | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (service ? service.close(() => resolve()) : resolve()));
  service = undefined;
});

/** A service whose token endpoint answers every poll with the OAuth error `polled`. */
async function serviceThatAnswers(polled: string): Promise<string> {
  const server = createServer((req, res) => {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
      res.end(JSON.stringify(body));
    };
    req.resume();
    req.on("end", () => {
      if (req.url === "/.well-known/agent-configuration")
        return json(200, { endpoints: { execute: `${base}/capability/execute` } });
      if (req.url === "/.well-known/oauth-authorization-server")
        return json(200, {
          issuer: base,
          device_authorization_endpoint: `${base}/oauth/device_authorization`,
          token_endpoint: `${base}/oauth/token`,
        });
      if (req.url === "/oauth/device_authorization")
        return json(200, {
          device_code: "device-code",
          user_code: "BCDF-GHJK",
          verification_uri: `${base}/agent/approve`,
          verification_uri_complete: `${base}/agent/approve?user_code=BCDF-GHJK`,
          expires_in: 600,
          interval: 1,
        });
      if (req.url === "/oauth/token") return json(400, { error: polled });
      json(404, { error: "not_found" });
    });
  });
  service = server;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function runAgent(url: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    ["--conditions=source", "--import", "tsx", "examples/agents-quickstart/agent.ts"],
    {
      cwd: ROOT,
      env: { ...process.env, NOTES_URL: url, RESEARCH_KEY: "0123456789abcdef0123456789abcdef" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stdout, stderr })));
}

describe("the quick start's agent, when it cannot go on", () => {
  it("says in one line that the person denied it, and exits 1", async () => {
    const run = await runAgent(await serviceThatAnswers("access_denied"));
    expect(run.stdout).toContain("Ask a human to open");
    expect(run.stderr.trim().split("\n")).toEqual([
      "Denied: the person did not approve this agent.",
    ]);
    expect(run.code).toBe(1);
  }, 60_000);

  it("says in one line that the code expired, and exits 1", async () => {
    const run = await runAgent(await serviceThatAnswers("expired_token"));
    expect(run.stderr.trim().split("\n")).toEqual([
      "The code expired before anyone approved it: run the agent again.",
    ]);
    expect(run.code).toBe(1);
  }, 60_000);

  it("says in one line that nothing listens where it looked, and exits 1", async () => {
    const port = await freePort();
    const run = await runAgent(`http://127.0.0.1:${port}`);
    expect(run.stderr.trim().split("\n")).toEqual([
      `Cannot reach http://127.0.0.1:${port}: is the service running, with the same PORT?`,
    ]);
    expect(run.code).toBe(1);
  }, 60_000);
});
