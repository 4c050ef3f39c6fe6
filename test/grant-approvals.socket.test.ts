/**
 * What several approvals of one agent come to, over a real socket: a new
 * approval by the same human reuses the grant of that pair (consent and
 * device flow alike), racing approvals end in one grant holding both, an
 * ended grant is never revived, and how many grants one human (or one agent)
 * may hold is bounded without ever refusing anyone else.
 */
import * as dpop from "dpop";
import * as oauth from "oauth4webapi";
import { bindAuthentication, createAuthentication } from "portcullis";
import { type AgentEvent, MemoryGrantStore } from "portcullis/agentauth";
import { afterAll, describe, expect, it } from "vitest";
import {
  authorizeUrl,
  type CodeSite,
  codeSite,
  consentFor,
  DESKTOP,
  LOOPBACK_REDIRECT,
  OTHER_DESKTOP,
  openAuthorize,
  pkce,
  postConsent,
  refreshRequest,
  tokenError,
  tokensFor,
  WEB,
  WEB_REDIRECT,
} from "./support/code-flow.ts";
import { AGENT_ID, AGENT_SECRET, OTHER_ID, OTHER_SECRET } from "./support/mcp.ts";

const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
const sites: CodeSite[] = [];
afterAll(async () => {
  for (const made of sites) await made.close();
});

async function site(options: Parameters<typeof codeSite>[0] = {}): Promise<CodeSite> {
  const made = await codeSite(options);
  sites.push(made);
  return made;
}

const { challenge } = await pkce();

/** Authorize and approve as `human`; the answer to the consent form. */
async function consent(
  s: CodeSite,
  human: string,
  params: { clientId?: string; scope?: string } = {},
): Promise<Response> {
  const shown = await consentFor(
    s,
    { challenge, ...redirectFor(params.clientId), ...params },
    {
      human,
    },
  );
  return postConsent(s, { consent: shown.consentToken, action: "approve" }, { human });
}

function redirectFor(clientId: string | undefined) {
  return clientId === WEB ? { redirectUri: WEB_REDIRECT } : {};
}

async function activeOf(s: CodeSite, human: string) {
  return (await s.agents.runtime.grants.listByApprover(human)).filter(
    (grant) => grant.status === "active",
  );
}

const ofType = <T extends AgentEvent["type"]>(events: AgentEvent[], type: T) =>
  events.filter((event): event is Extract<AgentEvent, { type: T }> => event.type === type);

describe("consents of one client by one human", () => {
  it("a second consent widens the same grant and extends it; the event says what it added", async () => {
    const s = await site();
    s.clock.offset = 0;
    expect((await consent(s, "alice", { scope: "read_notes" })).status).toBe(303);
    const [first] = await activeOf(s, "alice");
    s.clock.offset = 60_000;
    expect((await consent(s, "alice", { scope: "add_note read_notes" })).status).toBe(303);
    const grants = await activeOf(s, "alice");
    expect(grants).toHaveLength(1);
    expect(grants[0]?.grantId).toBe(first?.grantId);
    expect([...(grants[0]?.capabilities ?? [])].sort()).toEqual(["add_note", "read_notes"]);
    // The later expiry: a day from the second consent.
    expect(grants[0]?.expiresAt).toBeGreaterThanOrEqual((first?.expiresAt ?? 0) + 60_000);
    expect(ofType(s.events, "grant.created")).toHaveLength(1);
    expect(ofType(s.events, "grant.extended")).toEqual([
      {
        type: "grant.extended",
        grantId: first?.grantId,
        principalId: DESKTOP,
        approvedBy: "alice",
        added: ["add_note"],
        capabilities: grants[0]?.capabilities,
        expiresAt: grants[0]?.expiresAt,
      },
    ]);
  });

  it("one human looping 1 000 consents leaves one grant, and never refuses another human", async () => {
    // A store this small was full after 500 grants.
    const s = await site({ stores: { grants: new MemoryGrantStore({ maxEntries: 500 }) } });
    for (let i = 0; i < 1000; i++) {
      const answer = await consent(s, "mallory", {
        scope: i % 2 === 0 ? "read_notes" : "count_notes",
      });
      expect(answer.status).toBe(303);
    }
    expect(await activeOf(s, "mallory")).toHaveLength(1);
    expect(await s.agents.runtime.grants.listByPrincipal(DESKTOP)).toHaveLength(1);
    expect((await consent(s, "bob")).status).toBe(303);
    expect(await activeOf(s, "bob")).toHaveLength(1);
  }, 120_000);

  it("two consents racing end in one grant holding both", async () => {
    const s = await site();
    for (let round = 0; round < 10; round++) {
      const human = `racer-${round}`;
      const [one, two] = await Promise.all([
        consentFor(s, { challenge, scope: "read_notes" }, { human }),
        consentFor(s, { challenge, scope: "add_note" }, { human }),
      ]);
      const answers = await Promise.all(
        [one, two].map((shown) =>
          postConsent(s, { consent: shown?.consentToken as string, action: "approve" }, { human }),
        ),
      );
      expect(answers.map((answer) => answer.status)).toEqual([303, 303]);
      const grants = await activeOf(s, human);
      expect(grants).toHaveLength(1);
      expect([...(grants[0]?.capabilities ?? [])].sort()).toEqual(["add_note", "read_notes"]);
    }
  });

  it("a revoked grant is never revived: the next consent makes a new one", async () => {
    const s = await site();
    await consent(s, "alice", { scope: "read_notes" });
    const [first] = await activeOf(s, "alice");
    await s.agents.revoke(first?.grantId as string);
    await consent(s, "alice", { scope: "read_notes" });
    const [second] = await activeOf(s, "alice");
    expect(second?.grantId).not.toBe(first?.grantId);
    expect((await s.agents.runtime.grants.get(first?.grantId as string))?.status).toBe("revoked");
    // The human's page lists one row per agent: the live grant.
    expect((await s.agents.grantsApprovedBy("alice")).map((grant) => grant.grantId)).toEqual([
      second?.grantId,
    ]);
  });
});

describe("how many grants one human may hold", () => {
  it("refuses the human over the limit on the consent page and at the answer; everyone else goes on", async () => {
    const s = await site({ maxGrantsPerApprover: 2 });
    // Shown while there was room, answered once there was none.
    const late = await consentFor(
      s,
      { challenge, clientId: WEB, redirectUri: WEB_REDIRECT },
      { human: "alice" },
    );
    expect((await consent(s, "alice", { clientId: DESKTOP })).status).toBe(303);
    expect((await consent(s, "alice", { clientId: OTHER_DESKTOP })).status).toBe(303);
    // Another consent of a client alice already approved reuses its grant: no limit applies.
    expect((await consent(s, "alice", { clientId: DESKTOP, scope: "add_note" })).status).toBe(303);
    const page = await openAuthorize(
      s,
      authorizeUrl(s, { challenge, clientId: WEB, redirectUri: WEB_REDIRECT }),
      { human: "alice" },
    );
    expect(page.status).toBe(403);
    expect(page.headers.get("location")).toBeNull();
    expect(await page.text()).toMatch(/approved as many clients as allowed \(2\).*revoke/i);
    const answered = await postConsent(
      s,
      { consent: late.consentToken, action: "approve" },
      { human: "alice" },
    );
    expect(answered.status).toBe(403);
    expect(await activeOf(s, "alice")).toHaveLength(2);
    expect((await consent(s, "bob", { clientId: WEB })).status).toBe(303);
    // Once alice revokes one, she may approve another.
    const [some] = await activeOf(s, "alice");
    await s.agents.revoke(some?.grantId as string);
    expect((await consent(s, "alice", { clientId: WEB })).status).toBe(303);
  });

  it("refuses a client approved by as many humans as allowed; its other approvers go on", async () => {
    const s = await site({ maxGrantsPerAgent: 2 });
    expect((await consent(s, "alice")).status).toBe(303);
    expect((await consent(s, "bob")).status).toBe(303);
    expect((await consent(s, "alice", { scope: "add_note" })).status).toBe(303);
    const refused = await consent(s, "carol");
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(/approved by as many people as allowed \(2\)/);
    expect((await consent(s, "carol", { clientId: WEB })).status).toBe(303);
  });
});

/** The device flow as an agent runs it, with the approval page's review and form as `human`. */
async function deviceFlow(s: CodeSite, human: string, id = AGENT_ID, secret = AGENT_SECRET) {
  const form = (fields: Record<string, string>) =>
    fetch(
      `${s.base}${fields.grant_type === undefined ? "/oauth/device_authorization" : "/oauth/token"}`,
      {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ client_id: id, client_secret: secret, ...fields }).toString(),
      },
    );
  const begun = (await (await form({ scope: "read_notes" })).json()) as Record<string, string>;
  const shown = new Request(`${s.base}/agent/approve`, { method: "POST" });
  bindAuthentication(shown, createAuthentication(human));
  const review = await s.agents.describe(shown, begun.user_code);
  const post = new Request(`${s.base}/agent/approve`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      user_code: begun.user_code as string,
      action: "approve",
      review: review.ok ? review.reviewToken : "",
    }).toString(),
  });
  bindAuthentication(post, createAuthentication(human));
  const approval = await s.agents.approve(post);
  return {
    approval,
    poll: async () => {
      const answer = await form({
        grant_type: DEVICE_GRANT,
        device_code: begun.device_code as string,
      });
      return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
    },
  };
}

describe("device-flow approvals", () => {
  it("approving the same agent again reuses its grant", async () => {
    const s = await site();
    for (let i = 0; i < 20; i++) {
      const flow = await deviceFlow(s, "alice");
      expect(flow.approval.status).toBe(200);
      expect((await flow.poll()).status).toBe(200);
    }
    expect(await activeOf(s, "alice")).toHaveLength(1);
    expect(ofType(s.events, "grant.created")).toHaveLength(1);
    expect(ofType(s.events, "grant.extended")).toHaveLength(19);
  });

  it("the approval page refuses the human over the limit, and the poll is refused when the limit was reached meanwhile", async () => {
    const s = await site({ maxGrantsPerApprover: 1 });
    // Both approved while alice held no grant: the first poll takes the room, the second is refused.
    const first = await deviceFlow(s, "alice");
    const second = await deviceFlow(s, "alice", OTHER_ID, OTHER_SECRET);
    expect([first.approval.status, second.approval.status]).toEqual([200, 200]);
    expect((await first.poll()).status).toBe(200);
    const refused = await second.poll();
    expect([refused.status, refused.body.error]).toEqual([400, "access_denied"]);
    // Now the page says so before anything is approved.
    const third = await deviceFlow(s, "alice", OTHER_ID, OTHER_SECRET);
    expect(third.approval.status).toBe(403);
    expect(await third.approval.text()).toMatch(/as many agents as allowed/);
    expect((await third.poll()).body.error).toBe("authorization_pending");
    // Bob is not alice.
    const bobs = await deviceFlow(s, "bob", OTHER_ID, OTHER_SECRET);
    expect(bobs.approval.status).toBe(200);
    expect((await bobs.poll()).status).toBe(200);
  });
});

describe("a DPoP binding is never downgraded", () => {
  it("a client's consent grant bound by its human's device-flow approval mints only for that key", async () => {
    const s = await site({ dpop: {} });
    const BOTH = "desktop-and-device";
    await s.clients.register({
      clientId: BOTH,
      public: true,
      redirectUris: [LOOPBACK_REDIRECT],
      grantTypes: ["authorization_code", "refresh_token", DEVICE_GRANT],
    });
    const tokens = await tokensFor(s, { clientId: BOTH, scope: "read_notes" });
    const refresh = tokens.refresh_token as string;
    // The same client, approved by the same human through the device flow, polling with a key.
    const begun = (await (
      await fetch(`${s.base}/oauth/device_authorization`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ client_id: BOTH, scope: "add_note" }).toString(),
      })
    ).json()) as Record<string, string>;
    const human = new Request(`${s.base}/agent/approve`);
    bindAuthentication(human, createAuthentication("alice"));
    expect((await s.agents.service.authorize(human, begun.user_code, BOTH)).ok).toBe(true);
    const key = await dpop.generateKeyPair("ES256");
    const polled = await fetch(`${s.base}/oauth/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        dpop: await dpop.generateProof(key, `${s.base}/oauth/token`, "POST"),
      },
      body: new URLSearchParams({
        grant_type: DEVICE_GRANT,
        device_code: begun.device_code as string,
        client_id: BOTH,
      }).toString(),
    });
    expect(polled.status).toBe(200);
    const [grant] = await activeOf(s, "alice");
    expect(grant?.jkt).toBe(await dpop.calculateThumbprint(key.publicKey));
    expect(await activeOf(s, "alice")).toHaveLength(1);
    // The consent's refresh token, without the key: nothing.
    expect(await tokenError(s, await refreshRequest(s, refresh, { clientId: BOTH }), BOTH)).toEqual(
      {
        status: 400,
        error: "invalid_grant",
      },
    );
    // A new consent would leave the grant's tokens to any key: refused, with a page saying why.
    const again = await consent(s, "alice", { clientId: BOTH });
    expect(again.status).toBe(403);
    expect(await again.text()).toMatch(/bound to the key/);
    // With the key, the refresh token still serves.
    const next = await oauth.processRefreshTokenResponse(
      s.as,
      { client_id: BOTH },
      await refreshRequest(s, refresh, { clientId: BOTH, DPoP: oauth.DPoP({}, key) }),
    );
    expect(next.token_type).toBe("dpop");
  });
});
