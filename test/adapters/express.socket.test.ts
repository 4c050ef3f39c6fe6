import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { captureWarnings } from "../warnings.ts";
import { startExpress } from "./apps/express.ts";
import { call, csrfSession } from "./client.ts";
import { basic, makeKit, SESSION_COOKIE, type Served } from "./kit.ts";
import { adapterSuite } from "./suite.ts";

adapterSuite({ name: "Express", start: (kit) => startExpress(kit), routesOnRawPath: true });

describe("Express with body parsers mounted before the adapter", () => {
  const warnings = captureWarnings();
  const kit = makeKit();
  let served: Served;
  beforeAll(async () => {
    served = await startExpress(kit, { parsersFirst: true });
  });
  afterAll(() => served.close());

  it("passes a header token and the route still gets the parsed body", async () => {
    const { cookie, token } = await csrfSession(served.url, SESSION_COOKIE);
    const response = await call(served.url, "/api/echo", {
      method: "POST",
      headers: {
        authorization: basic("ada"),
        cookie,
        "x-csrf-token": token,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "a=1&b=2",
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ name: "ada", body: { a: "1", b: "2" } });
    // The set-up mistake is named once, with the fix.
    expect(warnings.map((w) => w.code)).toEqual(["PORTCULLIS_BODY_ALREADY_READ"]);
    expect(warnings[0]?.message).toContain("after the chain");
  });

  it("refuses a form-field token it can no longer read, without hanging", async () => {
    // The parser consumed the body before the chain ran: the chain sees none, fails closed.
    const { cookie, token } = await csrfSession(served.url, SESSION_COOKIE);
    const before = kit.hits();
    const response = await call(served.url, "/api/echo", {
      method: "POST",
      headers: {
        authorization: basic("ada"),
        cookie,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ _csrf: token, a: "1" }).toString(),
    });
    expect(response.status).toBe(403);
    expect(kit.hits()).toBe(before);
  });
});

describe("Express answers through the adapter", () => {
  const kit = makeKit();
  let served: Served;
  beforeAll(async () => {
    served = await startExpress(kit);
  });
  afterAll(() => served.close());

  it("carry no X-Powered-By, passed or denied", async () => {
    const passed = await call(served.url, "/public/hello");
    expect(passed.status).toBe(200);
    expect(passed.headers.get("x-powered-by")).toBeNull();
    const denied = await call(served.url, "/me");
    expect(denied.status).toBe(401);
    expect(denied.headers.get("x-powered-by")).toBeNull();
  });
});
