import { describe, expect, it } from "vitest";
import { isPassThrough, passThroughResponse } from "./pass-through.ts";
import { withHeaders } from "./response.ts";

describe("passThroughResponse", () => {
  it("is an empty 200 Response whose headers the legs can edit", async () => {
    const response = passThroughResponse();
    expect(response).toBeInstanceOf(Response);
    expect(Object.prototype.toString.call(response)).toBe("[object Response]");
    expect([response.status, response.ok, response.body, response.bodyUsed]).toEqual([
      200,
      true,
      null,
      false,
    ]);
    expect([response.type, response.url, response.redirected]).toEqual(["default", "", false]);
    response.headers.set("x-frame-options", "DENY");
    response.headers.append("set-cookie", "a=1");
    response.headers.append("set-cookie", "b=2");
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(isPassThrough(response)).toBe(true);
  });

  it("answers the body methods as an empty Response does", async () => {
    expect(await passThroughResponse().text()).toBe("");
    expect((await passThroughResponse().arrayBuffer()).byteLength).toBe(0);
    expect((await passThroughResponse().blob()).size).toBe(0);
    await expect(passThroughResponse().json()).rejects.toThrow(SyntaxError);
  });

  it("clones with its own copy of the headers", () => {
    const response = passThroughResponse();
    response.headers.set("x-a", "1");
    const copy = response.clone();
    copy.headers.set("x-b", "2");
    expect(isPassThrough(copy)).toBe(true);
    expect(copy.headers.get("x-a")).toBe("1");
    expect(response.headers.has("x-b")).toBe(false);
  });

  it("survives a leg that rebuilds it, and withHeaders edits it in place", () => {
    const response = passThroughResponse();
    response.headers.set("x-a", "1");
    const rebuilt = new Response(response.body, response);
    expect(isPassThrough(rebuilt)).toBe(true);
    expect(rebuilt.headers.get("x-a")).toBe("1");
    expect(withHeaders(response, (headers) => headers.set("x-b", "2"))).toBe(response);
    expect(response.headers.get("x-b")).toBe("2");
  });

  it("is not confused with an answer of a leg", () => {
    expect(isPassThrough(new Response(null))).toBe(false);
    expect(isPassThrough(new Response("", { statusText: "OK" }))).toBe(false);
    expect(isPassThrough({ status: 200, body: null })).toBe(false);
  });

  it("refuses its getters on anything else, as the runtime's do", () => {
    const proto = Object.getPrototypeOf(Object.getPrototypeOf(passThroughResponse()));
    const status = Object.getOwnPropertyDescriptor(proto, "status")?.get;
    expect(() => status?.call({})).toThrow(TypeError);
  });
});
