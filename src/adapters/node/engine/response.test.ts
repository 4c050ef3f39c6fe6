import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { serveListener, type TestServer } from "../../../../test/support/listen.ts";
import { ResponseOutbox } from "../../../core/outbox.ts";
import { applyHeaders, drainOutboxOnHead, mergeLateHeaders, writeResponse } from "./response.ts";

let served: TestServer | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

function response(): ServerResponse {
  return new ServerResponse(new IncomingMessage(new Socket()));
}

function late(...cookies: string[]): Headers {
  const headers = new Headers({ "cache-control": "no-store" });
  for (const cookie of cookies) headers.append("set-cookie", cookie);
  return headers;
}

describe("applyHeaders", () => {
  it("appends each Set-Cookie on its own after those already set, and skips body headers", () => {
    const res = response();
    res.setHeader("set-cookie", ["early=1"]);
    const headers = new Headers({
      "x-a": "1",
      "content-length": "0",
      "transfer-encoding": "chunked",
    });
    headers.append("set-cookie", "a=1; Path=/");
    headers.append("set-cookie", "b=2, c=3; Path=/");
    applyHeaders(res, headers);
    expect(res.getHeader("set-cookie")).toEqual(["early=1", "a=1; Path=/", "b=2, c=3; Path=/"]);
    expect(res.getHeader("x-a")).toBe("1");
    expect(res.hasHeader("content-length")).toBe(false);
    expect(res.hasHeader("transfer-encoding")).toBe(false);
  });
});

describe("mergeLateHeaders", () => {
  it("puts late headers on the response when writeHead passes none", () => {
    const res = response();
    res.setHeader("set-cookie", ["leg=1"]);
    const args: unknown[] = [200];
    mergeLateHeaders(res, args, late("s=1"));
    expect(res.getHeader("set-cookie")).toEqual(["leg=1", "s=1"]);
    expect(res.getHeader("cache-control")).toBe("no-store");
    expect(args).toEqual([200]);
  });

  it("merges into a headers object that names Set-Cookie, in any case, and overrides Cache-Control", () => {
    const res = response();
    const given = { "Set-Cookie": "leg=1", "Cache-Control": "max-age=60", "x-b": "2" };
    const args: unknown[] = [200, "OK", given];
    mergeLateHeaders(res, args, late("s=1", "t=2"));
    expect(args[2]).toEqual({
      "Set-Cookie": ["leg=1", "s=1", "t=2"],
      "Cache-Control": "no-store",
      "x-b": "2",
    });
    expect(given["Set-Cookie"]).toBe("leg=1"); // the caller's object is left as it was
  });

  it("puts late headers on the response when the headers object does not name them", () => {
    const res = response();
    const args: unknown[] = [201, { "x-b": "2" }];
    mergeLateHeaders(res, args, late("s=1"));
    expect(args[1]).toEqual({ "x-b": "2" });
    expect([res.getHeader("set-cookie")].flat()).toEqual(["s=1"]);
  });

  it("merges into flat and nested header arrays", () => {
    const flat: unknown[] = [200, ["set-cookie", "leg=1", "cache-control", "public"]];
    mergeLateHeaders(response(), flat, late("s=1"));
    expect(flat[1]).toEqual([
      "set-cookie",
      "leg=1",
      "set-cookie",
      "s=1",
      "cache-control",
      "no-store",
    ]);
    const nested: unknown[] = [200, [["Set-Cookie", "leg=1"]]];
    const res = response();
    mergeLateHeaders(res, nested, late("s=1"));
    expect(nested[1]).toEqual([
      ["Set-Cookie", "leg=1"],
      ["set-cookie", "s=1"],
    ]);
    expect(res.getHeader("cache-control")).toBe("no-store");
  });
});

describe("drainOutboxOnHead over a socket", () => {
  it("adds cookies queued after the chain to an implicit head and to writeHead(status, headers)", async () => {
    served = await serveListener((req, res) => {
      const outbox = new ResponseOutbox();
      drainOutboxOnHead(res, outbox);
      drainOutboxOnHead(res, outbox); // installed once
      res.setHeader("set-cookie", ["leg=1"]);
      outbox.setCookie("late=1; Path=/");
      if (req.url === "/explicit")
        res.writeHead(200, { "set-cookie": ["own=1"], "content-type": "text/plain" });
      res.end("ok");
    });
    const implicit = await fetch(`${served.url}/implicit`);
    expect(implicit.headers.getSetCookie()).toEqual(["leg=1", "late=1; Path=/"]);
    expect(implicit.headers.get("cache-control")).toBe("no-store");
    const explicit = await fetch(`${served.url}/explicit`);
    expect(explicit.headers.getSetCookie()).toEqual(["own=1", "late=1; Path=/"]);
  });
});

describe("writeResponse", () => {
  it("writes status, every cookie and a large streamed body intact", async () => {
    const size = 4 * 1024 * 1024;
    served = await serveListener((req, res) => {
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= size) return controller.close();
          controller.enqueue(new Uint8Array(64 * 1024).fill(97));
          sent += 64 * 1024;
        },
      });
      const headers = new Headers({ "content-type": "text/plain" });
      headers.append("set-cookie", "a=1");
      headers.append("set-cookie", "b=2");
      void writeResponse(res, new Response(body, { status: 418, headers }), req.method);
    });
    const answer = await fetch(served.url);
    expect(answer.status).toBe(418);
    expect(answer.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect((await answer.arrayBuffer()).byteLength).toBe(size);
  });

  it("sends no body to HEAD and cancels the body stream", async () => {
    let cancelled = false;
    served = await serveListener((req, res) => {
      const body = new ReadableStream({
        cancel() {
          cancelled = true;
        },
      });
      void writeResponse(res, new Response(body), req.method);
    });
    const answer = await fetch(served.url, { method: "HEAD" });
    expect(answer.status).toBe(200);
    expect(cancelled).toBe(true);
  });

  it("stops pulling the body when the client goes away", async () => {
    let cancelled: () => void = () => {};
    const gone = new Promise<void>((resolve) => {
      cancelled = resolve;
    });
    served = await serveListener((req, res) => {
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          await new Promise((resolve) => setTimeout(resolve, 5));
          controller.enqueue(new Uint8Array(16 * 1024));
        },
        cancel() {
          cancelled();
        },
      });
      void writeResponse(res, new Response(body), req.method);
    });
    const controller = new AbortController();
    const answer = await fetch(served.url, { signal: controller.signal });
    await answer.body?.getReader().read();
    controller.abort();
    await gone;
  });

  it("cancels a body waiting for its next chunk when the client goes away", async () => {
    // A server-sent-events source: one event, then nothing until something happens.
    let cancelled: () => void = () => {};
    const gone = new Promise<string>((resolve) => {
      cancelled = () => resolve("cancelled");
    });
    served = await serveListener((req, res) => {
      let sent = false;
      const body = new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            if (sent) return new Promise<void>(() => {});
            sent = true;
            controller.enqueue(new TextEncoder().encode("data: hello\n\n"));
          },
          cancel() {
            cancelled();
          },
        },
        { highWaterMark: 0 },
      );
      void writeResponse(res, new Response(body), req.method);
    });
    const controller = new AbortController();
    const answer = await fetch(served.url, { signal: controller.signal });
    await answer.body?.getReader().read();
    controller.abort();
    const outcome = await Promise.race([
      gone,
      new Promise<string>((resolve) => setTimeout(() => resolve("still held"), 1000)),
    ]);
    expect(outcome).toBe("cancelled");
  });
});
