import { describe, expect, it } from "vitest";
import { mediaTypeOf, readFormBody, readJsonBody } from "./body.ts";

const post = (body: BodyInit, type?: string) =>
  new Request("https://a.example/", {
    method: "POST",
    body,
    ...(type === undefined ? {} : { headers: { "content-type": type } }),
  });

describe("typed body readers", () => {
  it("read a form and a JSON body of their type", async () => {
    const form = await readFormBody(post("a=1&a=2&b=", "application/x-www-form-urlencoded"), 64);
    expect(form.ok && [...form.value]).toEqual([
      ["a", "1"],
      ["a", "2"],
      ["b", ""],
    ]);
    const json = await readJsonBody(post('{"x":[1]}', "Application/JSON; charset=utf-8"), 64);
    expect(json).toEqual({ ok: true, value: { x: [1] } });
  });

  it("answer neutral failures the caller words in its own protocol", async () => {
    expect(await readJsonBody(post("{}", "text/plain"), 64)).toEqual({
      ok: false,
      failure: "media_type",
    });
    expect(await readJsonBody(post("{", "application/json"), 64)).toEqual({
      ok: false,
      failure: "malformed",
    });
    expect(await readJsonBody(post("[1,2,3]", "application/json"), 4)).toEqual({
      ok: false,
      failure: "too_large",
    });
    const notUtf8 = new Uint8Array([0x61, 0x3d, 0xff]);
    expect(await readFormBody(post(notUtf8, "application/x-www-form-urlencoded"), 64)).toEqual({
      ok: false,
      failure: "malformed",
    });
  });

  it("leave a body read to its end used and locked, as the runtime's text() does, and one cut short released", async () => {
    const read = post('{"x":1}', "application/json");
    expect(await readJsonBody(read, 64)).toEqual({ ok: true, value: { x: 1 } });
    const byRuntime = post('{"x":1}', "application/json");
    await byRuntime.text();
    expect([read.bodyUsed, read.body?.locked]).toEqual([
      byRuntime.bodyUsed,
      byRuntime.body?.locked,
    ]);
    expect([read.bodyUsed, read.body?.locked]).toEqual([true, true]);
    await expect(read.text()).rejects.toThrow(TypeError);
    const tooLarge = post("[1,2,3]", "application/json");
    expect(await readJsonBody(tooLarge, 4)).toEqual({ ok: false, failure: "too_large" });
    expect(tooLarge.body?.locked).toBe(false);
  });

  it("take the media type without parameters, lower-cased", () => {
    expect(mediaTypeOf(post("", "Text/HTML ; charset=x"))).toBe("text/html");
    expect(mediaTypeOf(post("", "application/json"))).toBe("application/json");
    expect(mediaTypeOf(post("", "application/json;charset=utf-8"))).toBe("application/json");
    expect(mediaTypeOf(new Request("https://a.example/"))).toBe("");
  });
});
