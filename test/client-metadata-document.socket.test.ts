import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { nodeClientMetadataTransport } from "../src/adapters/node/index.ts";
import {
  type AgentAuthOptions,
  type AgentAuthorizationCodeOptions,
  agentAuth,
  type ConsentRequest,
  MemoryGrantStore,
  MemoryReplayStore,
} from "../src/agentauth/index.ts";
import { InvalidOptionsError } from "../src/core/index.ts";
import {
  type ClientMetadataDocumentsOptions,
  ClientMetadataError,
  type ClientMetadataRequest,
  clientMetadataDocuments,
  MemoryAuthorizationCodeStore,
  MemoryClientStore,
} from "../src/oauth2/index.ts";
import {
  approvedCallback,
  authorizeUrl,
  type CodeSite,
  codeClients,
  codeSite,
  jsonConsentPage,
  LOOPBACK_REDIRECT,
  openAuthorize,
  pkce,
  postConsent,
  redeem,
  refreshRequest,
  signedInHeader,
  tokensFor,
} from "./support/code-flow.ts";

// Client metadata documents over real sockets, on 127.0.0.1 only. Host names are made up and
// resolved by an injected resolver; every address outside loopback is refused before any
// connection (the recording fetch shows it was never called), so nothing leaves this machine.

const NAME = "client-app.test";
// More hosts the certificate names, for the per-host budgets.
const OTHER_NAMES = ["second-app.test", "third-app.test", "fourth-app.test", "fifth-app.test"];
let dir: string;
let cert: string;
let key: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "cimd-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
      "-days",
      "1",
      "-subj",
      `/CN=${NAME}`,
      "-addext",
      `subjectAltName=${[NAME, ...OTHER_NAMES].map((name) => `DNS:${name}`).join(",")}`,
    ],
    { stdio: "ignore" },
  );
  cert = readFileSync(join(dir, "cert.pem"), "utf8");
  key = readFileSync(join(dir, "key.pem"), "utf8");
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Served {
  readonly port: number;
  readonly server: Server;
  readonly requests: string[];
  readonly connections: Socket[];
  close(): Promise<void>;
}

const servers: Served[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((served) => served.close()));
});

async function serve(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<Served> {
  const requests: string[] = [];
  const connections: Socket[] = [];
  const server = createServer({ cert, key }, (req, res) => {
    requests.push(`${req.headers.host} ${req.url}`);
    handler(req, res);
  });
  server.on("connection", (socket: Socket) => connections.push(socket));
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const served: Served = {
    port: (server.address() as AddressInfo).port,
    server,
    requests,
    connections,
    close: () => {
      server.closeAllConnections();
      for (const socket of connections) socket.destroy();
      return new Promise<void>((done) => server.close(() => done()));
    },
  };
  servers.push(served);
  return served;
}

const documentFor = (clientId: string, extra: Record<string, unknown> = {}) => ({
  client_id: clientId,
  client_name: "Loopback Test Client",
  redirect_uris: ["http://127.0.0.1:43123/callback"],
  token_endpoint_auth_method: "none",
  ...extra,
});

function sendJson(res: ServerResponse, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(200, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** The Node transport with the test's CA, a resolver that answers `addresses`, and a record of each fetch. */
function documentsWith(
  addresses: readonly string[],
  options: Partial<ClientMetadataDocumentsOptions> = {},
) {
  const transport = nodeClientMetadataTransport({ ca: cert });
  const fetched: ClientMetadataRequest[] = [];
  const documents = clientMetadataDocuments({
    resolve: async () => addresses,
    fetch: (request) => {
      fetched.push(request);
      // Even if the guard let another address through, no packet goes there.
      if (request.address !== "127.0.0.1")
        return Promise.reject(new Error(`the test refuses to connect to ${request.address}`));
      return transport.fetch(request);
    },
    ...options,
  });
  return { documents, fetched };
}

async function refusal(promise: Promise<unknown>): Promise<ClientMetadataError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ClientMetadataError);
    return error as ClientMetadataError;
  }
  throw new Error("expected a refusal");
}

const LOOPBACK = { allowAddresses: ["127.0.0.1"] };

describe("client metadata documents over https on loopback", () => {
  it("fetches, checks and caches a document from a server the test allows", async () => {
    const served = await serve((req, res) =>
      sendJson(res, documentFor(`https://${req.headers.host}${req.url}`), {
        "cache-control": "max-age=600",
      }),
    );
    const clientId = `https://${NAME}:${served.port}/oauth/client.json`;
    const { documents, fetched } = documentsWith(["127.0.0.1"], LOOPBACK);
    const client = await documents.resolve(clientId);
    expect(client).toEqual({
      clientId,
      name: "Loopback Test Client",
      redirectUris: ["http://127.0.0.1:43123/callback"],
      tokenEndpointAuthMethod: "none",
      grantTypes: ["authorization_code"],
      responseTypes: ["code"],
    });
    expect(served.requests).toEqual([`${NAME}:${served.port} /oauth/client.json`]);
    expect(fetched.map((request) => request.address)).toEqual(["127.0.0.1"]);
    // Cached: the second resolve sends nothing.
    expect(await documents.resolve(clientId)).toBe(client);
    expect(served.requests).toHaveLength(1);
    expect(served.connections).toHaveLength(1);
  });

  it("connects to the checked address and never resolves the name again", async () => {
    // The made-up name resolves nowhere on this machine: a transport that looked it up again
    // (and could be sent elsewhere by a changed DNS answer) would fail here.
    const served = await serve((req, res) =>
      sendJson(res, documentFor(`https://${req.headers.host}${req.url}`)),
    );
    const clientId = `https://${NAME}:${served.port}/c.json`;
    const { documents } = documentsWith(["127.0.0.1"], LOOPBACK);
    expect((await documents.resolve(clientId)).clientId).toBe(clientId);
  });

  it("verifies the certificate against the client id's host name", async () => {
    const served = await serve((req, res) =>
      sendJson(res, documentFor(`https://${req.headers.host}${req.url}`)),
    );
    const { documents } = documentsWith(["127.0.0.1"], LOOPBACK);
    const wrongName = await refusal(
      documents.resolve(`https://other-app.test:${served.port}/c.json`),
    );
    expect(wrongName.reason).toBe("fetch_failed");
    expect(String((wrongName.cause as Error).message)).toMatch(/altnames|Hostname/i);
    // Node's own roots do not know the test's self-signed certificate.
    const transport = nodeClientMetadataTransport();
    const untrusted = clientMetadataDocuments({
      resolve: async () => ["127.0.0.1"],
      fetch: transport.fetch,
      ...LOOPBACK,
    });
    const error = await refusal(untrusted.resolve(`https://${NAME}:${served.port}/c.json`));
    expect(error.reason).toBe("fetch_failed");
  });

  it.each([
    ["127.0.0.1"],
    ["127.0.0.2"],
    ["10.0.0.1"],
    ["10.20.30.40"],
    ["169.254.169.254"],
    ["::1"],
    ["::ffff:10.0.0.1"],
    ["::ffff:127.0.0.1"],
    ["fd00::1"],
    ["192.168.0.1"],
  ])("refuses a name resolving to %s before any connection", async (address) => {
    const served = await serve((_req, res) => sendJson(res, documentFor("x")));
    const { documents, fetched } = documentsWith([address]);
    const error = await refusal(documents.resolve(`https://${NAME}:${served.port}/c.json`));
    expect(error.reason).toBe("address_refused");
    expect(fetched).toEqual([]);
    expect(served.connections).toEqual([]);
  });

  it("refuses loopback literals in the client id before any connection", async () => {
    const served = await serve((_req, res) => sendJson(res, documentFor("x")));
    const { documents, fetched } = documentsWith(["127.0.0.1"]);
    for (const clientId of [
      `https://127.0.0.1:${served.port}/c.json`,
      `https://[::1]:${served.port}/c.json`,
      `https://[::ffff:7f00:1]:${served.port}/c.json`,
      `https://localhost:${served.port}/c.json`,
    ])
      expect((await refusal(documents.resolve(clientId))).reason, clientId).toMatch(
        /^(address_refused|invalid_client_id)$/,
      );
    expect(fetched).toEqual([]);
    expect(served.connections).toEqual([]);
  });

  it("refuses what the system resolver says is loopback", async () => {
    const transport = nodeClientMetadataTransport({ ca: cert });
    const system = await transport.resolve("localhost");
    expect(system.some((address) => address === "127.0.0.1" || address === "::1")).toBe(true);
    let called = false;
    const documents = clientMetadataDocuments({
      // A name of the test's making that the system resolver answers as it answers localhost.
      resolve: () => transport.resolve("localhost"),
      fetch: async () => {
        called = true;
        throw new Error("the test connects nowhere");
      },
    });
    expect((await refusal(documents.resolve(`https://${NAME}/c.json`))).reason).toBe(
      "address_refused",
    );
    expect(called).toBe(false);
  });

  it("refuses a redirect to the cloud metadata address, and follows nothing", async () => {
    const served = await serve((_req, res) => {
      res.writeHead(302, { location: "https://169.254.169.254/latest/meta-data/iam/" });
      res.end();
    });
    const { documents, fetched } = documentsWith(["127.0.0.1"], LOOPBACK);
    const error = await refusal(documents.resolve(`https://${NAME}:${served.port}/c.json`));
    expect(error.reason).toBe("redirect_refused");
    expect(fetched.map((request) => request.address)).toEqual(["127.0.0.1"]);
    expect(served.requests).toHaveLength(1);
  });

  it("refuses a 10 MB document without reading it all", async () => {
    const total = 10 * 1024 * 1024;
    let written = 0;
    let finished = false;
    let closed: Promise<void> = Promise.resolve();
    const served = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }); // no length: chunked
      closed = new Promise((done) => res.on("close", () => done()));
      res.on("finish", () => {
        finished = true;
      });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = () => {
        while (written < total && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) {
            res.once("drain", pump);
            return;
          }
        }
        if (written >= total) res.end();
      };
      pump();
    });
    const { documents } = documentsWith(["127.0.0.1"], LOOPBACK);
    const error = await refusal(documents.resolve(`https://${NAME}:${served.port}/big.json`));
    expect(error.reason).toBe("too_large");
    await closed;
    expect(finished).toBe(false);
    expect(written).toBeLessThan(1024 * 1024);
  });

  it("refuses a declared 10 MB document", async () => {
    const served = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "10485760" });
      res.write(Buffer.alloc(1024, 0x20));
    });
    const { documents } = documentsWith(["127.0.0.1"], LOOPBACK);
    const error = await refusal(documents.resolve(`https://${NAME}:${served.port}/big.json`));
    expect(error.reason).toBe("too_large");
  });

  it("gives up on a server that stalls, and closes the connection", async () => {
    let gone: Promise<void> = Promise.resolve();
    const served = await serve((req) => {
      // Headers never come.
      gone = new Promise((done) => req.socket.on("close", () => done()));
    });
    const { documents } = documentsWith(["127.0.0.1"], { ...LOOPBACK, timeoutMs: 300 });
    const error = await refusal(documents.resolve(`https://${NAME}:${served.port}/slow.json`));
    expect(error.reason).toBe("timeout");
    await gone;
    // Headers, then a body that stops half-way.
    const trickle = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"client_id":');
    });
    const error2 = await refusal(documents.resolve(`https://${NAME}:${trickle.port}/trickle.json`));
    expect(error2.reason).toBe("timeout");
  });

  it("refuses a document for another client id, of another type, or not JSON", async () => {
    const served = await serve((req, res) => {
      if (req.url === "/other.json") sendJson(res, documentFor("https://evil.example/other.json"));
      else if (req.url === "/html.json") {
        res.writeHead(200, { "content-type": "text/html" });
        res.end(JSON.stringify(documentFor(`https://${req.headers.host}${req.url}`)));
      } else {
        res.writeHead(200, { "content-type": "application/json" });
        res.end("<html>not json</html>");
      }
    });
    const { documents } = documentsWith(["127.0.0.1"], LOOPBACK);
    const base = `https://${NAME}:${served.port}`;
    expect((await refusal(documents.resolve(`${base}/other.json`))).reason).toBe(
      "client_id_mismatch",
    );
    expect((await refusal(documents.resolve(`${base}/html.json`))).reason).toBe(
      "invalid_content_type",
    );
    expect((await refusal(documents.resolve(`${base}/junk.json`))).reason).toBe("invalid_document");
  });
});

// The documents behind the endpoints: the authorization endpoint a signed-in person opens, and
// the token and device-authorization endpoints anyone may post to. The document server counts
// every request it is sent.

/**
 * A document server: `/stall/…` never answers, `/slow/<ms>/…` answers after ms, `/missing/…`
 * is 404, `/codes-only/…` lists no refresh_token grant; `changes` changes a path's answer
 * (`"missing"`, or a delay in ms) while the test runs.
 */
async function documentServer(changes = new Map<string, "missing" | number>()) {
  const served = await serve((req, res) => {
    const path = req.url ?? "/";
    const change = changes.get(path);
    const send = () => {
      if (path.startsWith("/missing/") || change === "missing") {
        res.writeHead(404, { "content-type": "text/plain" });
        res.end("no such client");
        return;
      }
      sendJson(
        res,
        documentFor(`https://${req.headers.host}${path}`, {
          redirect_uris: [LOOPBACK_REDIRECT],
          ...(path.startsWith("/codes-only/")
            ? {}
            : { grant_types: ["authorization_code", "refresh_token"] }),
        }),
      );
    };
    if (path.startsWith("/stall/")) return;
    const ms = typeof change === "number" ? change : /^\/slow\/([0-9]+)\//.exec(path)?.[1];
    if (ms === undefined) return send();
    const timer = setTimeout(send, Number(ms));
    res.on("close", () => clearTimeout(timer));
  });
  return Object.assign(served, { changes });
}

/** A site with the authorization-code grant, documents fetched from the test's server. */
async function siteWithDocuments(
  options: Partial<ClientMetadataDocumentsOptions> = {},
  code: Partial<AgentAuthorizationCodeOptions> = {},
  agent: Partial<AgentAuthOptions> = {},
) {
  const { documents, fetched } = documentsWith(["127.0.0.1"], { ...LOOPBACK, ...options });
  const consents: ConsentRequest[] = [];
  const site = await codeSite({
    authorizationCode: {
      consentPage: jsonConsentPage(consents),
      signedInAt: signedInHeader,
      signInPath: "/login",
      clientMetadataDocuments: documents,
      ...code,
    },
    ...agent,
  });
  sites.push(site);
  return { site, documents, fetched, consents };
}

const sites: CodeSite[] = [];
afterEach(async () => {
  await Promise.all(sites.splice(0).map((site) => site.close()));
});

/** The consent page (or what answered instead) for `clientId`, opened by a signed-in person. */
async function openConsent(site: CodeSite, clientId: string, challenge: string) {
  return openAuthorize(site, authorizeUrl(site, { clientId, challenge }));
}

/** A 503 page for the person: HTML, never JSON, and it says to try again. */
async function expectTryAgainPage(response: Response) {
  expect(response.status).toBe(503);
  expect(response.headers.get("content-type")).toMatch(/^text\/html/);
  expect(response.headers.get("retry-after")).toMatch(/^[0-9]+$/);
  expect(await response.text()).toMatch(/try again/i);
}

/** The status and RFC 6749 `error` of a token endpoint's refusal. */
async function oauthAnswer(response: Response) {
  const { error } = (await response.json()) as { error: string };
  return { status: response.status, error };
}

/** Anonymous posts naming `clientId` at the token and device-authorization endpoints, in turn. */
function anonymousPost(site: CodeSite, clientId: string, i: number): Promise<Response> {
  const token = site.as.token_endpoint as string;
  const post = (url: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(form).toString(),
    });
  switch (i % 6) {
    case 0:
      return post(token, { grant_type: "client_credentials", client_id: clientId });
    case 1:
      return post(
        token,
        { grant_type: "client_credentials" },
        {
          authorization: `Basic ${btoa(`${encodeURIComponent(clientId)}:a-secret-of-some-length`)}`,
        },
      );
    case 2:
      return post(token, {
        grant_type: "authorization_code",
        client_id: clientId,
        code: `made-up-${i}`,
        redirect_uri: LOOPBACK_REDIRECT,
        code_verifier: "v".repeat(43),
      });
    case 3:
      return post(token, {
        grant_type: "urn:ietf:params:oauth:grant-type:device_code",
        client_id: clientId,
        device_code: `made-up-${i}`,
      });
    case 4:
      return post(token, {
        grant_type: "refresh_token",
        client_id: clientId,
        refresh_token: `made-up-${i}`,
      });
    default:
      return post(site.as.device_authorization_endpoint as string, {
        client_id: clientId,
        scope: "read_notes",
      });
  }
}

describe("client metadata documents behind the endpoints", () => {
  it("fetches nothing for 200 anonymous token and device requests, while a person's consent goes through", async () => {
    const served = await documentServer();
    const { site, fetched } = await siteWithDocuments();
    const { challenge } = await pkce();
    const flood = Array.from({ length: 200 }, (_, i) =>
      anonymousPost(site, `https://${NAME}:${served.port}/stall/flood-${i}.json`, i),
    );
    // The person comes while the flood is under way.
    await new Promise((settle) => setTimeout(settle, 300));
    const shown = await openConsent(site, `https://${NAME}:${served.port}/real.json`, challenge);
    const answers = await Promise.all(flood);
    expect(shown.status).toBe(200);
    expect(((await shown.json()) as ConsentRequest).clientName).toBe("Loopback Test Client");
    const outcomes = new Map<string, number>();
    for (const answer of answers) {
      const { error } = (await answer.json()) as { error: string };
      const key = `${answer.status} ${error}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
    // Each refused in RFC 6749's shape for what it is, and none for want of a fetch.
    expect(Object.fromEntries(outcomes)).toEqual({
      "400 unauthorized_client": 100,
      "401 invalid_client": 34,
      "400 invalid_grant": 66,
    });
    // The one fetch is the person's.
    expect(served.requests).toEqual([`${NAME}:${served.port} /real.json`]);
    expect(fetched).toHaveLength(1);
  });

  it("never fetches for an authorization request nobody signed in to", async () => {
    const served = await documentServer();
    const { site, fetched } = await siteWithDocuments();
    const { challenge } = await pkce();
    const url = authorizeUrl(site, {
      clientId: `https://${NAME}:${served.port}/real.json`,
      challenge,
    });
    const answer = await openAuthorize(site, url, { human: undefined });
    expect(answer.status).toBe(303);
    expect(new URL(answer.headers.get("location") as string, site.base).pathname).toBe("/login");
    expect(fetched).toEqual([]);
    expect(served.requests).toEqual([]);
  });

  it("fetches for nobody's prompt=none only from the anonymous share", async () => {
    const served = await documentServer();
    const { site, fetched } = await siteWithDocuments();
    const { challenge } = await pkce();
    // prompt=none needs the client's redirect URIs to answer login_required: a lookup for nobody.
    const answered: Response[] = [];
    const stalled = Array.from({ length: 12 }, (_, i) => {
      const url = authorizeUrl(site, {
        clientId: `https://${OTHER_NAMES[i % 4]}:${served.port}/stall/${i}.json`,
        challenge,
      });
      url.searchParams.set("prompt", "none");
      return openAuthorize(site, url, { human: undefined }).then((answer) => answered.push(answer));
    });
    // Eight take the anonymous share; four are told at once to try again.
    await vi.waitFor(() => expect(answered).toHaveLength(4), { timeout: 4000 });
    for (const answer of answered) await expectTryAgainPage(answer);
    expect(fetched).toHaveLength(8);
    const shown = await openConsent(site, `https://${NAME}:${served.port}/real.json`, challenge);
    expect(shown.status).toBe(200);
    expect(fetched).toHaveLength(9);
    await served.close();
    await Promise.all(stalled);
  });

  it("keeps a share of the fetches for signed-in people that other lookups cannot take", async () => {
    const served = await documentServer();
    let clock = Date.now();
    const { site, documents, fetched } = await siteWithDocuments({ now: () => clock });
    const { challenge } = await pkce();
    // Anonymous lookups (the default) of documents that never come, over four hosts.
    const reasons: string[] = [];
    for (let i = 0; i < 16; i++)
      documents
        .resolve(`https://${OTHER_NAMES[i % 4]}:${served.port}/stall/${i}.json`)
        .catch((error: ClientMetadataError) => reasons.push(error.reason));
    // Half the fetches at most go to anonymous lookups; the rest were refused at once.
    await vi.waitFor(() => expect(fetched).toHaveLength(8));
    expect(reasons).toEqual(Array(8).fill("busy"));
    const shown = await openConsent(site, `https://${NAME}:${served.port}/real.json`, challenge);
    expect(shown.status).toBe(200);
    expect(fetched).toHaveLength(9);
    // The answer reads the document again once it left the cache, as the person's too.
    clock += 301_000;
    const consent = (await shown.json()) as ConsentRequest;
    const answer = await postConsent(site, { consent: consent.consentToken, action: "approve" });
    expect(answer.status).toBe(303);
    expect(fetched).toHaveLength(10);
    await served.close();
  });

  it("shares one fetch among concurrent consents for one client, and shows every one of them", async () => {
    const served = await documentServer();
    const { site, fetched } = await siteWithDocuments();
    const { challenge } = await pkce();
    const clientId = `https://${NAME}:${served.port}/slow/1200/shared.json`;
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => openConsent(site, clientId, challenge)),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
    expect(fetched).toHaveLength(1);
    expect(served.requests).toHaveLength(1);
  });

  it("shows the consent page for a document that takes 1.2 s", async () => {
    const served = await documentServer();
    const { site } = await siteWithDocuments();
    const { challenge } = await pkce();
    const answer = await openConsent(
      site,
      `https://${NAME}:${served.port}/slow/1200/client.json`,
      challenge,
    );
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as ConsentRequest).clientId).toContain("/slow/1200/");
  });

  it("shows a page to try again when the document misses its time, and remembers the miss", async () => {
    const served = await documentServer();
    const { site, fetched } = await siteWithDocuments();
    const { challenge } = await pkce();
    const clientId = `https://${NAME}:${served.port}/slow/6000/client.json`;
    const started = Date.now();
    await expectTryAgainPage(await openConsent(site, clientId, challenge));
    expect(Date.now() - started).toBeGreaterThanOrEqual(4900);
    // Remembered for failureTtlSeconds: the next try is answered with no fetch.
    await expectTryAgainPage(await openConsent(site, clientId, challenge));
    expect(fetched).toHaveLength(1);
  });

  it("remembers a refused document, so a reload costs no fetch", async () => {
    const served = await documentServer();
    const { site, fetched } = await siteWithDocuments();
    const { challenge } = await pkce();
    const clientId = `https://${NAME}:${served.port}/missing/client.json`;
    for (let i = 0; i < 3; i++) {
      const answer = await openConsent(site, clientId, challenge);
      expect(answer.status).toBe(400);
      expect(answer.headers.get("content-type")).toMatch(/^text\/html/);
    }
    expect(fetched).toHaveLength(1);
    expect(served.requests).toHaveLength(1);
  });

  it("fetches at most four documents from one host at once; other hosts still go through", async () => {
    const served = await documentServer();
    const { site, fetched } = await siteWithDocuments();
    const { challenge } = await pkce();
    const answered: Response[] = [];
    const stalled = Array.from({ length: 6 }, (_, i) =>
      openConsent(site, `https://${NAME}:${served.port}/stall/${i}.json`, challenge).then(
        (answer) => answered.push(answer),
      ),
    );
    // Two over the host's budget are told at once to try again; four wait on their fetch.
    await vi.waitFor(() => expect(answered).toHaveLength(2), { timeout: 4000 });
    for (const answer of answered) await expectTryAgainPage(answer);
    expect(fetched).toHaveLength(4);
    const other = await openConsent(
      site,
      `https://${OTHER_NAMES[0]}:${served.port}/real.json`,
      challenge,
    );
    expect(other.status).toBe(200);
    expect(answered).toHaveLength(2);
    await served.close();
    await Promise.all(stalled);
  });

  it("fetches for a code's redemption only once the code is found, from the cache when it can", async () => {
    const served = await documentServer();
    let clock = Date.now();
    const { site, fetched } = await siteWithDocuments({ now: () => clock });
    const clientId = `https://${NAME}:${served.port}/real.json`;
    const first = await tokensFor(site, { clientId });
    expect(first.access_token).toBeTypeOf("string");
    expect(fetched).toHaveLength(1);
    // The document expired from the cache: the redemption fetches it again, once.
    const { verifier, challenge } = await pkce();
    const callback = await approvedCallback(site, { clientId, challenge });
    expect(fetched).toHaveLength(1);
    clock += 301_000;
    const redeemed = await redeem(site, callback, verifier, { clientId });
    expect(redeemed.status).toBe(200);
    expect(fetched).toHaveLength(2);
    // A refresh reads the cached document; a made-up refresh token reads nothing.
    const refreshed = await refreshRequest(site, first.refresh_token as string, { clientId });
    expect(refreshed.status).toBe(200);
    expect(fetched).toHaveLength(2);
  });

  it("refuses the redemption of a document client whose document can no longer be used", async () => {
    const served = await documentServer();
    let clock = Date.now();
    const { site, fetched } = await siteWithDocuments({ now: () => clock });
    const clientId = `https://${NAME}:${served.port}/real.json`;
    const { verifier, challenge } = await pkce();
    const callback = await approvedCallback(site, { clientId, challenge });
    clock += 301_000;
    served.changes.set("/real.json", "missing");
    const refused = await redeem(site, callback, verifier, { clientId });
    expect(await oauthAnswer(refused)).toEqual({ status: 401, error: "invalid_client" });
    expect(fetched).toHaveLength(2);
  });

  it("answers 503 when a redemption's document misses its time, and refuses what the document does not list", async () => {
    const served = await documentServer();
    let clock = Date.now();
    const { site } = await siteWithDocuments({ now: () => clock, timeoutMs: 1000 });
    const clientId = `https://${NAME}:${served.port}/real.json`;
    const { verifier, challenge } = await pkce();
    const callback = await approvedCallback(site, { clientId, challenge });
    clock += 301_000;
    served.changes.set("/real.json", 3000);
    const late = await redeem(site, callback, verifier, { clientId });
    expect(await oauthAnswer(late)).toEqual({ status: 503, error: "temporarily_unavailable" });
    // A document without the refresh_token grant: its client's refresh is refused.
    const codesOnly = `https://${NAME}:${served.port}/codes-only/client.json`;
    const tokens = await tokensFor(site, { clientId: codesOnly });
    const refresh = await refreshRequest(site, tokens.refresh_token as string, {
      clientId: codesOnly,
    });
    expect(await oauthAnswer(refresh)).toEqual({ status: 400, error: "unauthorized_client" });
  });
});

describe("the authorization endpoint's one deadline", () => {
  it("shows the application's error page with status 503 when the request runs out of time", async () => {
    const seen: { error: string; status: number }[] = [];
    const { site } = await siteWithDocuments(
      { timeoutMs: 1000 },
      {
        requestTimeoutMs: 1500,
        consentPage: () => new Promise<Response>(() => {}),
        errorPage: (_request, { error, description, status }) => {
          seen.push({ error, status });
          return new Response(`<!doctype html><p>${description}</p>`, {
            status,
            headers: { "content-type": "text/html; charset=utf-8" },
          });
        },
      },
    );
    const { challenge } = await pkce();
    const started = Date.now();
    const answer = await openAuthorize(site, authorizeUrl(site, { challenge }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    await expectTryAgainPage(answer);
    expect(seen).toEqual([{ error: "temporarily_unavailable", status: 503 }]);
    expect(answer.headers.get("x-frame-options")).toBe("DENY");
  });

  it.each([
    ["the client is looked up again", "the consent is not spent"],
    ["the consent is spent", "no grant is made"],
    ["the grant is made", "no code is made"],
  ])(
    "starts nothing once the deadline has passed: when it passes while %s, %s",
    async (slowStep) => {
      // One store step takes 1.5 s: within its own timeout, but past the request's deadline.
      let slow = false;
      const later = () => new Promise((settle) => setTimeout(settle, slow ? 1500 : 0));
      const registered = await codeClients();
      const codes = new MemoryAuthorizationCodeStore();
      const replay = new MemoryReplayStore();
      const grants = new MemoryGrantStore();
      const approve = grants.approve.bind(grants);
      grants.approve = async (...args) => {
        if (slowStep === "the grant is made") await later();
        return approve(...args);
      };
      const stores = {
        authorizationCodes: codes,
        grants,
        replay: {
          setIfAbsent: async (...args: Parameters<typeof replay.setIfAbsent>) => {
            if (slowStep === "the consent is spent" && args[0].startsWith("consent:"))
              await later();
            return replay.setIfAbsent(...args);
          },
        },
      };
      const clients = {
        get: async (clientId: string) => {
          if (slowStep === "the client is looked up again") await later();
          return registered.get(clientId);
        },
      };
      const { site } = await siteWithDocuments(
        { timeoutMs: 1000 },
        { requestTimeoutMs: 1200 },
        { storeTimeoutMs: 3000, stores, clients },
      );
      const { challenge } = await pkce();
      const shown = await openAuthorize(site, authorizeUrl(site, { challenge }));
      const consent = (await shown.json()) as ConsentRequest;
      slow = true;
      const answer = await postConsent(site, { consent: consent.consentToken, action: "approve" });
      await expectTryAgainPage(answer);
      // The slow step finishes after the page was sent; nothing after it starts.
      await new Promise((settle) => setTimeout(settle, 800));
      expect(codes.size).toBe(0);
      expect(await site.agents.grantsApprovedBy("alice")).toHaveLength(
        slowStep === "the grant is made" ? 1 : 0,
      );
      // A consent not spent can be answered again, and now goes through.
      slow = false;
      const again = await postConsent(site, { consent: consent.consentToken, action: "approve" });
      expect(again.status).toBe(slowStep === "the client is looked up again" ? 303 : 400);
    },
  );

  it("must leave room for the document's own time", async () => {
    const documents = clientMetadataDocuments({
      resolve: async () => [],
      fetch: async () => new Response(),
      timeoutMs: 8000,
    });
    const options = (code: Partial<AgentAuthorizationCodeOptions>) => ({
      issuer: "https://auth.example",
      clients: new MemoryClientStore(),
      capabilities: [{ name: "echo", description: "Echoes.", handler: () => ({}) }],
      authorizationCode: {
        consentPage: () => new Response(),
        signedInAt: () => undefined,
        signInPath: "/login",
        clientMetadataDocuments: documents,
        ...code,
      },
    });
    await expect(agentAuth(options({ requestTimeoutMs: 8000 }))).rejects.toThrow(
      /requestTimeoutMs \(8000\) must be longer/,
    );
    await expect(agentAuth(options({ requestTimeoutMs: 0 }))).rejects.toThrow(InvalidOptionsError);
    // The default leaves 5 s beyond a long document time.
    await expect(agentAuth(options({}))).resolves.toBeDefined();
    await expect(
      agentAuth(options({ clientMetadataDocuments: { resolve: documents.resolve } as never })),
    ).rejects.toThrow(/must come from clientMetadataDocuments/);
  });
});
