import { describe, expect, it, vi } from "vitest";
import {
  ANONYMOUS,
  AUTHENTICATION,
  type Authentication,
  bindAuthentication,
  createAuthentication,
} from "../core/authentication.ts";
import { Context } from "../core/context.ts";
import {
  AccessDeniedError,
  AuthenticationRequiredError,
  InvalidOptionsError,
} from "../core/errors.ts";
import { guard } from "./guard.ts";

interface Doc {
  readonly owner: string;
}

function requestAs(principal?: Authentication): Request {
  const request = new Request("http://h/docs/1");
  if (principal !== undefined) bindAuthentication(request, principal);
  return request;
}

const ALICE = createAuthentication("alice", ["USER"]);
const ADA = createAuthentication("ada", ["ADMIN"]);

const ownerOnly = guard<Doc>(({ authentication, target }) => authentication.name === target.owner);

describe("authz.guard", () => {
  it("resolves when the decision allows", async () => {
    await expect(ownerOnly(requestAs(ALICE), { owner: "alice" })).resolves.toBeUndefined();
  });

  it("hands the decision the principal and the domain object", async () => {
    const decide = vi.fn(() => true);
    const check = guard<Doc>(decide);
    const doc = { owner: "x" };
    await check(requestAs(ALICE), doc);
    expect(decide).toHaveBeenCalledWith(
      expect.objectContaining({ authentication: ALICE, target: doc }),
    );
  });

  it("rejects with AccessDeniedError (ERR_ACCESS_DENIED) when the decision denies", async () => {
    const error = await ownerOnly(requestAs(ALICE), { owner: "bob" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AccessDeniedError);
    expect((error as AccessDeniedError).code).toBe("ERR_ACCESS_DENIED");
    expect((error as AccessDeniedError).status).toBe(403);
  });

  it("denies when the decision returns a truthy value other than true", async () => {
    const sloppy = guard(() => 1 as unknown as boolean);
    await expect(sloppy(requestAs(ALICE), null)).rejects.toBeInstanceOf(AccessDeniedError);
  });

  it("waits for an asynchronous decision", async () => {
    const slow = guard(async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return false;
    });
    await expect(slow(requestAs(ALICE), null)).rejects.toBeInstanceOf(AccessDeniedError);
  });

  it("rejects with AccessDeniedError, keeping the cause, when the decision throws", async () => {
    const boom = new Error("lookup failed");
    const throwing = guard(() => {
      throw boom;
    });
    const error = await throwing(requestAs(ADA), null).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AccessDeniedError);
    expect((error as AccessDeniedError).cause).toBe(boom);
  });

  it("rejects with AccessDeniedError when an asynchronous decision rejects", async () => {
    const rejecting = guard(async () => {
      throw new Error("db down");
    });
    await expect(rejecting(requestAs(ADA), null)).rejects.toBeInstanceOf(AccessDeniedError);
  });

  it("rejects with AuthenticationRequiredError (ERR_AUTHENTICATION_REQUIRED) for the anonymous principal", async () => {
    const decide = vi.fn(() => true);
    const error = await guard(decide)(requestAs(ANONYMOUS), null).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationRequiredError);
    expect((error as AuthenticationRequiredError).code).toBe("ERR_AUTHENTICATION_REQUIRED");
    expect((error as AuthenticationRequiredError).status).toBe(401);
    expect(decide).not.toHaveBeenCalled();
  });

  it("rejects with AuthenticationRequiredError when nothing is bound", async () => {
    const decide = vi.fn(() => true);
    await expect(guard(decide)(requestAs(), null)).rejects.toBeInstanceOf(
      AuthenticationRequiredError,
    );
    expect(decide).not.toHaveBeenCalled();
  });

  it("reads a Context as well as a request", async () => {
    const check = guard(() => true);
    await expect(check(Context.empty.with(AUTHENTICATION, ALICE), null)).resolves.toBeUndefined();
    await expect(check(Context.empty, null)).rejects.toBeInstanceOf(AuthenticationRequiredError);
  });

  it("throws InvalidOptionsError when built without a decision function", () => {
    expect(() => guard(undefined as unknown as () => boolean)).toThrow(InvalidOptionsError);
  });

  it("throws InvalidOptionsError when built with a cyclic hierarchy", () => {
    expect(() => guard(() => true, { hierarchy: "A > B > A" })).toThrow(InvalidOptionsError);
  });
});

describe("authz.guard: roles", () => {
  it("applies the hierarchy in hasRole", async () => {
    const staffOnly = guard(({ hasRole }) => hasRole("STAFF"), {
      hierarchy: "ADMIN > STAFF > USER",
    });
    await expect(staffOnly(requestAs(ADA), null)).resolves.toBeUndefined();
    await expect(staffOnly(requestAs(ALICE), null)).rejects.toBeInstanceOf(AccessDeniedError);
  });

  it("compares roles literally without a hierarchy", async () => {
    const staffOnly = guard(({ hasRole }) => hasRole("STAFF"));
    await expect(staffOnly(requestAs(ADA), null)).rejects.toBeInstanceOf(AccessDeniedError);
    await expect(
      staffOnly(requestAs(createAuthentication("sam", ["STAFF"])), null),
    ).resolves.toBeUndefined();
  });

  it("keeps hasAuthority literal even with a hierarchy", async () => {
    const staffAuthority = guard(({ hasAuthority }) => hasAuthority("STAFF"), {
      hierarchy: "ADMIN > STAFF",
    });
    await expect(staffAuthority(requestAs(ADA), null)).rejects.toBeInstanceOf(AccessDeniedError);
  });
});
