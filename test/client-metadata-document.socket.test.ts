import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { nodeClientMetadataTransport } from "../src/adapters/node/index.ts";
import {
  type ClientMetadataDocumentsOptions,
  ClientMetadataError,
  type ClientMetadataRequest,
  clientMetadataDocuments,
} from "../src/oauth2/index.ts";

// Client metadata documents over real sockets, on 127.0.0.1 only. Host names are made up and
// resolved by an injected resolver; every address outside loopback is refused before any
// connection (the recording fetch shows it was never called), so nothing leaves this machine.

const NAME = "client-app.test";
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
      `subjectAltName=DNS:${NAME}`,
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
