import { describe, expect, it, vi } from "vitest";
import {
  ANONYMOUS,
  type Authentication,
  bindAuthentication,
  createAuthentication,
} from "../core/authentication.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Middleware } from "../core/handler.ts";
import { RoleHierarchy } from "./hierarchy.ts";
import { routes } from "./routes.ts";
import { anyRequest, match, type Rule } from "./rules.ts";

const USER = createAuthentication("uma", ["USER"]);
const STAFF = createAuthentication("sam", ["STAFF"]);
const ADMIN = createAuthentication("ada", ["ADMIN"]);

/** Runs `middleware` once; `principal` is bound first (nothing is bound when it is undefined). */
async function run(
  middleware: Middleware,
  path: string,
  principal?: Authentication,
  method = "GET",
): Promise<{ response: Response; ran: number }> {
  const request = new Request(`http://h${path}`, { method });
  if (principal !== undefined) bindAuthentication(request, principal);
  const downstream = vi.fn(async () => new Response("downstream"));
  const response = await middleware(downstream)(request);
  return { response, ran: downstream.mock.calls.length };
}

async function status(
  middleware: Middleware,
  path: string,
  principal?: Authentication,
  method = "GET",
): Promise<number> {
  return (await run(middleware, path, principal, method)).response.status;
}

describe("authz.routes: default deny", () => {
  const rules = routes([match("/public/**").permitAll()]);

  it("answers 401 problem details with WWW-Authenticate to an anonymous caller no rule covers", async () => {
    const { response, ran } = await run(rules, "/nothing", ANONYMOUS);
    expect(ran).toBe(0);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBeTruthy();
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    await expect(response.json()).resolves.toEqual({
      type: "about:blank",
      title: "Unauthorized",
      status: 401,
    });
  });

  it("answers 403 problem details without a challenge to an authenticated caller no rule covers", async () => {
    const { response, ran } = await run(rules, "/nothing", ADMIN);
    expect(ran).toBe(0);
    expect(response.status).toBe(403);
    expect(response.headers.has("www-authenticate")).toBe(false);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ type: "about:blank", title: "Forbidden", status: 403 });
    expect(text).not.toMatch(/stack|Error|at /);
  });

  it("treats a request nothing was bound to as anonymous", async () => {
    expect(await status(rules, "/nothing")).toBe(401);
  });

  it("denies everything with an empty rule list", async () => {
    const none = routes([]);
    expect(await status(none, "/", ADMIN)).toBe(403);
    expect(await status(none, "/public/x", ANONYMOUS)).toBe(401);
  });

  it("answers 400 and does not run the handler for a path it must refuse", async () => {
    const { response, ran } = await run(routes([anyRequest().permitAll()]), "/admin%2fx");
    expect(ran).toBe(0);
    expect(response.status).toBe(400);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
  });
});

describe("authz.routes: first match wins", () => {
  it("lets the first of two overlapping rules decide the requests both match", async () => {
    const rules = routes([match("GET", "/x").permitAll(), match("/x").denyAll()]);
    const { response, ran } = await run(rules, "/x", ANONYMOUS);
    expect(response.status).toBe(200);
    expect(ran).toBe(1);
    expect(await status(rules, "/x", ADMIN, "POST")).toBe(403);
  });

  it("lets a denyAll listed before an overlapping permitAll deny", async () => {
    const rules = routes([match("/x/*").denyAll(), match("/x/**").permitAll()]);
    expect(await status(rules, "/x/a", ANONYMOUS)).toBe(401);
    expect(await status(rules, "/x/a", ADMIN)).toBe(403);
    expect(await status(rules, "/x", ANONYMOUS)).toBe(200);
    expect(await status(rules, "/x/a/b", ANONYMOUS)).toBe(200);
  });

  it("does not fall through to a later, more permissive rule after a denial", async () => {
    const rules = routes([match("/admin/**").hasRole("ADMIN"), anyRequest().authenticated()]);
    expect(await status(rules, "/admin/x", USER)).toBe(403);
    expect(await status(rules, "/admin/x", ADMIN)).toBe(200);
    expect(await status(rules, "/elsewhere", USER)).toBe(200);
  });
});

describe("authz.routes: patterns", () => {
  it("matches on the path only, with wildcards", async () => {
    const rules = routes([
      match("/static/*.css").permitAll(),
      match("/api/**/public").permitAll(),
      match("/docs/**").permitAll(),
    ]);
    expect(await status(rules, "/static/site.css")).toBe(200);
    expect(await status(rules, "/static/site.js")).toBe(401);
    expect(await status(rules, "/api/v1/items/public")).toBe(200);
    expect(await status(rules, "/api/v1/items/private")).toBe(401);
    expect(await status(rules, "/docs")).toBe(200);
    expect(await status(rules, "/docs/a/b")).toBe(200);
    expect(await status(rules, "/docsx")).toBe(401);
  });

  it("ignores the query string when matching", async () => {
    const rules = routes([match("/public/**").permitAll()]);
    expect(await status(rules, "/admin/x?path=/public/y")).toBe(401);
    expect(await status(rules, "/public/y?path=/admin/x")).toBe(200);
  });

  it.each(["/users/:id", "/users/{id}"])(
    "refuses the route template %s when the rules are built, rather than let a later catch-all decide",
    (template) => {
      expect(() =>
        routes([match(template).hasRole("ADMIN"), anyRequest().authenticated()]),
      ).toThrow(/route template.*"\/users\/\*"/);
    },
  );

  it("refuses a rule after anyRequest(), which could never run", () => {
    expect(() =>
      routes([anyRequest().authenticated(), match("/admin/**").hasRole("ADMIN")]),
    ).toThrow(/can never run; put anyRequest\(\) last/);
    expect(() => routes([match("/a").permitAll(), anyRequest().denyAll()])).not.toThrow();
  });

  it("refuses a misspelt option", () => {
    expect(() => routes([], { hierachy: "A > B" } as never)).toThrow(InvalidOptionsError);
  });

  it("gives case and slash variants the decision of the plain path", async () => {
    const rules = routes([match("/admin/**").hasRole("ADMIN"), anyRequest().permitAll()]);
    for (const path of ["/ADMIN/x", "//admin/x", "/admin//x", "/admin/x/", "/%61dmin/x"]) {
      expect(await status(rules, path, USER), path).toBe(403);
    }
  });
});

describe("authz.routes: methods", () => {
  it("matches a lower-case request method against match('PATCH', ...)", async () => {
    const rules = routes([match("PATCH", "/items/**").permitAll()]);
    const request = new Request("http://h/items/1", { method: "patch" });
    // Fetch upper-cases only a few well-known methods; PATCH keeps the client's case.
    expect(request.method).toBe("patch");
    const downstream = vi.fn(async () => new Response("ok"));
    const response = await rules(downstream)(request);
    expect(response.status).toBe(200);
    expect(downstream).toHaveBeenCalledTimes(1);
  });

  it("refuses a method written in lower case, naming the upper-case one", () => {
    expect(() => routes([match("patch", "/items/**").permitAll()])).toThrow(
      /compared in upper case.*write "PATCH"/,
    );
  });

  it("does not let a method-qualified rule cover other methods", async () => {
    const rules = routes([match("GET", "/items/**").permitAll()]);
    expect(await status(rules, "/items/1", ANONYMOUS, "GET")).toBe(200);
    expect(await status(rules, "/items/1", ANONYMOUS, "POST")).toBe(401);
    expect(await status(rules, "/items/1", ANONYMOUS, "DELETE")).toBe(401);
    expect(await status(rules, "/items/1", USER, "patch")).toBe(403);
  });

  it("accepts a list of methods", async () => {
    const rules = routes([match(["GET", "HEAD"], "/items/**").permitAll()]);
    expect(await status(rules, "/items/1", ANONYMOUS, "HEAD")).toBe(200);
    expect(await status(rules, "/items/1", ANONYMOUS, "PUT")).toBe(401);
  });

  it.each([
    ["two methods in one string", "GET POST"],
    ["an empty method", ""],
    ["a method with a space", "GET "],
  ])("refuses %s", (_label, method) => {
    expect(() => match(method, "/x")).toThrow(InvalidOptionsError);
  });

  it("refuses an empty method list", () => {
    expect(() => match([], "/x")).toThrow(InvalidOptionsError);
  });

  it("refuses a bad pattern when the rule is built", () => {
    expect(() => match("admin/**")).toThrow(InvalidOptionsError);
    expect(() => match("GET", "/admin/**x")).toThrow(InvalidOptionsError);
  });
});

describe("authz.routes: rules that could never apply", () => {
  it("refuses a rule an earlier, broader rule hides, naming both and the order to write", () => {
    const build = () =>
      routes([match("/api/**").authenticated(), match("/api/admin/**").hasRole("ADMIN")]);
    expect(build).toThrow(InvalidOptionsError);
    expect(build).toThrow(
      'routes: "match(/api/admin/**) hasAnyRole(ADMIN)" can never run: "match(/api/**) authenticated" comes before it and matches every request it matches; put the narrower rule first',
    );
    expect(() =>
      routes([match("/api/admin/**").hasRole("ADMIN"), match("/api/**").authenticated()]),
    ).not.toThrow();
  });

  it.each([
    ["the same pattern twice", "/x", undefined, "/x", undefined],
    ["a one-segment rule under a broader **", "/a/**", undefined, "/a/*/b", undefined],
    ["a method rule under an any-method rule", "/a/*", undefined, "/a/b", ["DELETE"]],
    ["a method rule under a rule with more methods", "/a/**", ["GET", "POST"], "/a/b", ["POST"]],
    ["a ** that needs one segment, hidden by * then **", "/*/**", undefined, "/**/x/**", undefined],
    ["a glob under a wider glob", "/f/*.pdf", undefined, "/f/report-*.pdf", undefined],
    ["anything under /**", "/**", undefined, "/a/**/b", ["GET"]],
  ])("refuses %s", (_label, broad, broadMethods, narrow, narrowMethods) => {
    const rule = (pattern: string, methods: string[] | undefined) =>
      (methods === undefined ? match(pattern) : match(methods, pattern)).permitAll();
    expect(() => routes([rule(broad, broadMethods), rule(narrow, narrowMethods)])).toThrow(
      /can never run.*put the narrower rule first/,
    );
  });

  it.each([
    ["a method the earlier rule lacks", "/a/**", ["GET"], "/a/b", undefined],
    ["a method rule beside another method", "/a/**", ["GET"], "/a/b", ["POST"]],
    ["a path the earlier rule misses", "/a/*", undefined, "/a/**", undefined],
    ["a glob that is not narrower", "/f/*.pdf", undefined, "/f/*", undefined],
    ["a ** that allows no segment", "/*/**", undefined, "/**", undefined],
  ])("accepts a later rule with requests of its own: %s", (_l, broad, bm, narrow, nm) => {
    const rule = (pattern: string, methods: string[] | undefined) =>
      (methods === undefined ? match(pattern) : match(methods, pattern)).permitAll();
    expect(() => routes([rule(broad, bm), rule(narrow, nm)])).not.toThrow();
  });

  it("refuses anyRequest() after a rule that already matches every request", () => {
    expect(() => routes([match("/**").permitAll(), anyRequest().denyAll()])).toThrow(
      /can never run/,
    );
    expect(() => routes([match("GET", "/**").permitAll(), anyRequest().denyAll()])).not.toThrow();
  });

  it("names every hidden rule at once", () => {
    expect(() =>
      routes([match("/a/**").permitAll(), match("/a/b").denyAll(), match("/a/c").denyAll()]),
    ).toThrow(/match\(\/a\/b\)[^\n]*\n[^\n]*match\(\/a\/c\)/);
  });

  it.each([
    ["/files/*path", '"/files/**"'],
    ["/*splat", '"/**"'],
    ["/api/(.*)", '"/api/**"'],
    ["/api/:id(.*)", '"/api/*"'],
    ["/c++", "regular-expression or glob syntax"],
    ["/files/{a,b}", "one rule for each alternative"],
    ["/files/[abc].txt", "regular-expression or glob syntax"],
    ["/a|b", "regular-expression or glob syntax"],
    ["/users/<id>", "route template"],
    ["/caf%C3%A9", "write the character itself"],
    ["/a;b", "could never match"],
  ])("refuses the pattern %s, saying what to write", (pattern, advice) => {
    expect(() => routes([match(pattern).denyAll(), anyRequest().permitAll()])).toThrow(advice);
  });

  it.each([
    ["DELET", 'write "DELETE"'],
    ["GTE", 'write "GET"'],
    ["get", 'write "GET"'],
    ["PROPFIND", 'extensionMethods: ["PROPFIND"]'],
    ["propfind", 'extensionMethods: ["PROPFIND"]'],
  ])("refuses the method %s, saying what to write", (method, advice) => {
    expect(() =>
      routes([match(method, "/items/**").hasRole("ADMIN"), anyRequest().permitAll()]),
    ).toThrow(advice);
  });

  it("accepts an extension method the rule set declares, and matches it", async () => {
    const rules = routes(
      [match("PROPFIND", "/dav/**").hasRole("ADMIN"), anyRequest().permitAll()],
      {
        extensionMethods: ["PROPFIND"],
      },
    );
    expect(await status(rules, "/dav/x", USER, "PROPFIND")).toBe(403);
    expect(await status(rules, "/dav/x", ADMIN, "PROPFIND")).toBe(200);
  });

  it.each([
    ["a lower-case name", ["propfind"]],
    ["a name that is not a token", ["PROP FIND"]],
    ["not an array", "PROPFIND"],
  ])("refuses extensionMethods holding %s", (_label, extensionMethods) => {
    expect(() => routes([], { extensionMethods } as never)).toThrow(InvalidOptionsError);
  });

  it("refuses the methods option under another name", () => {
    expect(() => routes([], { methods: ["PROPFIND"] } as never)).toThrow(
      /unknown option "methods"/,
    );
  });
});

describe("authz.routes: access checks", () => {
  it("permitAll admits anonymous callers", async () => {
    expect(await status(routes([anyRequest().permitAll()]), "/x", ANONYMOUS)).toBe(200);
  });

  it("denyAll denies even an administrator", async () => {
    expect(await status(routes([anyRequest().denyAll()]), "/x", ADMIN)).toBe(403);
  });

  it("authenticated admits any signed-in principal and refuses anonymous ones", async () => {
    const rules = routes([anyRequest().authenticated()]);
    expect(await status(rules, "/x", USER)).toBe(200);
    expect(await status(rules, "/x", ANONYMOUS)).toBe(401);
  });

  it("authenticated refuses a principal whose credentials were not verified", async () => {
    const unverified: Authentication = {
      name: "x",
      authorities: ["ADMIN"],
      authenticated: false,
      anonymous: false,
    };
    expect(await status(routes([anyRequest().authenticated()]), "/x", unverified)).toBe(401);
    expect(await status(routes([anyRequest().hasRole("ADMIN")]), "/x", unverified)).toBe(401);
  });

  it("hasAnyRole and hasAnyAuthority admit holders of any listed name", async () => {
    const roles = routes([anyRequest().hasAnyRole("STAFF", "ADMIN")]);
    expect(await status(roles, "/x", STAFF)).toBe(200);
    expect(await status(roles, "/x", USER)).toBe(403);
    const authorities = routes([anyRequest().hasAnyAuthority("reports:read", "reports:write")]);
    expect(await status(authorities, "/x", createAuthentication("r", ["reports:write"]))).toBe(200);
    expect(await status(authorities, "/x", USER)).toBe(403);
  });

  it("access never calls the custom check for anonymous callers", async () => {
    const check = vi.fn(() => true);
    const rules = routes([anyRequest().access(check)]);
    expect(await status(rules, "/x", ANONYMOUS)).toBe(401);
    expect(check).not.toHaveBeenCalled();
    expect(await status(rules, "/x", USER)).toBe(200);
    expect(check).toHaveBeenCalledWith(USER);
  });

  it("access denies when the check returns a truthy value other than true", async () => {
    const rules = routes([anyRequest().access(() => "yes" as unknown as boolean)]);
    expect(await status(rules, "/x", USER)).toBe(403);
  });

  it.each([
    ["hasRole('')", () => anyRequest().hasRole("")],
    ["hasRole('  ')", () => anyRequest().hasRole("  ")],
    ["hasAnyRole()", () => anyRequest().hasAnyRole()],
    ["hasAuthority('')", () => anyRequest().hasAuthority("")],
    ["hasAnyAuthority()", () => anyRequest().hasAnyAuthority()],
    ["access(non-function)", () => anyRequest().access(1 as unknown as () => boolean)],
  ])("refuses %s when the rule is built", (_label, build) => {
    expect(build).toThrow(InvalidOptionsError);
  });
});

describe("authz.routes: role hierarchy", () => {
  const rules = (hierarchy?: string | Record<string, string[]>) =>
    routes(
      [
        match("/staff/**").hasRole("STAFF"),
        match("/users/**").hasRole("USER"),
        match("/audit/**").hasAuthority("STAFF"),
        match("/ops/**").hasAnyAuthority("STAFF"),
      ],
      hierarchy === undefined ? {} : { hierarchy },
    );

  it("lets ADMIN pass hasRole('STAFF') and hasRole('USER') under ADMIN > STAFF > USER", async () => {
    const withHierarchy = rules("ADMIN > STAFF > USER");
    expect(await status(withHierarchy, "/staff/x", ADMIN)).toBe(200);
    expect(await status(withHierarchy, "/users/x", ADMIN)).toBe(200);
    expect(await status(withHierarchy, "/users/x", STAFF)).toBe(200);
  });

  it("never lets a lower role pass a higher role's rule", async () => {
    const withHierarchy = rules("ADMIN > STAFF > USER");
    expect(await status(withHierarchy, "/staff/x", USER)).toBe(403);
  });

  it("keeps hasAuthority literal even with a hierarchy", async () => {
    const withHierarchy = rules("ADMIN > STAFF > USER");
    expect(await status(withHierarchy, "/audit/x", ADMIN)).toBe(403);
    expect(await status(withHierarchy, "/ops/x", ADMIN)).toBe(403);
    expect(await status(withHierarchy, "/audit/x", STAFF)).toBe(200);
  });

  it("compares roles literally without a hierarchy", async () => {
    const literal = rules();
    expect(await status(literal, "/staff/x", ADMIN)).toBe(403);
    expect(await status(literal, "/staff/x", STAFF)).toBe(200);
  });

  it("accepts the record form and a RoleHierarchy instance", async () => {
    expect(await status(rules({ ADMIN: ["STAFF"], STAFF: ["USER"] }), "/users/x", ADMIN)).toBe(200);
    const instance = routes([match("/staff/**").hasRole("STAFF")], {
      hierarchy: RoleHierarchy.parse("ADMIN > STAFF"),
    });
    expect(await status(instance, "/staff/x", ADMIN)).toBe(200);
  });

  it.each([
    ["a string cycle", "ADMIN > STAFF > ADMIN"],
    ["a malformed string", "ADMIN > > USER"],
    ["a lone role", "ADMIN"],
  ])("throws InvalidOptionsError at build time for %s", (_label, hierarchy) => {
    expect(() => routes([anyRequest().hasRole("ADMIN")], { hierarchy })).toThrow(
      InvalidOptionsError,
    );
  });

  it("throws InvalidOptionsError at build time for a record cycle", () => {
    expect(() =>
      routes([anyRequest().hasRole("ADMIN")], { hierarchy: { A: ["B"], B: ["C"], C: ["A"] } }),
    ).toThrow(InvalidOptionsError);
  });
});

describe("authz.routes: options", () => {
  it("refuses a non-array rule list", () => {
    expect(() => routes(match("/x").permitAll() as unknown as Rule[])).toThrow(InvalidOptionsError);
  });

  it("refuses rule objects not made by match() or anyRequest()", () => {
    const fake = { description: "fake", matches: () => true } as unknown as Rule;
    expect(() => routes([fake])).toThrow(InvalidOptionsError);
    expect(() => routes([undefined as unknown as Rule])).toThrow(InvalidOptionsError);
  });

  it("is not affected when the caller mutates the rule array afterwards", async () => {
    const list: Rule[] = [anyRequest().denyAll()];
    const rules = routes(list);
    list[0] = anyRequest().permitAll();
    expect(await status(rules, "/x", ANONYMOUS)).toBe(401);
  });
});
