import { createServer, IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { urlAsSent } from "../../../core/url-as-sent.ts";
import { toNodeListener } from "../index.ts";
import { LAZY_REQUESTS } from "./lazy-request.ts";
import { buildRequest } from "./request.ts";

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      resolve(`127.0.0.1:${(server.address() as AddressInfo).port}`);
    }),
  );
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

describe("the request a Node adapter hands downstream", () => {
  it("is lazy on this runtime (its Request keeps state in symbol slots)", () => {
    const undiciMajor = Number(process.versions.undici?.split(".")[0] ?? 0);
    if (undiciMajor > 0 && undiciMajor < 7) expect(LAZY_REQUESTS).toBe(true);
  });

  // What the downstream handler saw, per test.
  let seen: Record<string, unknown> = {};
  let server: Server;
  let upstream: Server;
  let host: string;
  let upstreamHost: string;
  let onRequest: (request: Request) => Promise<Response>;

  beforeAll(async () => {
    upstream = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          method: req.method,
          url: req.url,
          probe: req.headers["x-probe"] ?? null,
          body: Buffer.concat(chunks).toString(),
        }),
      );
    });
    upstreamHost = await listen(upstream);
    server = createServer(toNodeListener((request) => onRequest(request)));
    host = await listen(server);
  });

  afterAll(async () => {
    await close(server);
    await close(upstream);
  });

  it("passes instanceof, and answers method, URL and headers like a real Request", async () => {
    onRequest = async (request) => {
      const first = request.headers;
      seen = {
        isRequest: request instanceof Request,
        tag: Object.prototype.toString.call(request),
        method: request.method,
        url: request.url,
        header: request.headers.get("x-probe"),
        sameHeaders: first === request.headers,
        body: request.body,
        bodyUsed: request.bodyUsed,
        signal: request.signal instanceof AbortSignal,
      };
      return new Response("ok");
    };
    const response = await fetch(`http://${host}/a/./b/../c?q=1`, { headers: { "x-probe": "p" } });
    expect(response.status).toBe(200);
    expect(seen).toEqual({
      isRequest: true,
      tag: "[object Request]",
      method: "GET",
      url: `http://${host}/a/c?q=1`,
      header: "p",
      sameHeaders: true,
      body: null,
      bodyUsed: false,
      signal: true,
    });
  });

  it("reads its body once, clones, and copies into new Request(r) with method, headers and body", async () => {
    onRequest = async (request) => {
      const clone = request.clone();
      request.headers.set("x-added", "1");
      const copy = new Request(request.clone());
      seen = {
        clone: await clone.text(),
        copy: {
          method: copy.method,
          url: copy.url,
          probe: copy.headers.get("x-probe"),
          body: await copy.text(),
        },
        original: await request.text(),
        used: request.bodyUsed,
      };
      await request.text().then(
        () => (seen.second = "read"),
        (error: unknown) => (seen.second = (error as Error).name),
      );
      return new Response("ok");
    };
    const response = await fetch(`http://${host}/form`, {
      method: "POST",
      headers: { "x-probe": "p", "content-type": "text/plain" },
      body: "hello body",
    });
    expect(response.status).toBe(200);
    expect(seen).toEqual({
      clone: "hello body",
      copy: { method: "POST", url: `http://${host}/form`, probe: "p", body: "hello body" },
      original: "hello body",
      used: true,
      second: "TypeError",
    });
  });

  it("can be sent on with fetch(r), body and headers included", async () => {
    onRequest = async (request) => {
      request.headers.set("x-probe", "forwarded");
      const answer = await fetch(request);
      return new Response(await answer.text(), { headers: { "content-type": "application/json" } });
    };
    // The Host names the upstream, so the request's URL points there.
    const { request } = await import("node:http");
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(
        {
          host: "127.0.0.1",
          port: Number(host.split(":")[1]),
          path: "/p?x=1",
          method: "PUT",
          headers: { host: upstreamHost, "content-type": "text/plain" },
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk) => (text += chunk));
          res.on("end", () => resolve(text));
        },
      );
      req.on("error", reject);
      req.end("payload");
    });
    expect(JSON.parse(body)).toEqual({
      method: "PUT",
      url: "/p?x=1",
      probe: "forwarded",
      body: "payload",
    });
  });

  it("aborts its signal when the client goes away before the answer", async () => {
    const aborted = new Promise<boolean>((resolve) => {
      onRequest = (request) =>
        new Promise<Response>((answer) => {
          request.signal.addEventListener("abort", () => {
            resolve(true);
            answer(new Response("too late"));
          });
        });
    });
    const controller = new AbortController();
    const call = fetch(`http://${host}/slow`, { signal: controller.signal }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    await call;
    expect(await aborted).toBe(true);
  });
});

describe("a lazy request's URL", () => {
  function message(target: string, host = "app.example"): IncomingMessage {
    const m = new IncomingMessage(new Socket());
    m.method = "GET";
    m.url = target;
    m.headers = { host };
    return m;
  }

  it.each([
    "/",
    "/a/../../b",
    "/a/%2e%2E/b",
    "/a/./b/.",
    "/x|y{z}^`",
    "/q?a=\"b\"&c=<d>&e='f'",
    "/caf%C3%A9?x=%zz",
    "/a\\b",
    "/a;b=c/d",
    "//double//slash",
    "/p#frag",
  ])("serializes %j exactly as a real Request does", (target) => {
    for (const host of ["app.example", "APP.Example:80", "[::1]:8080", "127.0.0.1:443"]) {
      const lazy = buildRequest(message(target, host), target, false, { lazy: true });
      const eager = buildRequest(message(target, host), target, false, { lazy: false });
      expect(lazy?.request.url).toBe(eager?.request.url);
      expect(lazy?.request.method).toBe(eager?.request.method);
    }
  });

  it.each(["/", "/a?b=1", "/a?", "/p#x?_method=DELETE", "/a?_method=PUT"])(
    "answers %j unparsed for scheme and query questions, agreeing with the parse",
    (target) => {
      const { request } = buildRequest(message(target), target, false, {
        lazy: true,
      }) as NonNullable<ReturnType<typeof buildRequest>>;
      const parses = vi.spyOn(globalThis, "URL");
      const sent = urlAsSent(request);
      expect(parses).not.toHaveBeenCalled();
      parses.mockRestore();
      const real = new URL(request.url);
      expect(sent.startsWith("https:")).toBe(real.protocol === "https:");
      // The unparsed URL may have a `?` the parse reads as part of a fragment, never the reverse.
      if (real.search !== "") expect(sent).toContain("?");
      expect(urlAsSent(new Request(request.url))).toBe(request.url);
    },
  );
});
