import { IncomingMessage } from "node:http";
import { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { buildRequest, isValidHost, parsesSurely, splitTarget } from "./request.ts";

function message(
  init: {
    method?: string;
    url?: string;
    headers?: Record<string, string | string[]>;
    tls?: boolean;
  } = {},
): IncomingMessage {
  const socket = new Socket();
  if (init.tls) Object.defineProperty(socket, "encrypted", { value: true });
  const m = new IncomingMessage(socket);
  m.method = init.method ?? "GET";
  m.url = init.url ?? "/";
  m.headers = { host: "app.example", ...init.headers } as IncomingMessage["headers"];
  return m;
}

describe("splitTarget", () => {
  it("cuts the path at the query or the fragment, as routers do", () => {
    expect(splitTarget("/a/b?x=1#f")).toEqual({ path: "/a/b", rest: "?x=1#f" });
    expect(splitTarget("/admin#/public")).toEqual({ path: "/admin", rest: "#/public" });
    expect(splitTarget("//evil.example/x")).toEqual({ path: "//evil.example/x", rest: "" });
  });

  it("refuses targets that are not origin-form", () => {
    expect(splitTarget("http://evil.example/x")).toBeUndefined();
    expect(splitTarget("*")).toBeUndefined();
    expect(splitTarget("")).toBeUndefined();
  });
});

describe("isValidHost", () => {
  it.each([
    "app.example",
    "app.example:8080",
    "127.0.0.1:3000",
    "[::1]:443",
    "localhost",
    "a_b.internal",
  ])("accepts %s", (host) => expect(isValidHost(host)).toBe(true));
  it.each([
    "evil.example/x",
    "user@app.example",
    "app.example?x",
    "app.example#x",
    "app\\example",
    "app example",
    "",
    "[::1",
    "app.example:80:80",
    "app.example:",
    `${"a".repeat(300)}.example`,
  ])("refuses %j", (host) => expect(isValidHost(host)).toBe(false));
});

describe("buildRequest", () => {
  it("joins scheme, host and target as strings: a leading // stays in the path", () => {
    const built = buildRequest(message({ url: "//evil.example/x?y=1" }), "//evil.example/x?y=1");
    const url = new URL(built?.request.url ?? "");
    expect(url.host).toBe("app.example");
    expect(url.pathname).toBe("//evil.example/x");
    expect(built?.rawPath).toBe("//evil.example/x");
  });

  it("keeps the method, the headers Node parsed, and https from a TLS socket", () => {
    const built = buildRequest(
      message({
        method: "PATCH",
        url: "/p",
        tls: true,
        headers: { "x-a": "1", cookie: "a=1; b=2" },
      }),
      "/p",
    );
    expect(built?.request.method).toBe("PATCH");
    expect(built?.request.url).toBe("https://app.example/p");
    expect(built?.request.headers.get("x-a")).toBe("1");
    expect(built?.request.headers.get("cookie")).toBe("a=1; b=2");
  });

  it("takes array values and skips HTTP/2 pseudo-headers", () => {
    const built = buildRequest(message({ headers: { ":path": "/x", "x-list": ["a", "b"] } }), "/x");
    expect(built?.request.headers.get("x-list")).toBe("a, b");
    expect([...(built?.request.headers.keys() ?? [])]).not.toContain(":path");
  });

  it("uses localhost without a Host header and refuses a Host that is not a plain host", () => {
    const m = message();
    delete m.headers.host;
    expect(buildRequest(m, "/")?.request.url).toBe("http://localhost/");
    expect(buildRequest(message({ headers: { host: "evil.example/x" } }), "/")).toBeUndefined();
    expect(buildRequest(message({ headers: { host: "a@b" } }), "/")).toBeUndefined();
  });

  it("checks each new Host afresh, whatever the request before it carried", () => {
    const url = (host: string) =>
      buildRequest(message({ headers: { host } }), "/p", false, { lazy: true })?.request.url;
    expect(url("a.example")).toBe("http://a.example/p");
    expect(url("a.example/x")).toBeUndefined();
    expect(url("a.example")).toBe("http://a.example/p");
    // Valid but not plain: serialized by the URL parser, not joined as sent.
    expect(url("B\u00fccher.example")).toBeUndefined();
    expect(url("EXAMPLE.com:080")).toBe("http://example.com/p");
    expect(url("EXAMPLE.com:080")).toBe("http://example.com/p");
    expect(url("0x7f.1")).toBe("http://127.0.0.1/p");
  });

  it("refuses absolute-form targets and methods Fetch forbids", () => {
    expect(buildRequest(message(), "http://app.example/")).toBeUndefined();
    expect(buildRequest(message({ method: "TRACE" }), "/")).toBeUndefined();
    expect(buildRequest(message({ method: "CONNECT" }), "/")).toBeUndefined();
  });

  it("gives a lazy body only to requests that announce one and may carry one", () => {
    expect(
      buildRequest(message({ method: "POST", headers: { "content-length": "3" } }), "/")?.tap,
    ).toBeDefined();
    expect(
      buildRequest(message({ method: "POST", headers: { "transfer-encoding": "chunked" } }), "/")
        ?.tap,
    ).toBeDefined();
    const empty = buildRequest(
      message({ method: "POST", headers: { "content-length": "0" } }),
      "/",
    );
    expect(empty?.tap).toBeUndefined();
    expect(empty?.request.body).toBeNull();
    const get = buildRequest(message({ headers: { "content-length": "3" } }), "/");
    expect(get?.tap).toBeUndefined();
    expect(get?.request.body).toBeNull();
  });
});

describe("parsesSurely", () => {
  const hosts = [
    "app.example",
    "APP.Example:80",
    "a_b.internal:65535",
    "localhost.",
    "127.0.0.1",
    "255.255.255.255:8080",
    "x-1",
    "a.0x1f",
    "0x1f",
    "a.123",
    "1.2.3.256",
    "010.0.0.1",
    "xn--a.example",
    "a.XN--zz",
    "a.example:65536",
    "a.example:99999",
    "[::1]:8080",
    "[zz]",
    "999999999999",
    "1.2.3",
    "a..b",
    "-",
  ];
  it.each(hosts)("%s: never claims a host the URL parser refuses", (host) => {
    if (parsesSurely(host)) expect(URL.canParse(`http://${host}/x`)).toBe(true);
  });

  it("claims the hosts servers see every day", () => {
    for (const host of ["app.example", "localhost:3000", "127.0.0.1:8080", "a_b.internal"])
      expect(parsesSurely(host)).toBe(true);
  });

  it("leaves hosts the parser could refuse to the parser", () => {
    for (const host of ["a.0x1f", "a.123", "1.2.3.256", "xn--a.example", "a.example:65536"])
      expect(parsesSurely(host)).toBe(false);
  });
});
