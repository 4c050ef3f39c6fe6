/**
 * A flood of anonymous `GET /csrf` cannot keep real visitors from signing in,
 * and leaves nothing in the session store: the memory store (bounded, so a
 * flood of stored sessions once evicted visitors' pre-login sessions) and Redis
 * (where each one once stayed 30 minutes).
 */
import { describe, expect, it } from "vitest";
import { floodSignIns } from "../soak/session-flood.ts";

describe.each(["memory", "redis"] as const)("an anonymous flood on the %s store", (store) => {
  it("fails no sign-in and stores only the signed-in sessions", async () => {
    const result = await floodSignIns({ store, flood: 5000, visitors: 10, maxEntries: 500 });
    expect(result.failedSignIns).toBe(0);
    expect(result.held).toBe(10);
  }, 120_000);
});
