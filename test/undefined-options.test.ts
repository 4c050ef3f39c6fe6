/**
 * Options typed `?: T | undefined` (so a project compiled with
 * exactOptionalPropertyTypes may pass `x ? value : undefined`) must behave at
 * run time as if the key were left out: built without a throw, same answers.
 */
import {
  authz,
  basicAuth,
  createPasswordEncoder,
  csrf,
  login,
  newHandler,
  passwordCredentials,
  sessions,
} from "portcullis";
import { describe, expect, it } from "vitest";

const undefinedFor = (keys: readonly string[]) =>
  Object.fromEntries(keys.map((key) => [key, undefined]));

const credentials = passwordCredentials({
  findUser: () => undefined,
  passwordEncoder: createPasswordEncoder(),
});

describe("options given as undefined", () => {
  it("build as if left out", () => {
    expect(() =>
      sessions(
        undefinedFor([
          "store",
          "cookieName",
          "secure",
          "sameSite",
          "idleTimeoutMs",
          "anonymousIdleTimeoutMs",
          "absoluteTimeoutMs",
          "touchIntervalMs",
          "storeTimeoutMs",
          "onStoreError",
          "now",
        ]),
      ),
    ).not.toThrow();
    expect(() => basicAuth({ credentials, ...undefinedFor(["realm", "required"]) })).not.toThrow();
    expect(() =>
      login({
        credentials,
        ...undefinedFor([
          "loginPath",
          "logoutPath",
          "successRedirect",
          "failureRedirect",
          "logoutRedirect",
          "maxBodyBytes",
        ]),
      }),
    ).not.toThrow();
    expect(() =>
      csrf(
        undefinedFor([
          "headerName",
          "parameterName",
          "tokenPath",
          "trustedOrigins",
          "alwaysProtect",
          "maxFormBytes",
        ]),
      ),
    ).not.toThrow();
  });

  it("leave newHandler's chain as it is without them", async () => {
    const handler = newHandler(() => new Response("ok"), {
      ...undefinedFor([
        "headers",
        "cors",
        "rateLimit",
        "session",
        "authentication",
        "csrf",
        "login",
        "browserDenials",
        "onError",
        "clientAddress",
        "trustProxy",
        "forwardedHeader",
      ]),
      authorization: authz.routes([authz.anyRequest().permitAll()]),
    });
    const plain = newHandler(() => new Response("ok"), {
      authorization: authz.routes([authz.anyRequest().permitAll()]),
    });
    const [a, b] = await Promise.all([
      handler(new Request("http://localhost/x")),
      plain(new Request("http://localhost/x")),
    ]);
    expect(a.status).toBe(200);
    expect([...a.headers.keys()]).toEqual([...b.headers.keys()]);
  });
});
