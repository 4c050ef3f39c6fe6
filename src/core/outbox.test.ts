import { describe, expect, it } from "vitest";
import { existingOutbox, outboxOf, ResponseOutbox } from "./outbox.ts";

describe("ResponseOutbox", () => {
  it("starts empty and is not empty once a cookie is queued", () => {
    const outbox = new ResponseOutbox();
    expect(outbox.empty).toBe(true);
    outbox.setCookie("a=1");
    expect(outbox.empty).toBe(false);
  });

  it("drains every cookie as its own Set-Cookie line, with no-store, and empties itself", () => {
    const outbox = new ResponseOutbox();
    outbox.setCookie("a=1; Path=/");
    outbox.setCookie("b=2; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT");
    const headers = new Headers();
    outbox.drainInto(headers);
    expect(headers.getSetCookie()).toEqual([
      "a=1; Path=/",
      "b=2; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
    ]);
    expect(headers.get("cache-control")).toBe("no-store");
    expect(outbox.empty).toBe(true);
    const again = new Headers();
    outbox.drainInto(again);
    expect(again.getSetCookie()).toEqual([]);
    expect(again.get("cache-control")).toBeNull();
  });

  it("returns the very response when nothing is queued", () => {
    const response = new Response("body", { headers: { "cache-control": "public, max-age=60" } });
    expect(new ResponseOutbox().drainIntoResponse(response)).toBe(response);
    expect(response.headers.get("cache-control")).toBe("public, max-age=60");
  });

  it("decorates a mutable response in place, keeping its own cookies and overriding caching", async () => {
    const outbox = new ResponseOutbox();
    outbox.setCookie("sid=new");
    const response = new Response("body", {
      status: 201,
      headers: { "set-cookie": "theme=dark", "cache-control": "public, max-age=3600" },
    });
    const out = outbox.drainIntoResponse(response);
    expect(out).toBe(response);
    expect(out.status).toBe(201);
    expect(out.headers.getSetCookie()).toEqual(["theme=dark", "sid=new"]);
    expect(out.headers.get("cache-control")).toBe("no-store");
    await expect(out.text()).resolves.toBe("body");
  });

  it("copies a response with immutable headers (Response.redirect), keeping status and Location", () => {
    const outbox = new ResponseOutbox();
    outbox.setCookie("sid=new");
    const redirect = Response.redirect("https://app.example/home", 303);
    const out = outbox.drainIntoResponse(redirect);
    expect(out).not.toBe(redirect);
    expect(out.status).toBe(303);
    expect(out.headers.get("location")).toBe("https://app.example/home");
    expect(out.headers.getSetCookie()).toEqual(["sid=new"]);
    expect(out.headers.get("cache-control")).toBe("no-store");
    expect(redirect.headers.getSetCookie()).toEqual([]);
    expect(outbox.empty).toBe(true);
  });

  it("keeps a streaming body streaming when it has to copy", async () => {
    const outbox = new ResponseOutbox();
    outbox.setCookie("sid=new");
    let pulls = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++;
        controller.enqueue(new TextEncoder().encode(`chunk${pulls};`));
        if (pulls === 3) controller.close();
      },
    });
    const original = new Response(stream);
    // Freeze the headers the way fetch() responses are frozen.
    Object.defineProperty(original, "headers", {
      value: new Proxy(original.headers, {
        get(target, key) {
          if (key === "append" || key === "set")
            return () => {
              throw new TypeError("immutable");
            };
          const value = Reflect.get(target, key);
          return typeof value === "function" ? value.bind(target) : value;
        },
      }),
    });
    const out = outbox.drainIntoResponse(original);
    expect(out.headers.getSetCookie()).toEqual(["sid=new"]);
    await expect(out.text()).resolves.toBe("chunk1;chunk2;chunk3;");
  });

  it("returns a network error (Response.error()) unchanged instead of throwing", () => {
    const outbox = new ResponseOutbox();
    outbox.setCookie("sid=; Max-Age=0");
    const error = Response.error();
    let out: Response | undefined;
    expect(() => {
      out = outbox.drainIntoResponse(error);
    }).not.toThrow();
    expect(out?.type).toBe("error");
  });
});

describe("outboxOf / existingOutbox", () => {
  it("creates one outbox per request on first use", () => {
    const request = new Request("https://app.example/");
    expect(existingOutbox(request)).toBeUndefined();
    const outbox = outboxOf(request);
    expect(outboxOf(request)).toBe(outbox);
    expect(existingOutbox(request)).toBe(outbox);
    const other = new Request("https://app.example/");
    expect(outboxOf(other)).not.toBe(outbox);
    expect(existingOutbox(other)).not.toBe(outbox);
  });
});
