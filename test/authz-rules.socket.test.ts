import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { afterAll, describe, expect, it } from "vitest";
import type { Rule } from "../src/authz/rules.ts";
import { authz, InvalidOptionsError } from "../src/index.ts";
import { basic, basicChain } from "./basic-chain.ts";

const { anyRequest, match } = authz;
const closers: Array<() => void> = [];
afterAll(() => {
  for (const close of closers) close();
});

/** Serves `rules` in front of a handler that answers 200 with the method and path. */
async function serveRules(rules: readonly Rule[]): Promise<string> {
  const handler = basicChain(rules).wrap(
    (request) => new Response(`${request.method} ${new URL(request.url).pathname}`),
  );
  return new Promise((resolve) => {
    const server = serve({ fetch: handler, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) =>
      resolve(`http://127.0.0.1:${info.port}`),
    );
    closers.push(() => server.close());
  });
}

/**
 * What a USER gets for `method path` from a server configured with `rules`, or
 * "refused" when the configuration cannot be built.
 */
async function asUser(rules: () => Rule[], method: string, path: string): Promise<number | string> {
  let base: string;
  try {
    base = await serveRules(rules());
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidOptionsError);
    return "refused";
  }
  return (await fetch(`${base}${path}`, { method, headers: { authorization: basic("user") } }))
    .status;
}

describe("rules that could never apply, over a real server", () => {
  const cases: [string, () => Rule[], string, string, RegExp, () => Rule[]][] = [
    [
      "a broader rule before the admin rule",
      () => [match("/api/**").authenticated(), match("/api/admin/**").hasRole("ADMIN")],
      "GET",
      "/api/admin/users",
      /match\(\/api\/admin\/\*\*\).*can never run.*match\(\/api\/\*\*\).*put the narrower rule first/,
      () => [match("/api/admin/**").hasRole("ADMIN"), match("/api/**").authenticated()],
    ],
    [
      "an Express 5 wildcard",
      () => [match("/files/*path").hasRole("ADMIN"), anyRequest().authenticated()],
      "GET",
      "/files/a/b",
      /"\/files\/\*\*"/,
      () => [match("/files/**").hasRole("ADMIN"), anyRequest().authenticated()],
    ],
    [
      "a misspelt method",
      () => [match("DELET", "/items/**").hasRole("ADMIN"), anyRequest().authenticated()],
      "DELETE",
      "/items/1",
      /write "DELETE"/,
      () => [match("DELETE", "/items/**").hasRole("ADMIN"), anyRequest().authenticated()],
    ],
  ];

  it.each(cases)(
    "%s: the configuration that let a USER through is refused when built",
    async (_label, rules, method, path, advice) => {
      expect(await asUser(rules, method, path)).toBe("refused");
      expect(() => basicChain(rules())).toThrow(advice);
    },
  );

  it.each(cases)(
    "%s: the configuration the message advises keeps the USER out and lets the ADMIN in",
    async (_label, _rules, method, path, _advice, advised) => {
      expect(await asUser(advised, method, path)).toBe(403);
      const base = await serveRules(advised());
      const admin = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: basic("admin") },
      });
      expect(admin.status).toBe(200);
      expect(await admin.text()).toBe(`${method} ${path}`);
    },
  );
});
