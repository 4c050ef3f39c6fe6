import { describe, expect, it } from "vitest";
import { decorating } from "../../test/support/legs.ts";
import { LightResponseClass } from "../adapters/node/engine/light-response.ts";
import { Chain } from "../chain/chain.ts";
import { FieldList } from "./field-list.ts";
import { forwardedAnswer, settleAnswer } from "./forwarded-answer.ts";
import type { Middleware } from "./handler.ts";
import { ANSWER_FIELDS, isPassThrough, isResponse, passThroughResponse } from "./pass-through.ts";

const routeAnswer = () => {
  const response = new Response("body", {
    status: 201,
    statusText: "Made",
    headers: { "content-type": "text/plain", vary: "Accept-Encoding" },
  });
  response.headers.append("set-cookie", "route=1");
  return response;
};

describe("forwardedAnswer", () => {
  it("answers as the real answer: status, body, type checks", async () => {
    const real = routeAnswer();
    const answer = forwardedAnswer(real);
    expect(answer).toBeInstanceOf(Response);
    expect(isResponse(answer)).toBe(true);
    expect(isPassThrough(answer)).toBe(false);
    expect([answer.status, answer.statusText, answer.ok]).toEqual([201, "Made", true]);
    expect(answer.headers.get("vary")).toBe("Accept-Encoding");
    expect(answer.headers.getSetCookie()).toEqual(["route=1"]);
    expect(await answer.text()).toBe("body");
    expect(real.bodyUsed).toBe(true);
  });

  it("hands back the real answer itself when no leg read its fields", () => {
    const real = routeAnswer();
    expect(settleAnswer(forwardedAnswer(real))).toBe(real);
  });

  it("lands the legs' edits on the real answer once, on the way out", async () => {
    const real = routeAnswer();
    const answer = forwardedAnswer(real);
    answer.headers.set("x-frame-options", "DENY");
    answer.headers.set("vary", "Accept-Encoding, Origin");
    answer.headers.append("set-cookie", "leg=1");
    expect(real.headers.has("x-frame-options")).toBe(false);
    const settled = settleAnswer(answer);
    expect(settled).toBe(real);
    expect(real.headers.get("x-frame-options")).toBe("DENY");
    expect(real.headers.get("vary")).toBe("Accept-Encoding, Origin");
    expect(real.headers.getSetCookie()).toEqual(["route=1", "leg=1"]);
    expect(await settled.text()).toBe("body");
  });

  it("removes what a leg deleted, the route's cookies included", () => {
    const real = routeAnswer();
    const answer = forwardedAnswer(real);
    answer.headers.delete("vary");
    answer.headers.delete("set-cookie");
    answer.headers.append("set-cookie", "leg=1");
    settleAnswer(answer);
    expect(real.headers.has("vary")).toBe(false);
    expect(real.headers.getSetCookie()).toEqual(["leg=1"]);
  });

  it("edits a copy sharing the body when the real answer's fields are immutable", async () => {
    const real = Response.redirect("https://example.test/next", 303);
    const answer = forwardedAnswer(real);
    answer.headers.set("x-frame-options", "DENY");
    const settled = settleAnswer(answer);
    expect(settled).not.toBe(real);
    expect(settled.status).toBe(303);
    expect(settled.headers.get("location")).toBe("https://example.test/next");
    expect(settled.headers.get("x-frame-options")).toBe("DENY");
    expect(real.headers.has("x-frame-options")).toBe(false);
  });

  it("hands back the library's own answers and anything that is no answer as they are", () => {
    const pass = passThroughResponse();
    expect(forwardedAnswer(pass)).toBe(pass);
    const light = new LightResponseClass("ok");
    expect(forwardedAnswer(light)).toBe(light);
    const none = { headers: new Headers() } as unknown as Response;
    expect(forwardedAnswer(none)).toBe(none);
  });

  it("copies with the edits: clone() and new Response(answer.body, answer)", async () => {
    const answer = forwardedAnswer(routeAnswer());
    answer.headers.set("x-frame-options", "DENY");
    const clone = answer.clone();
    expect(clone.status).toBe(201);
    expect(clone.headers.get("x-frame-options")).toBe("DENY");
    expect(await clone.text()).toBe("body");
    const copy = new Response(answer.body, answer);
    expect(copy.headers.get("x-frame-options")).toBe("DENY");
    expect(copy.headers.getSetCookie()).toEqual(["route=1"]);
    expect(await copy.text()).toBe("body");
  });
});

describe("Chain.wrap", () => {
  const decorate = decorating({ "x-leg": "1" });

  it("hands the runtime the handler's own answer with the legs' fields", async () => {
    const real = routeAnswer();
    const response = await new Chain(decorate).wrap(() => real)(new Request("http://h/"));
    expect(response).toBe(real);
    expect(response.headers.get("x-leg")).toBe("1");
  });

  it("hands on an answer a leg made of its own as it is", async () => {
    const own = new Response("denied", { status: 403 });
    const answering: Middleware = () => async () => own;
    const response = await new Chain(answering).wrap(() => routeAnswer())(new Request("http://h/"));
    expect(response).toBe(own);
  });
});

describe("Chain.wrap where the global Response makes the library's own answers", () => {
  it("hands the legs the handler's answer itself, with no forwarding", async () => {
    const runtime = globalThis.Response;
    const own = new Response("ok");
    const seen: Response[] = [];
    const watch: Middleware =
      (next) =>
      async (request, ...rest) => {
        const response = await next(request, ...rest);
        seen.push(response);
        return response;
      };
    const handler = new Chain(watch).wrap(() => own);
    function Light() {}
    Light.prototype = Object.create(runtime.prototype, {
      [ANSWER_FIELDS]: { get: () => undefined },
    });
    globalThis.Response = Light as unknown as typeof Response;
    try {
      expect(await handler(new Request("http://h/"))).toBe(own);
    } finally {
      globalThis.Response = runtime;
    }
    expect(seen).toEqual([own]);
    const real = new Response("ok");
    await new Chain(watch).wrap(() => real)(new Request("http://h/"));
    expect(seen[1]).not.toBe(real);
    expect(seen[1]?.headers).toBeInstanceOf(FieldList);
  });
});
