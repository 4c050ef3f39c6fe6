import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { InvalidOptionsError } from "../../../core/errors.ts";
import { toNodeListener } from "../index.ts";
import { LIGHT_RESPONSES, LightResponseClass as Light } from "./light-response.ts";

/** Runs `script` (an ES module printing JSON) in a process of its own: installing is for good. */
function inOwnProcess(script: string): unknown {
  const child = spawnSync(
    process.execPath,
    ["--conditions=source", "--import", "tsx", "--input-type=module", "-e", script],
    { encoding: "utf8", cwd: new URL("../../../..", import.meta.url).pathname },
  );
  expect(child.stderr).toBe("");
  return JSON.parse(child.stdout);
}

/** Everything observable about a response, body included. */
async function observe(response: Response): Promise<unknown> {
  return {
    isResponse: response instanceof Response,
    tag: Object.prototype.toString.call(response),
    status: response.status,
    statusText: response.statusText,
    ok: response.ok,
    headers: [...response.headers],
    type: response.type,
    redirected: response.redirected,
    url: response.url,
    hasBody: response.body !== null,
    bodyUsed: response.bodyUsed,
    text: await response.text(),
    usedAfter: response.bodyUsed,
  };
}

type Args = [BodyInit | null | undefined, ResponseInit | undefined];

const CASES: Record<string, Args> = {
  "no arguments": [undefined, undefined],
  "a string": ["héllo", undefined],
  "a string with a type": ["{}", { headers: { "content-type": "application/json" } }],
  bytes: [new Uint8Array([104, 105]), { status: 201, statusText: "Made" }],
  "null with headers pairs": [
    null,
    {
      status: 204,
      headers: [
        ["x-a", "1"],
        ["Set-Cookie", "a=1"],
        ["set-cookie", "b=2"],
      ],
    },
  ],
  "headers object": ["x", { headers: new Headers({ vary: "Origin", "x-b": " padded " }) }],
  "an empty string": ["", { status: 404 }],
  "a record with mixed case, padding and a cookie": [
    "x",
    { headers: { "X-Up": " padded ", vary: "Origin", "Set-Cookie": "a=1", "Content-Type": "a/b" } },
  ],
  "a record naming one field twice": [null, { headers: { "X-A": "1", "x-a": "2" } }],
  "a record whose values look like names": [
    "x",
    { headers: { "x-a": "content-type", "x-b": "x-a", "x-c": "x-b" } },
  ],
  "a record of non-strings": [
    "x",
    { headers: { "x-n": 42, "x-b": true } as unknown as Record<string, string> },
  ],
  "a stream (handed to the runtime)": [new Blob(["blob"]).stream(), { status: 202 }],
  "search params (handed to the runtime)": [new URLSearchParams({ a: "1" }), undefined],
};

const REFUSED: Record<string, Args> = {
  "status 199": [null, { status: 199 }],
  "status 600": [null, { status: 600 }],
  "status 1.5": [null, { status: 1.5 }],
  "a body on 204": ["x", { status: 204 }],
  "a body on 304": [new Uint8Array(1), { status: 304 }],
  "a bad status text": [null, { statusText: "a\nb" }],
  "a bad header name": [null, { headers: { "bad name": "1" } }],
  "a bad header value": [null, { headers: { "x-a": "1\r\n2" } }],
  "a bad header value after good ones": [null, { headers: { "x-a": "1", "x-b": "\0" } }],
  "a bad header pair": [null, { headers: [["x-a"]] as unknown as [string, string][] }],
};

describe.runIf(LIGHT_RESPONSES)("the light Response", () => {
  it.each(Object.entries(CASES))(
    "answers as the runtime's does for %s",
    async (_, [body, init]) => {
      const fresh = (): Args => [
        body instanceof ReadableStream ? new Blob(["blob"]).stream() : body,
        init,
      ];
      const light = new Light(...fresh());
      const real = new Response(...fresh());
      expect(await observe(light)).toEqual(await observe(real));
    },
  );

  it.each(Object.entries(CASES))(
    "clones and copies as the runtime's does for %s",
    async (_, [body, init]) => {
      if (body instanceof ReadableStream) return;
      const light = new Light(body, init);
      const real = new Response(body, init);
      expect(await observe(light.clone())).toEqual(await observe(real.clone()));
      expect(await observe(new Response(light.body, light))).toEqual(
        await observe(new Response(real.body, real)),
      );
    },
  );

  it.each(Object.entries(REFUSED))(
    "refuses %s with the runtime's error class",
    (_, [body, init]) => {
      let expected: unknown;
      try {
        new Response(body, init);
      } catch (error) {
        expected = (error as Error).constructor;
      }
      expect(expected).toBeDefined();
      expect(() => new Light(body, init)).toThrow(expected as ErrorConstructor);
    },
  );

  it("keeps the bytes it was given, as the runtime does, and reads json and bytes", async () => {
    const bytes = new TextEncoder().encode('{"a":1}');
    const light = new Light(bytes);
    bytes[2] = 0x62;
    expect(await light.json()).toEqual({ a: 1 });
    expect(new Uint8Array(await new Light("ab").arrayBuffer())).toEqual(new Uint8Array([97, 98]));
    await expect(light.text()).rejects.toThrow(TypeError);
  });

  it("counts the runtime's own answers as Responses and keeps its static methods", () => {
    expect(new Response("x") instanceof Light).toBe(true);
    expect(Response.json({}) instanceof Light).toBe(true);
    const json = (Light as typeof Response).json({ a: 1 }, { status: 201 });
    expect(json.status).toBe(201);
    expect(() => (Light as unknown as () => Response)()).toThrow(TypeError);
  });

  it("serves from serveFetch when installed, answers and streams included", () => {
    // In a process of its own: installing replaces the global for good.
    const script = `
      import { serveFetch } from "./src/adapters/node/index.ts";
      const server = await serveFetch((request) => {
        const path = new URL(request.url).pathname;
        if (path === "/stream") return new Response(new Blob(["streamed"]).stream());
        if (path === "/bytes") return new Response(new Uint8Array([111, 107]), { status: 201, headers: { "x-a": "1" } });
        if (path === "/record") return new Response("r", { headers: { "Content-Type": " text/html ", "X-A": "2" } });
        return new Response("light", { headers: [["set-cookie", "a=1"], ["set-cookie", "b=2"]] });
      }, { port: 0, lightResponses: true });
      const base = "http://127.0.0.1:" + server.address().port;
      const out = [];
      for (const path of ["/", "/bytes", "/record", "/stream"]) {
        const r = await fetch(base + path);
        out.push([r.status, r.headers.get("content-type"), r.headers.getSetCookie(), r.headers.get("x-a"), await r.text()]);
      }
      out.push(globalThis.Response.name, new Response("x") instanceof Response);
      console.log(JSON.stringify(out));
      server.close();
    `;
    expect(inOwnProcess(script)).toEqual([
      [200, "text/plain;charset=UTF-8", ["a=1", "b=2"], null, "light"],
      [201, null, [], "1", "ok"],
      [200, "text/html", [], "2", "r"],
      [200, null, [], null, "streamed"],
      "LightResponse",
      true,
    ]);
  });

  it("is serveFetch's default, and off when asked", () => {
    const constructorAfter = (options: string) => {
      const script = `
        import { serveFetch } from "./src/adapters/node/index.ts";
        const server = await serveFetch(() => new Response("x"), { port: 0${options} });
        const r = await fetch("http://127.0.0.1:" + server.address().port + "/");
        console.log(JSON.stringify([globalThis.Response.name, await r.text()]));
        server.close();
      `;
      return inOwnProcess(script);
    };
    expect(constructorAfter("")).toEqual(["LightResponse", "x"]);
    expect(constructorAfter(", lightResponses: false")).toEqual(["Response", "x"]);
  });

  it("takes only true or false", () => {
    expect(() =>
      toNodeListener(() => new Response(null), { lightResponses: "yes" as never }),
    ).toThrow(InvalidOptionsError);
  });
});
