import {
  type Authentication,
  authz,
  bindAuthentication,
  bindValue,
  createAuthentication,
  type Handler,
  newHandler,
} from "portcullis";
import { RAW_PATH } from "portcullis/core";
import { describe, expect, it } from "vitest";
import { PROTECTED_PATH_VARIANTS } from "./path-variants.ts";

const { anyRequest, match, routes } = authz;

const USER = createAuthentication("uma", ["USER"]);
const ADMIN = createAuthentication("ada", ["ADMIN"]);
const CALLERS: readonly [string, Authentication | undefined][] = [
  ["anonymous", undefined],
  ["USER", USER],
];

/** The chain of the brief, in front of a handler that counts how often it ran. */
function protectedApp(principal: Authentication | undefined): {
  handler: Handler;
  ran: () => number;
} {
  let count = 0;
  const handler = newHandler(
    () => {
      count++;
      return new Response("downstream");
    },
    {
      authentication:
        (next) =>
        async (request, ...rest) => {
          if (principal !== undefined) bindAuthentication(request, principal);
          return next(request, ...rest);
        },
      authorization: routes([
        match("/public/**").permitAll(),
        match("/admin/**").hasRole("ADMIN"),
        anyRequest().authenticated(),
      ]),
      onError: () => {},
    },
  );
  return { handler, ran: () => count };
}

/** A request as an adapter hands it over: the raw path bound, the URL a harmless public one. */
function rawPathRequest(rawPath: string): Request {
  // If the raw path were ignored, /public/ok would be permitted and the test would see a 200.
  const request = new Request("http://h/public/ok");
  bindValue(request, RAW_PATH, rawPath);
  return request;
}

describe("protected path variants through the whole chain", () => {
  it("admits ADMIN to the plain path, and refuses USER and anonymous callers", async () => {
    const admin = protectedApp(ADMIN);
    expect((await admin.handler(new Request("http://h/admin/x"))).status).toBe(200);
    expect(admin.ran()).toBe(1);

    const user = protectedApp(USER);
    expect((await user.handler(new Request("http://h/admin/x"))).status).toBe(403);
    const anonymous = protectedApp(undefined);
    const response = await anonymous.handler(new Request("http://h/admin/x"));
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBeTruthy();
    expect(user.ran() + anonymous.ran()).toBe(0);
  });

  it("still permits the public area and the root to those the rules allow", async () => {
    expect((await protectedApp(undefined).handler(new Request("http://h/public/ok"))).status).toBe(
      200,
    );
    expect((await protectedApp(undefined).handler(new Request("http://h/"))).status).toBe(401);
    expect((await protectedApp(USER).handler(new Request("http://h/"))).status).toBe(200);
  });

  describe.each(CALLERS)("for a %s caller", (_caller, principal) => {
    it.each(PROTECTED_PATH_VARIANTS.filter((v) => v.urlParserGives === undefined))(
      "never runs the handler for $label as a Fetch URL",
      async ({ raw }) => {
        const app = protectedApp(principal);
        const response = await app.handler(new Request(`http://h${raw}`));
        expect([400, 401, 403]).toContain(response.status);
        expect(app.ran()).toBe(0);
      },
    );

    it.each(PROTECTED_PATH_VARIANTS)(
      "never runs the handler for $label as a raw path",
      async ({ raw, normalized }) => {
        const app = protectedApp(principal);
        const response = await app.handler(rawPathRequest(raw));
        const denial = principal === undefined ? 401 : 403;
        expect(response.status).toBe(normalized === undefined ? 400 : denial);
        expect(app.ran()).toBe(0);
      },
    );
  });

  it.each(PROTECTED_PATH_VARIANTS.filter((v) => v.urlParserGives !== undefined))(
    "decides $label on the path the URL parser hands the router ($urlParserGives)",
    async ({ raw, urlParserGives }) => {
      const seen: string[] = [];
      const handler = newHandler(
        (request) => {
          seen.push(new URL(request.url).pathname);
          return new Response("public");
        },
        {
          authorization: routes([
            match("/public/**").permitAll(),
            match("/admin/**").hasRole("ADMIN"),
          ]),
        },
      );
      const response = await handler(new Request(`http://h${raw}`));
      expect(response.status).toBe(200);
      // The handler runs for the public path it was authorized for, never for /admin/x.
      expect(seen).toEqual([urlParserGives]);
    },
  );

  it.each(PROTECTED_PATH_VARIANTS)(
    "gives ADMIN the plain path's decision for $label as a raw path, or 400",
    async ({ raw, normalized }) => {
      const app = protectedApp(ADMIN);
      const response = await app.handler(rawPathRequest(raw));
      expect(response.status).toBe(normalized === undefined ? 400 : 200);
      expect(app.ran()).toBe(normalized === undefined ? 0 : 1);
    },
  );

  it("answers 400 with problem details that do not echo the path", async () => {
    const app = protectedApp(undefined);
    const response = await app.handler(rawPathRequest("/admin%2f<script>"));
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(await response.text()).not.toContain("script");
  });
});
