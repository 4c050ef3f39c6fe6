import { describe, expect, it, vi } from "vitest";
import { Chain } from "../chain/chain.ts";
import {
  ANONYMOUS,
  type Authentication,
  bindAuthentication,
  createAuthentication,
} from "../core/authentication.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Middleware } from "../core/handler.ts";
import { requireAuthenticated, requireAuthority, requireRole } from "./require.ts";
import { routes } from "./routes.ts";
import { anyRequest } from "./rules.ts";

const ADMIN = createAuthentication("ada", ["ADMIN"]);
const STAFF = createAuthentication("sam", ["STAFF"]);

async function run(guard: Middleware, principal?: Authentication) {
  const request = new Request("http://h/area");
  if (principal !== undefined) bindAuthentication(request, principal);
  const downstream = vi.fn(async () => new Response("secret"));
  const response = await guard(downstream)(request);
  return { response, ran: downstream.mock.calls.length };
}

describe("requireAuthenticated", () => {
  it("lets an authenticated principal through", async () => {
    const { response, ran } = await run(requireAuthenticated(), STAFF);
    expect(response.status).toBe(200);
    expect(ran).toBe(1);
  });

  it.each([
    ["the anonymous principal", ANONYMOUS],
    ["an unbound request", undefined],
  ])("answers 401 with a challenge to %s, without running the handler", async (_l, principal) => {
    const { response, ran } = await run(requireAuthenticated(), principal);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBeTruthy();
    expect(await response.text()).not.toContain("secret");
    expect(ran).toBe(0);
  });
});

describe("requireRole", () => {
  it("lets a holder of the role through", async () => {
    const { response, ran } = await run(requireRole("STAFF"), STAFF);
    expect(response.status).toBe(200);
    expect(ran).toBe(1);
  });

  it("denies an ADMIN with 403 on requireRole('STAFF'): no hierarchy is consulted", async () => {
    const { response, ran } = await run(requireRole("STAFF"), ADMIN);
    expect(response.status).toBe(403);
    expect(response.headers.has("www-authenticate")).toBe(false);
    expect(ran).toBe(0);
  });

  it("stays literal behind a hierarchy-aware rule set that already admitted the ADMIN", async () => {
    const downstream = vi.fn(async () => new Response("staff area"));
    const handler = new Chain(
      routes([anyRequest().hasRole("STAFF")], { hierarchy: "ADMIN > STAFF > USER" }),
      requireRole("STAFF"),
    ).wrap(downstream);
    const request = new Request("http://h/staff");
    bindAuthentication(request, ADMIN);
    const response = await handler(request);
    expect(response.status).toBe(403);
    expect(downstream).not.toHaveBeenCalled();
  });

  it("answers 401 to anonymous callers and to unbound requests", async () => {
    for (const principal of [ANONYMOUS, undefined]) {
      const { response, ran } = await run(requireRole("STAFF"), principal);
      expect(response.status).toBe(401);
      expect(ran).toBe(0);
    }
  });

  it("answers 401 to a principal holding the role whose credentials were not verified", async () => {
    const unverified: Authentication = {
      name: "x",
      authorities: ["STAFF"],
      authenticated: false,
      anonymous: false,
    };
    const { response, ran } = await run(requireRole("STAFF"), unverified);
    expect(response.status).toBe(401);
    expect(ran).toBe(0);
  });

  it("compares case-sensitively", async () => {
    const { response } = await run(requireRole("STAFF"), createAuthentication("s", ["staff"]));
    expect(response.status).toBe(403);
  });

  it.each(["", "   "])("throws InvalidOptionsError for the name %j", (name) => {
    expect(() => requireRole(name)).toThrow(InvalidOptionsError);
  });
});

describe("requireAuthority", () => {
  const reader = createAuthentication("r", ["reports:read"]);

  it("lets a holder of the authority through", async () => {
    expect((await run(requireAuthority("reports:read"), reader)).ran).toBe(1);
  });

  it("denies others with 403 and anonymous callers with 401", async () => {
    const denied = await run(requireAuthority("reports:write"), reader);
    expect(denied.response.status).toBe(403);
    expect(denied.ran).toBe(0);
    const anonymous = await run(requireAuthority("reports:read"), ANONYMOUS);
    expect(anonymous.response.status).toBe(401);
    expect(anonymous.ran).toBe(0);
  });

  it("does not treat a role as implying an authority", async () => {
    expect((await run(requireAuthority("STAFF"), ADMIN)).response.status).toBe(403);
  });

  it("throws InvalidOptionsError for an empty name", () => {
    expect(() => requireAuthority("")).toThrow(InvalidOptionsError);
    expect(() => requireAuthority(undefined as unknown as string)).toThrow(InvalidOptionsError);
  });
});
