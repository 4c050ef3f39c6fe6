import { describe, expect, it } from "vitest";
import { type ApprovalMessages, approvalPage, type DeviceApproveResult } from "./approval-form.ts";

const MARKUP = `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`;
const ESCAPED =
  "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&quot;&#39;&amp;";

/** Every message, each with markup in it and its own name to tell them apart. */
const MESSAGES: Required<ApprovalMessages> = {
  approve: `approve ${MARKUP}`,
  deny: `deny ${MARKUP}`,
  invalid_code: `invalid_code ${MARKUP}`,
  expired: `expired ${MARKUP}`,
  invalid_request: `invalid_request ${MARKUP}`,
  not_reviewed: `not_reviewed ${MARKUP}`,
  limit_reached: `limit_reached ${MARKUP}`,
  too_many_attempts: `too_many_attempts ${MARKUP}`,
};

const DONE = {
  ok: true,
  clientId: "agent",
  scope: ["read"],
  userCode: "ABCD-EFGH",
  expiresAt: 0,
} as const;

const RESULTS: [keyof ApprovalMessages, DeviceApproveResult][] = [
  ["approve", { action: "approve", outcome: DONE }],
  ["deny", { action: "deny", outcome: DONE }],
  ["invalid_code", { action: "approve", outcome: { ok: false, reason: "invalid_code" } }],
  ["expired", { action: "approve", outcome: { ok: false, reason: "expired" } }],
  ["invalid_request", { action: undefined, outcome: { ok: false, reason: "invalid_request" } }],
  ["not_reviewed", { action: "approve", outcome: { ok: false, reason: "not_reviewed" } }],
  ["limit_reached", { action: "approve", outcome: { ok: false, reason: "limit_reached" } }],
  [
    "too_many_attempts",
    {
      action: "approve",
      outcome: { ok: false, reason: "too_many_attempts", retryAfterSeconds: 30 },
    },
  ],
];

describe("approvalPage", () => {
  it.each(RESULTS)("escapes the title and the %s message", async (name, result) => {
    const response = approvalPage(result, `Title ${MARKUP}`, MESSAGES);
    const page = await response.text();
    expect(page).not.toMatch(/<script|<img/);
    expect(page).toContain(`<title>Title ${ESCAPED}</title>`);
    expect(page).toContain(`<p id="outcome">${name} ${ESCAPED}</p>`);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("no-store");
  });

  it("answers each outcome with its status, and Retry-After when throttled", () => {
    const statuses = RESULTS.map(([, result]) => approvalPage(result, "t", MESSAGES).status);
    expect(statuses).toEqual([200, 200, 400, 400, 400, 400, 403, 429]);
    const throttled = approvalPage((RESULTS[7] as [string, DeviceApproveResult])[1], "t", MESSAGES);
    expect(throttled.headers.get("retry-after")).toBe("30");
  });
});
