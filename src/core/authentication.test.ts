import { describe, expect, it } from "vitest";
import {
  ANONYMOUS,
  AUTHENTICATION,
  authenticationFrom,
  bindAuthentication,
  createAuthentication,
  isAuthenticated,
  mustAuthentication,
} from "./authentication.ts";
import { Context } from "./context.ts";
import { NoAuthenticationError, PortcullisError } from "./errors.ts";

describe("createAuthentication", () => {
  it("makes a frozen, authenticated, non-anonymous principal with unique authorities", () => {
    const auth = createAuthentication("alice", ["USER", "USER", "STAFF"]);
    expect(auth).toMatchObject({ name: "alice", authenticated: true, anonymous: false });
    expect(auth.authorities).toEqual(["USER", "STAFF"]);
    expect(Object.isFrozen(auth)).toBe(true);
    expect(Object.isFrozen(auth.authorities)).toBe(true);
  });

  it("carries details only when given", () => {
    expect("details" in createAuthentication("a")).toBe(false);
    expect(createAuthentication("a", [], { id: 7 }).details).toEqual({ id: 7 });
  });
});

describe("ANONYMOUS", () => {
  it("is frozen and neither authenticated nor holding authorities", () => {
    expect(Object.isFrozen(ANONYMOUS)).toBe(true);
    expect(ANONYMOUS.authenticated).toBe(false);
    expect(ANONYMOUS.anonymous).toBe(true);
    expect(ANONYMOUS.authorities).toEqual([]);
  });
});

describe("mustAuthentication", () => {
  it("throws NoAuthenticationError with code ERR_NO_AUTHENTICATION when nothing is bound", () => {
    const request = new Request("http://h/");
    let caught: unknown;
    try {
      mustAuthentication(request);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(NoAuthenticationError);
    expect(caught).toBeInstanceOf(PortcullisError);
    expect((caught as NoAuthenticationError).code).toBe("ERR_NO_AUTHENTICATION");
    expect((caught as NoAuthenticationError).name).toBe("NoAuthenticationError");
  });

  it("throws for the empty context too", () => {
    expect(() => mustAuthentication(Context.empty)).toThrow(NoAuthenticationError);
  });

  it("returns the principal bound to a request", () => {
    const request = new Request("http://h/");
    const alice = createAuthentication("alice", ["USER"]);
    bindAuthentication(request, alice);
    expect(mustAuthentication(request)).toBe(alice);
    expect(authenticationFrom(request)?.name).toBe("alice");
  });

  it("returns the anonymous principal when the chain bound it (it is bound, just not authenticated)", () => {
    const request = new Request("http://h/");
    bindAuthentication(request, ANONYMOUS);
    expect(mustAuthentication(request)).toBe(ANONYMOUS);
  });

  it("reads a Context as well as a request", () => {
    const bob = createAuthentication("bob");
    expect(mustAuthentication(Context.empty.with(AUTHENTICATION, bob))).toBe(bob);
  });
});

describe("isAuthenticated", () => {
  it("is false for a request nothing was bound to", () => {
    expect(isAuthenticated(new Request("http://h/"))).toBe(false);
  });

  it("is false for undefined", () => {
    expect(isAuthenticated(undefined)).toBe(false);
  });

  it("is false for ANONYMOUS, bound or passed directly", () => {
    const request = new Request("http://h/");
    bindAuthentication(request, ANONYMOUS);
    expect(isAuthenticated(request)).toBe(false);
    expect(isAuthenticated(ANONYMOUS)).toBe(false);
  });

  it("is false for a principal that claims to be authenticated and anonymous at once", () => {
    const odd = { name: "x", authorities: [], authenticated: true, anonymous: true };
    expect(isAuthenticated(odd)).toBe(false);
  });

  it("is false for a non-anonymous principal whose credentials were not verified", () => {
    const request = new Request("http://h/");
    bindAuthentication(request, {
      name: "pending",
      authorities: ["ADMIN"],
      authenticated: false,
      anonymous: false,
    });
    expect(isAuthenticated(request)).toBe(false);
  });

  it("is true for an authenticated principal, bound or passed directly", () => {
    const alice = createAuthentication("alice");
    const request = new Request("http://h/");
    bindAuthentication(request, alice);
    expect(isAuthenticated(request)).toBe(true);
    expect(isAuthenticated(alice)).toBe(true);
  });
});
