import { describe, expect, it } from "vitest";
import { ClientMetadataError, InvalidOptionsError } from "../core/errors.ts";
import {
  type ClientMetadataDocumentsOptions,
  type ClientMetadataRequest,
  checkClientMetadata,
  clientMetadataDocuments,
  parseClientIdUrl,
} from "./client-metadata-document.ts";

// No test here opens a socket: the resolver and the fetch are injected, and each test sees
// what the fetch was asked for (or that it was never called).

const ID = "https://app.example.com/oauth/client.json";

function doc(extra: Record<string, unknown> = {}) {
  return {
    client_id: ID,
    client_name: "Example App",
    redirect_uris: ["http://127.0.0.1:33418/callback", "https://app.example.com/callback"],
    token_endpoint_auth_method: "none",
    ...extra,
  };
}

function json(body: unknown, init: ResponseInit = {}): Response {
  return new Response(JSON.stringify(body), {
    status: 200,
    headers: { "content-type": "application/json" },
    ...init,
  });
}

function setup(
  answer: (request: ClientMetadataRequest) => Response | Promise<Response> = () => json(doc()),
  addresses: readonly string[] = ["93.184.215.14"],
  options: Partial<ClientMetadataDocumentsOptions> = {},
) {
  const fetched: ClientMetadataRequest[] = [];
  const resolved: string[] = [];
  let clock = 1_000_000;
  const documents = clientMetadataDocuments({
    resolve: async (host) => {
      resolved.push(host);
      return addresses;
    },
    fetch: async (request) => {
      fetched.push(request);
      return answer(request);
    },
    now: () => clock,
    ...options,
  });
  return {
    documents,
    fetched,
    resolved,
    advance: (seconds: number) => {
      clock += seconds * 1000;
    },
  };
}

async function reason(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ClientMetadataError);
    expect((error as ClientMetadataError).code).toBe("ERR_CLIENT_METADATA");
    return (error as ClientMetadataError).reason;
  }
  throw new Error("expected a refusal");
}

describe("client id URLs", () => {
  it.each([
    ["http://app.example.com/client.json", "plain http"],
    ["HTTPS://app.example.com/client.json", "upper-case scheme"],
    ["https://app.example.com", "no path"],
    ["https://app.example.com/", "the root path"],
    ["https://app.example.com/client.json#x", "a fragment"],
    ["https://app.example.com/client.json#", "an empty fragment"],
    ["https://user:pw@app.example.com/client.json", "credentials"],
    ["https://user@app.example.com/client.json", "a user name"],
    ["https://app.example.com/a/../client.json", "a dot-dot segment"],
    ["https://app.example.com/./client.json", "a dot segment"],
    ["https://app.example.com/a/%2e%2e/client.json", "an encoded dot-dot segment"],
    ["https://App.Example.com/client.json", "a host not in canonical case"],
    ["https://app.example.com:443/client.json", "the default port written out"],
    ["https://app.example.com/client json", "a space"],
    ["https://bücher.example/client.json", "non-ASCII"],
    ["https://localhost/client.json", "localhost"],
    ["https://api.localhost/client.json", "a .localhost name"],
    ["https://app.example.com./client.json", "a trailing dot"],
    [`https://app.example.com/${"a".repeat(1100)}`, "an over-long id"],
    ["urn:example:client", "no URL"],
    ["tv-app", "a registered client's id"],
  ])("refuses %s (%s) without resolving or fetching", async (clientId) => {
    const { documents, fetched, resolved } = setup();
    expect(await reason(documents.resolve(clientId))).toBe("invalid_client_id");
    expect(resolved).toEqual([]);
    expect(fetched).toEqual([]);
  });

  it("takes an https URL with a path, a port and a query", () => {
    expect(parseClientIdUrl("https://app.example.com:8443/c.json?v=2").port).toBe("8443");
  });
});

describe("the address guard", () => {
  it.each([
    ["127.0.0.1"],
    ["10.0.0.7"],
    ["10.255.0.1"],
    ["169.254.169.254"],
    ["::1"],
    ["::ffff:10.0.0.1"],
    ["::ffff:127.0.0.1"],
    ["fd00::1"],
    ["fe80::1"],
    ["100.64.0.1"],
    ["0.0.0.0"],
    ["224.0.0.1"],
  ])("refuses a name that resolves to %s before any connection", async (address) => {
    const { documents, fetched, resolved } = setup(undefined, [address]);
    expect(await reason(documents.resolve(ID))).toBe("address_refused");
    expect(resolved).toEqual(["app.example.com"]);
    expect(fetched).toEqual([]);
  });

  it("refuses a name with one public and one private address", async () => {
    const { documents, fetched } = setup(undefined, ["93.184.215.14", "10.0.0.1"]);
    expect(await reason(documents.resolve(ID))).toBe("address_refused");
    expect(fetched).toEqual([]);
  });

  it.each([
    "https://127.0.0.1/client.json",
    "https://169.254.169.254/latest/meta-data",
    "https://10.0.0.1:8443/client.json",
    "https://[::1]/client.json",
    "https://[::ffff:a00:1]/client.json",
    "https://[fe80::1]/client.json",
  ])("refuses the literal %s without resolving", async (clientId) => {
    const { documents, fetched, resolved } = setup();
    expect(await reason(documents.resolve(clientId))).toBe("address_refused");
    expect(resolved).toEqual([]);
    expect(fetched).toEqual([]);
  });

  it("refuses an unresolvable name, and one whose resolver fails", async () => {
    expect(await reason(setup(undefined, []).documents.resolve(ID))).toBe("unresolvable");
    const failing = clientMetadataDocuments({
      resolve: () => Promise.reject(new Error("ENOTFOUND")),
      fetch: () => Promise.reject(new Error("never")),
    });
    expect(await reason(failing.resolve(ID))).toBe("unresolvable");
  });

  it("fetches from the checked address, with the URL for TLS and Host", async () => {
    const { documents, fetched } = setup(undefined, ["93.184.215.14", "2606:2800:21f:cb07::1"]);
    const client = await documents.resolve(ID);
    expect(client.clientId).toBe(ID);
    expect(fetched).toHaveLength(1);
    expect(fetched[0]?.url).toBe(ID);
    expect(fetched[0]?.address).toBe("93.184.215.14");
    expect(fetched[0]?.headers).toEqual({ accept: "application/json" });
    expect(fetched[0]?.signal).toBeInstanceOf(AbortSignal);
  });

  it("fetches from a public literal without resolving, IPv6 without brackets", async () => {
    const clientId = "https://[2606:4700:4700::1111]/client.json";
    const { documents, fetched, resolved } = setup((request) =>
      json(doc({ client_id: request.url })),
    );
    expect((await documents.resolve(clientId)).clientId).toBe(clientId);
    expect(resolved).toEqual([]);
    expect(fetched.map((request) => request.address)).toEqual(["2606:4700:4700::1111"]);
  });

  it("lets an allowed address through, and only that one", async () => {
    const allowed = { allowAddresses: ["10.1.2.0/24"] };
    expect(await setup(undefined, ["10.1.2.3"], allowed).documents.resolve(ID)).toMatchObject({
      clientId: ID,
    });
    expect(await reason(setup(undefined, ["10.1.3.3"], allowed).documents.resolve(ID))).toBe(
      "address_refused",
    );
  });
});

describe("the fetch", () => {
  it("refuses a redirect, wherever it points, and follows none", async () => {
    const { documents, fetched } = setup(
      () =>
        new Response(null, {
          status: 302,
          headers: { location: "https://169.254.169.254/latest/meta-data/" },
        }),
    );
    expect(await reason(documents.resolve(ID))).toBe("redirect_refused");
    expect(fetched).toHaveLength(1);
    const opaque = setup(() => {
      const response = new Response(null, { status: 200 });
      Object.defineProperty(response, "type", { value: "opaqueredirect" });
      return response;
    });
    expect(await reason(opaque.documents.resolve(ID))).toBe("redirect_refused");
  });

  it("refuses an error status, a wrong content type, non-JSON, a JSON array", async () => {
    expect(await reason(setup(() => json(doc(), { status: 404 })).documents.resolve(ID))).toBe(
      "fetch_failed",
    );
    const html = () =>
      new Response(JSON.stringify(doc()), { headers: { "content-type": "text/html" } });
    expect(await reason(setup(html).documents.resolve(ID))).toBe("invalid_content_type");
    expect(await reason(setup(() => new Response(new Uint8Array(2))).documents.resolve(ID))).toBe(
      "invalid_content_type",
    );
    const notJson = () =>
      new Response("{client_id:", { headers: { "content-type": "application/json" } });
    expect(await reason(setup(notJson).documents.resolve(ID))).toBe("invalid_document");
    const badUtf8 = () =>
      new Response(new Uint8Array([0x22, 0xff, 0x22]), {
        headers: { "content-type": "application/json" },
      });
    expect(await reason(setup(badUtf8).documents.resolve(ID))).toBe("invalid_document");
    expect(await reason(setup(() => json([doc()])).documents.resolve(ID))).toBe("invalid_document");
  });

  it("takes application/<something>+json with parameters", async () => {
    const typed = () =>
      new Response(JSON.stringify(doc()), {
        headers: { "content-type": "Application/Client-Metadata+JSON; charset=utf-8" },
      });
    expect((await setup(typed).documents.resolve(ID)).name).toBe("Example App");
  });

  it("refuses a document over the size bound, by its length or while reading", async () => {
    const padded = doc({ padding: "x".repeat(6000) });
    expect(await reason(setup(() => json(padded)).documents.resolve(ID))).toBe("too_large");
    // A declared length over the bound: refused before a byte is read.
    let pulled = 0;
    const declared = () =>
      new Response(
        new ReadableStream({
          pull(controller) {
            pulled++;
            controller.enqueue(new Uint8Array(1024));
          },
        }),
        { headers: { "content-type": "application/json", "content-length": "10485760" } },
      );
    expect(await reason(setup(declared).documents.resolve(ID))).toBe("too_large");
    // No length, an endless body: reading stops just past the bound, and the stream is cancelled.
    let cancelled = false;
    let sent = 0;
    const endless = () =>
      new Response(
        new ReadableStream({
          pull(controller) {
            sent += 1024;
            controller.enqueue(new Uint8Array(1024).fill(0x20));
          },
          cancel() {
            cancelled = true;
          },
        }),
        { headers: { "content-type": "application/json" } },
      );
    expect(await reason(setup(endless).documents.resolve(ID))).toBe("too_large");
    expect(cancelled).toBe(true);
    expect(sent).toBeLessThan(16 * 1024);
    expect(pulled).toBeLessThan(4);
    expect(
      (await setup(() => json(padded), undefined, { maxDocumentBytes: 8192 }).documents.resolve(ID))
        .clientId,
    ).toBe(ID);
  });

  it("gives up on a resolver or a fetch that never answers, and aborts the fetch", async () => {
    const stalledName = clientMetadataDocuments({
      resolve: () => new Promise(() => {}),
      fetch: () => Promise.reject(new Error("never called")),
      timeoutMs: 50,
    });
    expect(await reason(stalledName.resolve(ID))).toBe("timeout");
    let signal: AbortSignal | undefined;
    const stalledFetch = setup(
      (request) => {
        signal = request.signal;
        return new Promise(() => {});
      },
      undefined,
      { timeoutMs: 50 },
    );
    expect(await reason(stalledFetch.documents.resolve(ID))).toBe("timeout");
    expect(signal?.aborted).toBe(true);
    // Headers, then a body that never ends: the same.
    const stalledBody = setup(
      () =>
        new Response(new ReadableStream({ pull: () => new Promise(() => {}) }), {
          headers: { "content-type": "application/json" },
        }),
      undefined,
      { timeoutMs: 50 },
    );
    expect(await reason(stalledBody.documents.resolve(ID))).toBe("timeout");
  });

  it("reports a fetch that throws as fetch_failed", async () => {
    const { documents } = setup(() => {
      throw new TypeError("ECONNREFUSED");
    });
    expect(await reason(documents.resolve(ID))).toBe("fetch_failed");
  });
});

describe("the document", () => {
  const check = (document: unknown) => {
    try {
      checkClientMetadata(ID, document);
      return "accepted";
    } catch (error) {
      return (error as ClientMetadataError).reason;
    }
  };

  it("keeps what the server uses, with RFC 7591's defaults", () => {
    const client = checkClientMetadata(
      ID,
      doc({ logo_uri: "https://app.example.com/logo.png", scope: "mcp:tools" }),
    );
    expect(client).toEqual({
      clientId: ID,
      name: "Example App",
      redirectUris: ["http://127.0.0.1:33418/callback", "https://app.example.com/callback"],
      tokenEndpointAuthMethod: "none",
      grantTypes: ["authorization_code"],
      responseTypes: ["code"],
      scope: "mcp:tools",
    });
    expect(Object.isFrozen(client)).toBe(true);
    const { token_endpoint_auth_method: _, client_name: __, ...bare } = doc();
    expect(checkClientMetadata(ID, bare)).toMatchObject({ tokenEndpointAuthMethod: "none" });
    expect(checkClientMetadata(ID, bare).name).toBeUndefined();
  });

  it("needs client_id to be the URL exactly", () => {
    expect(check(doc({ client_id: "https://app.example.com/oauth/client.json/" }))).toBe(
      "client_id_mismatch",
    );
    expect(check(doc({ client_id: "https://App.example.com/oauth/client.json" }))).toBe(
      "client_id_mismatch",
    );
    expect(check(doc({ client_id: "https://evil.example/oauth/client.json" }))).toBe(
      "client_id_mismatch",
    );
    expect(check(doc({ client_id: undefined }))).toBe("client_id_mismatch");
  });

  it("refuses shared secrets of any kind", () => {
    for (const method of [
      "client_secret_basic",
      "client_secret_post",
      "client_secret_jwt",
      "tls_client_auth",
    ])
      expect(check(doc({ token_endpoint_auth_method: method })), method).toBe(
        "auth_method_refused",
      );
    expect(check(doc({ client_secret: "s3cret" }))).toBe("auth_method_refused");
    expect(check(doc({ client_secret_expires_at: 0 }))).toBe("auth_method_refused");
    expect(check(doc({ token_endpoint_auth_method: 7 }))).toBe("invalid_document");
  });

  it("takes private_key_jwt with exactly one source of public keys", () => {
    const key = { kty: "EC", crv: "P-256", x: "x", y: "y" };
    expect(
      checkClientMetadata(
        ID,
        doc({ token_endpoint_auth_method: "private_key_jwt", jwks: { keys: [key] } }),
      ).jwks,
    ).toEqual({ keys: [key] });
    expect(
      checkClientMetadata(
        ID,
        doc({
          token_endpoint_auth_method: "private_key_jwt",
          jwks_uri: "https://app.example.com/jwks",
        }),
      ).jwksUri,
    ).toBe("https://app.example.com/jwks");
    const pkj = (extra: Record<string, unknown>) =>
      check(doc({ token_endpoint_auth_method: "private_key_jwt", ...extra }));
    expect(pkj({})).toBe("invalid_document");
    expect(pkj({ jwks: { keys: [key] }, jwks_uri: "https://app.example.com/jwks" })).toBe(
      "invalid_document",
    );
    expect(pkj({ jwks: { keys: [{ ...key, d: "private" }] } })).toBe("invalid_document");
    expect(pkj({ jwks: { keys: [] } })).toBe("invalid_document");
    expect(pkj({ jwks_uri: "http://app.example.com/jwks" })).toBe("invalid_document");
  });

  it.each([
    ["http://127.0.0.1:1234/cb", true],
    ["http://[::1]:1234/cb", true],
    ["http://localhost:1234/cb", true],
    ["http://127.0.0.1/cb", true],
    ["https://app.example.com/cb?x=1", true],
    ["com.example.app:/oauth2redirect", true],
    ["com.example.app://callback", true],
    // An app's own scheme never passes for the web's; a single-label one is the server's to
    // accept (`redirectUris.privateUseSchemes`) where the URI is used.
    ["cursor://anysphere.cursor-retrieval/oauth/callback", true],
    ["wss://app.example.com/cb", false],
    ["https2://evil.example/cb", false],
    ["http-s://evil.example/cb", false],
    ["https.example.app:/cb", false],
    ["https://app;x.example.com/cb", false],
    ["http://app.example.com/cb", false],
    ["http://10.0.0.1/cb", false],
    ["https://app.example.com/cb#frag", false],
    ["javascript:alert(1)", false],
    ["JavaScript:alert(1)", false],
    ["data:text/html,<script>alert(1)</script>", false],
    ["file:///etc/passwd", false],
    ["vbscript:msgbox", false],
    ["/relative/cb", false],
    ["https://user:pw@app.example.com/cb", false],
    ["https://app.example.com/c b", false],
    [`https://app.example.com/${"a".repeat(2000)}`, false],
  ])("redirect URI %s: %s", (uri, ok) => {
    expect(check(doc({ redirect_uris: [uri] }))).toBe(ok ? "accepted" : "invalid_document");
  });

  it("needs 1 to 20 redirect URIs", () => {
    expect(check(doc({ redirect_uris: [] }))).toBe("invalid_document");
    expect(check(doc({ redirect_uris: "https://app.example.com/cb" }))).toBe("invalid_document");
    expect(check(doc({ redirect_uris: undefined }))).toBe("invalid_document");
    const many = Array.from({ length: 21 }, (_, i) => `https://app.example.com/cb${i}`);
    expect(check(doc({ redirect_uris: many }))).toBe("invalid_document");
  });

  it("needs a name that can be shown as it is", () => {
    expect(check(doc({ client_name: "Acme \u202eppA" }))).toBe("invalid_document");
    expect(check(doc({ client_name: "two\nlines" }))).toBe("invalid_document");
    expect(check(doc({ client_name: "Pay\u200bPal" }))).toBe("invalid_document");
    expect(check(doc({ client_name: "a\u2028b" }))).toBe("invalid_document");
    expect(check(doc({ client_name: "   " }))).toBe("invalid_document");
    expect(check(doc({ client_name: "n".repeat(201) }))).toBe("invalid_document");
    expect(check(doc({ client_name: ["a"] }))).toBe("invalid_document");
    expect(check(doc({ client_name: "<script>alert(1)</script> Café" }))).toBe("accepted");
    expect(check(doc({ grant_types: "authorization_code" }))).toBe("invalid_document");
    expect(check(doc({ scope: 5 }))).toBe("invalid_document");
  });
});

describe("the cache", () => {
  it("fetches once, then serves the document until it expires", async () => {
    const { documents, fetched, advance } = setup();
    const first = await documents.resolve(ID);
    expect(await documents.resolve(ID)).toBe(first);
    expect(fetched).toHaveLength(1);
    advance(299);
    await documents.resolve(ID);
    expect(fetched).toHaveLength(1);
    advance(2);
    await documents.resolve(ID);
    expect(fetched).toHaveLength(2);
  });

  it("honours Cache-Control within its bounds", async () => {
    const ttl = async (cacheControl: string) => {
      const { documents, fetched, advance } = setup(() =>
        json(doc(), {
          headers: { "content-type": "application/json", "cache-control": cacheControl },
        }),
      );
      await documents.resolve(ID);
      let seconds = 0;
      while (fetched.length === 1 && seconds < 100_000) {
        advance(10);
        seconds += 10;
        await documents.resolve(ID);
      }
      return seconds;
    };
    expect(await ttl("public, max-age=600")).toBe(600);
    expect(await ttl("max-age=5")).toBe(60);
    expect(await ttl("no-store")).toBe(60);
    expect(await ttl("no-cache, max-age=600")).toBe(60);
    expect(await ttl("max-age=31536000")).toBe(86_400);
    expect(await ttl("max-age=junk")).toBe(300);
  });

  it("remembers a failure briefly, and a flood of failures pushes no document out", async () => {
    let good = true;
    const { documents, fetched, advance } = setup(
      (request) => (request.url === ID && good ? json(doc()) : json({}, { status: 500 })),
      undefined,
      { maxEntries: 3 },
    );
    await documents.resolve(ID);
    for (let i = 0; i < 10; i++)
      expect(await reason(documents.resolve(`https://app.example.com/other/${i}`))).toBe(
        "fetch_failed",
      );
    expect(fetched).toHaveLength(11);
    await documents.resolve(ID);
    expect(fetched).toHaveLength(11);
    // A failed id is not fetched again within failureTtlSeconds.
    good = false;
    const other = "https://app.example.com/other/9";
    expect(await reason(documents.resolve(other))).toBe("fetch_failed");
    expect(fetched).toHaveLength(11);
    advance(31);
    expect(await reason(documents.resolve(other))).toBe("fetch_failed");
    expect(fetched).toHaveLength(12);
  });

  it("holds at most maxEntries documents, forgetting the least recently used", async () => {
    const { documents, fetched } = setup(
      (request) => json(doc({ client_id: request.url })),
      undefined,
      { maxEntries: 2 },
    );
    const id = (n: number) => `https://app.example.com/c/${n}`;
    await documents.resolve(id(1));
    await documents.resolve(id(2));
    await documents.resolve(id(1)); // 1 is now the most recently used
    await documents.resolve(id(3)); // pushes 2 out
    expect(fetched).toHaveLength(3);
    await documents.resolve(id(1));
    expect(fetched).toHaveLength(3);
    await documents.resolve(id(2));
    expect(fetched).toHaveLength(4);
  });

  it("shares one fetch among concurrent resolves, whoever asks", async () => {
    const waiting: Array<() => void> = [];
    const { documents, fetched } = setup(
      (request) =>
        new Promise<Response>((resolve) => {
          waiting.push(() => resolve(json(doc({ client_id: request.url }))));
        }),
    );
    const a = documents.resolve(ID);
    const b = documents.resolve(ID, { priority: "signed_in" });
    const c = documents.resolve(ID);
    await new Promise((r) => setTimeout(r, 10));
    expect(fetched).toHaveLength(1);
    for (const go of waiting) go();
    expect(await b).toBe(await a);
    expect(await c).toBe(await a);
  });
});

describe("the fetch budgets", () => {
  /** A documents server whose answers wait for `release`; ids on `host`, numbered. */
  function held(options: Partial<ClientMetadataDocumentsOptions> = {}) {
    const waiting: Array<() => void> = [];
    const made = setup(
      (request) =>
        new Promise<Response>((resolve) => {
          waiting.push(() => resolve(json(doc({ client_id: request.url }))));
        }),
      undefined,
      options,
    );
    const id = (n: number, host = "app.example.com") => `https://${host}/c/${n}`;
    const release = async () => {
      await new Promise((r) => setTimeout(r, 10));
      for (const go of waiting.splice(0)) go();
    };
    return { ...made, id, release };
  }

  it("bounds the fetches in flight, and forgets busy at once", async () => {
    const { documents, fetched, id, release } = held({
      maxConcurrentFetches: 2,
      reservedFetches: 0,
    });
    const a = documents.resolve(id(1));
    const b = documents.resolve(id(2, "other.example.com"));
    expect(await reason(documents.resolve(id(3, "third.example.com")))).toBe("busy");
    expect(
      await reason(documents.resolve(id(3, "third.example.com"), { priority: "signed_in" })),
    ).toBe("busy");
    await release();
    await Promise.all([a, b]);
    expect(fetched).toHaveLength(2);
    // Busy is not remembered: once a slot is free, the id is fetched.
    const c = documents.resolve(id(3, "third.example.com"));
    await release();
    expect((await c).clientId).toBe(id(3, "third.example.com"));
  });

  it("holds reservedFetches for signed-in lookups, which anonymous ones never take", async () => {
    const { documents, fetched, id, release } = held({
      maxConcurrentFetches: 4,
      reservedFetches: 2,
      maxConcurrentFetchesPerHost: 4,
    });
    const anonymous = [documents.resolve(id(1)), documents.resolve(id(2))];
    expect(await reason(documents.resolve(id(3)))).toBe("busy");
    expect(await reason(documents.resolve(id(3), { priority: "anonymous" }))).toBe("busy");
    const people = [
      documents.resolve(id(4), { priority: "signed_in" }),
      documents.resolve(id(5), { priority: "signed_in" }),
    ];
    // Every slot is taken now, the reserved ones by people.
    expect(await reason(documents.resolve(id(6), { priority: "signed_in" }))).toBe("busy");
    await release();
    await Promise.all([...anonymous, ...people]);
    expect(fetched.map((request) => request.url)).toEqual([id(1), id(2), id(4), id(5)]);
    // People may take the unreserved slots too.
    const many = [1, 2, 3, 4].map((n) => documents.resolve(id(10 + n), { priority: "signed_in" }));
    expect(await reason(documents.resolve(id(20)))).toBe("busy");
    await release();
    await Promise.all(many);
  });

  it("bounds the fetches to one host, for people and for the rest apart", async () => {
    const { documents, id, release } = held({ maxConcurrentFetchesPerHost: 2 });
    const slow = [documents.resolve(id(1)), documents.resolve(id(2))];
    expect(await reason(documents.resolve(id(3)))).toBe("busy");
    // Another port of the same host is the same host.
    expect(await reason(documents.resolve("https://app.example.com:8443/c/3"))).toBe("busy");
    // Another host, and people's lookups of this one, still go.
    const others = [
      documents.resolve(id(4, "other.example.com")),
      documents.resolve(id(5), { priority: "signed_in" }),
      documents.resolve(id(6), { priority: "signed_in" }),
    ];
    expect(await reason(documents.resolve(id(7), { priority: "signed_in" }))).toBe("busy");
    await release();
    await Promise.all([...slow, ...others]);
    // Freed: the host takes fetches again.
    const again = documents.resolve(id(3));
    await release();
    expect((await again).clientId).toBe(id(3));
  });

  it("frees a slot whatever the fetch ended in", async () => {
    let n = 0;
    const { documents } = setup(
      (request) => {
        n++;
        if (n % 2 === 0) throw new TypeError("ECONNRESET");
        return json(doc({ client_id: request.url }));
      },
      undefined,
      { maxConcurrentFetches: 1, reservedFetches: 0 },
    );
    for (let i = 0; i < 20; i++)
      await documents.resolve(`https://app.example.com/c/${i}`).catch((error) => {
        expect((error as ClientMetadataError).reason).toBe("fetch_failed");
      });
    expect(n).toBe(20);
  });

  it("says how long one resolve takes at most", () => {
    expect(setup().documents.timeoutMs).toBe(5000);
    expect(setup(undefined, undefined, { timeoutMs: 1200 }).documents.timeoutMs).toBe(1200);
  });
});

describe("options", () => {
  const base = { resolve: async () => [], fetch: async () => new Response() };

  it("needs resolve and fetch, and refuses a misspelt key", () => {
    expect(() => clientMetadataDocuments({} as never)).toThrow(/nodeClientMetadataTransport/);
    expect(() => clientMetadataDocuments(undefined as never)).toThrow(InvalidOptionsError);
    expect(() => clientMetadataDocuments({ ...base, fetch: "x" } as never)).toThrow(
      InvalidOptionsError,
    );
    expect(() => clientMetadataDocuments({ ...base, timeOutMs: 5 } as never)).toThrow(/timeOutMs/);
  });

  it("refuses bounds that contradict each other", () => {
    expect(() => clientMetadataDocuments({ ...base, minTtlSeconds: 600 })).toThrow(
      /defaultTtlSeconds/,
    );
    expect(() => clientMetadataDocuments({ ...base, maxTtlSeconds: 10 })).toThrow(/maxTtlSeconds/);
    expect(() => clientMetadataDocuments({ ...base, maxDocumentBytes: 10 })).toThrow(
      /maxDocumentBytes/,
    );
    expect(() => clientMetadataDocuments({ ...base, allowAddresses: ["localhost"] })).toThrow(
      /allowAddresses/,
    );
    expect(() => clientMetadataDocuments({ ...base, maxEntries: 0 })).toThrow(/maxEntries/);
    // Anonymous lookups always keep one slot; a host never gets more than all of them.
    expect(() =>
      clientMetadataDocuments({ ...base, maxConcurrentFetches: 4, reservedFetches: 4 }),
    ).toThrow(/reservedFetches/);
    expect(() =>
      clientMetadataDocuments({ ...base, maxConcurrentFetches: 4, maxConcurrentFetchesPerHost: 5 }),
    ).toThrow(/maxConcurrentFetchesPerHost/);
    expect(() => clientMetadataDocuments({ ...base, maxConcurrentFetchesPerHost: 0 })).toThrow(
      /maxConcurrentFetchesPerHost/,
    );
    const small = clientMetadataDocuments({ ...base, maxConcurrentFetches: 1 });
    expect(small.timeoutMs).toBe(5000);
  });
});
