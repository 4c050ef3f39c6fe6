import { request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { afterEach, describe, expect, it } from "vitest";
import { serveListener, type TestServer } from "../../../../test/support/listen.ts";
import { BodyTap, BodyUnavailableError } from "./body-tap.ts";

let served: TestServer | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** Serves `handler`, sends `body` in `pieces` with pauses, and resolves with the answer text. */
async function exchange(handler: Handler, body: string, pieces = 1): Promise<string> {
  served = await serveListener((req, res) => {
    handler(req, res).catch((error) => {
      res.statusCode = 500;
      res.end(String(error));
    });
  });
  const url = new URL(served.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: "POST",
        path: "/",
        headers: pieces > 1 ? {} : { "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => {
          text += chunk;
        });
        res.on("end", () => resolve(text));
      },
    );
    req.on("error", reject);
    const size = Math.ceil(body.length / pieces);
    let offset = 0;
    const next = () => {
      if (offset >= body.length) {
        req.end();
        return;
      }
      req.write(body.slice(offset, offset + size));
      offset += size;
      setTimeout(next, 20);
    };
    next();
  });
}

async function readAll(req: IncomingMessage): Promise<string> {
  let text = "";
  await pipeline(
    req,
    new Writable({
      write(chunk, _encoding, done) {
        text += chunk;
        done();
      },
    }),
  );
  return text;
}

describe("BodyTap", () => {
  it("puts back a prefix the chain read, so the listener reads the whole body", async () => {
    const body = "x".repeat(200_000);
    const text = await exchange(
      async (req, res) => {
        const tap = new BodyTap(req);
        const reader = tap.stream().getReader();
        const first = await reader.read();
        expect(first.value?.byteLength).toBeGreaterThan(0);
        tap.restore();
        res.end(String((await readAll(req)).length));
      },
      body,
      4,
    );
    expect(text).toBe("200000");
  });

  it("puts back a body read to its end without Node having emitted 'end'", async () => {
    const text = await exchange(async (req, res) => {
      const tap = new BodyTap(req);
      expect(await new Response(tap.stream()).text()).toBe("a=1&b=2");
      expect(req.readableEnded).toBe(false);
      tap.restore();
      res.end(await readAll(req));
    }, "a=1&b=2");
    expect(text).toBe("a=1&b=2");
  });

  it("leaves an untouched body alone", async () => {
    const text = await exchange(async (req, res) => {
      const tap = new BodyTap(req);
      tap.stream();
      tap.restore();
      expect(tap.touched).toBe(false);
      res.end(await readAll(req));
    }, "untouched");
    expect(text).toBe("untouched");
  });

  it("sees an empty body, without hanging, when a parser further out consumed it", async () => {
    const text = await exchange(
      async (req, res) => {
        await readAll(req);
        const tap = new BodyTap(req);
        res.end(`[${await new Response(tap.stream()).text()}]`);
        tap.restore();
      },
      "consumed",
      3,
    );
    expect(text).toBe("[]");
  });

  it("refuses further reads once the body was handed back", async () => {
    const text = await exchange(
      async (req, res) => {
        const tap = new BodyTap(req);
        const reader = tap.stream().getReader();
        await reader.read();
        tap.restore();
        const error = await reader.read().catch((e: unknown) => e);
        res.end(error instanceof BodyUnavailableError ? "refused" : "read on");
        await readAll(req);
      },
      "abcdef",
      3,
    );
    expect(text).toBe("refused");
  });

  it("drains what is left when the chain answered, so the response can finish", async () => {
    const text = await exchange(
      async (req, res) => {
        const tap = new BodyTap(req);
        await tap.stream().getReader().read();
        tap.discard();
        expect(req.readableFlowing).toBe(true);
        res.end("denied");
      },
      "y".repeat(100_000),
      4,
    );
    expect(text).toBe("denied");
  });

  it("fails the chain's read, instead of hanging, when the client goes away", async () => {
    let failure: unknown;
    const done = new Promise<void>((resolve) => {
      serveListener(async (req) => {
        const tap = new BodyTap(req);
        failure = await new Response(tap.stream()).text().catch((e: unknown) => e);
        resolve();
      }).then((s) => {
        served = s;
        const url = new URL(s.url);
        const req = httpRequest({
          host: url.hostname,
          port: url.port,
          method: "POST",
          headers: { "content-length": "100" },
        });
        req.on("error", () => {});
        req.write("partial");
        setTimeout(() => req.destroy(), 50);
      });
    });
    await done;
    expect(failure).toBeInstanceOf(Error);
  });
});
