/**
 * A store that fails while a refresh token is being redeemed: the 503 invites
 * a retry, and the retry with the same refresh token must not be taken for
 * the reuse of a stolen one.
 */
import { type Grant, MemoryGrantStore } from "portcullis/agentauth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CodeSite, codeSite, refreshRequest, tokensFor } from "./support/code-flow.ts";

/** Grants whose next `get`s fail, as many as `failing` says. */
class FlakyGrantStore extends MemoryGrantStore {
  failing = 0;
  override async get(grantId: string): Promise<Grant | undefined> {
    if (this.failing > 0) {
      this.failing -= 1;
      throw new Error("the grant store is away");
    }
    return super.get(grantId);
  }
}

const grants = new FlakyGrantStore();
let site: CodeSite;
beforeAll(async () => {
  site = await codeSite({ stores: { grants } });
});
afterAll(async () => {
  await site?.close();
});

describe("a refresh answered 503 because the grant store failed", () => {
  it("is retried with the same refresh token: tokens, and the grant lives on", async () => {
    const first = await tokensFor(site, { scope: "read_notes" });
    const refreshToken = first.refresh_token as string;
    grants.failing = 1;
    const failed = await refreshRequest(site, refreshToken);
    expect(failed.status).toBe(503);
    const retried = await refreshRequest(site, refreshToken);
    const body = (await retried.json()) as Record<string, unknown>;
    expect(retried.status, JSON.stringify(body)).toBe(200);
    expect(body.refresh_token).toBeTypeOf("string");
    const grant = await grants.get(
      JSON.parse(atob((body.access_token as string).split(".")[1] as string)).grant_id,
    );
    expect(grant?.status).toBe("active");
  });
});
