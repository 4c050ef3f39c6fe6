/**
 * A body that breaks off while a leg or endpoint reads it, as Bun, Deno and
 * Workers hand it over: a Request whose body stream errors. Always the
 * client's doing: 400 in the protocol's shape, nothing reported.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { agentAuth } from "../src/agentauth/agent-auth.ts";
import { authz, login, newChain, passwordCredentials, sessions } from "../src/index.ts";
import { generateKeySet } from "../src/jwt/keys.ts";
import { authorizationServer } from "../src/oauth2/authorization-server.ts";
import { MemoryClientStore } from "../src/oauth2/clients.ts";
import { DeviceAuthorizationService } from "../src/oauth2/device-authorization.ts";
import { LIMITS } from "./support/grants.ts";
import { plainTextEncoder } from "./support/plain-text-encoder.ts";

afterEach(() => vi.restoreAllMocks());

/** How runtimes say a body broke off: undici, Workers, an abort. */
const FAILURES: [string, () => unknown][] = [
  ["TypeError", () => new TypeError("terminated")],
  ["Error", () => new Error("Network connection lost.")],
  ["AbortError", () => new DOMException("The operation was aborted.", "AbortError")],
];

/** A body that delivers `first`, then errors with `failure()`. */
function breaksOff(first: string, failure: () => unknown): ReadableStream<Uint8Array> {
  let pulls = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulls++ === 0) controller.enqueue(new TextEncoder().encode(first));
      else controller.error(failure());
    },
  });
}

function post(url: string, type: string, body: ReadableStream<Uint8Array>, headers = {}): Request {
  return new Request(url, {
    method: "POST",
    headers: { "content-type": type, ...headers },
    body,
    duplex: "half",
  } as RequestInit);
}

const FORM = "application/x-www-form-urlencoded";

function watchReports() {
  const onError = vi.fn();
  const consoleError = vi.spyOn(console, "error").mockImplementation(() => {});
  return {
    onError,
    expectNone() {
      expect(onError).not.toHaveBeenCalled();
      expect(consoleError).not.toHaveBeenCalled();
    },
  };
}

async function expectProblem400(response: Response): Promise<void> {
  expect(response.status).toBe(400);
  expect(response.headers.get("content-type")).toBe("application/problem+json");
  const text = await response.text();
  expect(JSON.parse(text)).toMatchObject({ status: 400 });
  expect(text).not.toMatch(/ at |terminated|connection lost|aborted/);
}

describe.each(FAILURES)("a body that breaks off with a %s", (_name, failure) => {
  async function chainApp(onError: (error: unknown) => void) {
    const chain = newChain({
      session: sessions({ secure: false }),
      login: login({
        credentials: passwordCredentials({
          findUser: () => undefined,
          passwordEncoder: plainTextEncoder(),
        }),
      }),
      authorization: authz.routes([authz.anyRequest().permitAll()]),
      onError,
    });
    const handler = chain.wrap(() => new Response("app"));
    const issued = await handler(new Request("http://app.test/csrf"));
    const cookie = (issued.headers.getSetCookie()[0] ?? "").split(";")[0] as string;
    const { token } = (await issued.json()) as { token: string };
    return { handler, cookie, token };
  }

  it("while CSRF reads the form's token: 400, nothing reported", async () => {
    const reports = watchReports();
    const { handler, cookie } = await chainApp(reports.onError);
    const response = await handler(
      post("http://app.test/notes", FORM, breaksOff("_csrf=abc&te", failure), { cookie }),
    );
    await expectProblem400(response);
    reports.expectNone();
  });

  it("while CSRF looks for a _method field in a safe method's form: 400", async () => {
    const reports = watchReports();
    const { handler, cookie } = await chainApp(reports.onError);
    const request = new Request("http://app.test/notes", {
      method: "OPTIONS",
      headers: { "content-type": FORM, cookie },
      body: breaksOff("_meth", failure),
      duplex: "half",
    } as RequestInit);
    await expectProblem400(await handler(request));
    reports.expectNone();
  });

  it("while login reads the credentials: 400, nothing reported", async () => {
    const reports = watchReports();
    const { handler, cookie, token } = await chainApp(reports.onError);
    const response = await handler(
      post("http://app.test/login", FORM, breaksOff("username=a&pass", failure), {
        cookie,
        "x-csrf-token": token,
      }),
    );
    await expectProblem400(response);
    reports.expectNone();
  });

  it("while authz reads a _method form field, mounted on its own: 400", async () => {
    const guard = authz.routes([authz.anyRequest().permitAll()]);
    const response = await guard(async () => new Response("app"))(
      post("http://app.test/notes", FORM, breaksOff("_method=DEL", failure)),
    );
    await expectProblem400(response);
  });

  it("at the OAuth token endpoint: 400 invalid_request", async () => {
    const reports = watchReports();
    const clients = new MemoryClientStore();
    await clients.register({ clientId: "agent-1", secret: "s3cret-s3cret-s3cret" });
    const server = authorizationServer({
      issuer: "https://auth.test",
      service: new DeviceAuthorizationService({ verificationUri: "https://auth.test/device" }),
      clients,
      scopes: ["read"],
      issueAccessToken: async () => ({ accessToken: "t", expiresIn: 60 }),
      onError: reports.onError,
    });
    for (const path of ["/oauth/token", "/oauth/device_authorization"]) {
      const response = await server.route(
        post(`https://auth.test${path}`, FORM, breaksOff("client_id=agent-1&gr", failure)),
      );
      expect(response?.status).toBe(400);
      await expect(response?.json()).resolves.toMatchObject({ error: "invalid_request" });
    }
    reports.expectNone();
  });

  it("at capability execute: 400 invalid_request in the agent shape", async () => {
    const reports = watchReports();
    const agents = await agentAuth({
      issuer: "https://agents.test",
      capabilities: [{ name: "echo", description: "Echoes.", handler: (args) => args }],
      clients: new MemoryClientStore(),
      keys: await generateKeySet(),
      onError: reports.onError,
    });
    const now = Date.now();
    await agents.runtime.grants.approve(
      {
        grantId: "g-1",
        principalId: "agent-1",
        status: "active",
        capabilities: ["echo"],
        approvedBy: "alice",
        createdAt: now,
        expiresAt: now + 60_000,
      },
      LIMITS,
    );
    const { token } = await agents.runtime.tokens.mint({
      principalId: "agent-1",
      grantId: "g-1",
      capabilities: ["echo"],
    });
    const response = await agents.execute(
      post(
        "https://agents.test/capability/execute",
        "application/json",
        breaksOff('{"capability":"ec', failure),
        { authorization: `Bearer ${token}` },
      ),
    );
    expect(response.status).toBe(400);
    await expect(response.json()).resolves.toMatchObject({ error: "invalid_request" });
    reports.expectNone();
  });
});
