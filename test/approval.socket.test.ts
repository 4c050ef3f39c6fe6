/**
 * The example's approval pages over real sockets: nobody approves an agent
 * they were not shown, guessers cannot stop other people's approvals, links
 * from elsewhere spend nobody's budget, and an approval shows at once.
 */
import * as dpop from "dpop";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createExampleHandler, demoAccounts } from "../examples/hono/app.ts";
import { type Served, serveFetch } from "./serve.ts";
import { attack, beginAgent, hidden, Person, pollAgent } from "./support/approval-attack.ts";
import { cheapEncoder } from "./support/session-app.ts";

const GUESSERS = 200;
const GUESSER_PASSWORD = "guesser-password";
let served: Served;
let base: string;

beforeAll(async () => {
  let handler: Awaited<ReturnType<typeof createExampleHandler>> | undefined;
  // The extra arguments carry the socket the chain reads the client address from.
  served = await serveFetch((request, ...rest) =>
    (handler as NonNullable<typeof handler>)(request, ...rest),
  );
  base = served.url;
  handler = await createExampleHandler({
    issuer: base,
    passwordEncoder: cheapEncoder(),
    loginLimit: 100_000,
    pollIntervalSeconds: 1,
    accounts: [
      ...demoAccounts(),
      { name: "bob", authorities: ["USER"], password: "bob-password" },
      ...Array.from({ length: GUESSERS }, (_, i) => ({
        name: `mallory${i}`,
        authorities: ["USER"],
        password: GUESSER_PASSWORD,
      })),
    ],
  });
}, 60_000);

afterAll(async () => {
  await served?.close();
});

describe("approving an agent at /device", () => {
  it("leads a typed code to the review page; an approval without that page's proof is refused", async () => {
    const alice = new Person(base);
    await alice.signIn("alice", "demo-alice");
    const { user_code, device_code } = await beginAgent(base);
    // The enter-code form has no Approve button: it only leads to the review.
    const entry = await alice.send("/device");
    expect(entry.body).not.toContain('value="approve"');
    // Pressing Approve with a typed code, as the old page allowed, approves nothing.
    const blind = await alice.send("/device/approve", {
      form: { _csrf: hidden(entry.body, "_csrf"), user_code, action: "approve" },
    });
    expect(blind.status).toBe(400);
    expect(await pollAgent(base, device_code)).toMatchObject({ error: "authorization_pending" });
    // Another person's review of the same code is no proof for alice.
    const bob = new Person(base, "127.0.0.2");
    await bob.signIn("bob", "bob-password");
    const bobs = await bob.review(user_code);
    const borrowed = await alice.send("/device/approve", {
      form: {
        _csrf: hidden(entry.body, "_csrf"),
        user_code,
        review: hidden(bobs.body, "review"),
        action: "approve",
      },
    });
    expect(borrowed.status).toBe(400);
    // The review names the agent and what it asks for, with Approve and Deny.
    const review = await alice.review(user_code);
    expect(review.status).toBe(200);
    expect(review.body).toContain('id="agent-name">Demo agent<');
    expect(review.body).toContain("Answers the text it is given.");
    expect(review.body).toContain('value="deny"');
    await new Promise((resolve) => setTimeout(resolve, 1100)); // the agent's poll interval
    const approved = await alice.decide(review.body, "approve");
    expect(approved.status).toBe(200);
    expect(approved.body).toContain("approved");
    expect(await pollAgent(base, device_code)).toHaveProperty("access_token");
  });

  it("lists an approved agent on /agents before the agent has collected its grant", async () => {
    const alice = new Person(base, "127.0.0.3");
    await alice.signIn("alice", "demo-alice");
    const { user_code, device_code } = await beginAgent(
      base,
      "demo-agent-2",
      "demo-agent-2-secret",
      "get_time",
    );
    const review = await alice.review(user_code);
    expect((await alice.decide(review.body, "approve")).status).toBe(200);
    const waiting = await alice.send("/agents");
    expect(waiting.body).not.toContain("You have not approved any agent");
    expect(waiting.body).toMatch(/demo-agent-2<\/td>[\s\S]*approved, waiting for the agent/);
    await pollAgent(base, device_code, "demo-agent-2", "demo-agent-2-secret");
    const active = await alice.send("/agents");
    expect(active.body).not.toContain("waiting for the agent");
    expect(active.body).toMatch(/demo-agent-2<\/td>[\s\S]*active/);
  });

  it("shows on /agents the short thumbprint of the key a grant is bound to", async () => {
    // Bob's: a bound grant refuses the later polls of its human's approvals made without the key.
    const bob = new Person(base, "127.0.0.5");
    await bob.signIn("bob", "bob-password");
    const { user_code, device_code } = await beginAgent(base, "demo-agent", "demo-agent-secret");
    const review = await bob.review(user_code);
    await new Promise((resolve) => setTimeout(resolve, 1100)); // the agent's poll interval
    expect((await bob.decide(review.body, "approve")).status).toBe(200);
    const key = await dpop.generateKeyPair("ES256");
    const answer = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        dpop: await dpop.generateProof(key, `${base}/oauth/token`, "POST"),
      },
      body: new URLSearchParams({
        grant_type: "urn:ietf:params:oauth:grant-type:device_code",
        device_code,
        client_id: "demo-agent",
        client_secret: "demo-agent-secret",
      }),
    });
    expect(((await answer.json()) as Record<string, unknown>).token_type).toBe("DPoP");
    const jkt = await dpop.calculateThumbprint(key.publicKey);
    const page = await bob.send("/agents");
    expect(page.body).toContain(`<code title="${jkt}">${jkt.slice(0, 10)}…</code>`);
  });

  it("lets the allowed browser origin send DPoP and read DPoP-Nonce and WWW-Authenticate", async () => {
    const origin = "https://app.example.test";
    const preflight = await fetch(`${base}/capability/execute`, {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, dpop, content-type",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("dpop");
    const refused = await fetch(`${base}/capability/execute`, {
      method: "POST",
      headers: { origin, authorization: "DPoP x", dpop: "x", "content-type": "application/json" },
      body: "{}",
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-expose-headers")).toBe(
      "DPoP-Nonce, WWW-Authenticate",
    );
  });

  it("spends nothing when other sites send a signed-in person to /device with a code", async () => {
    const bob = new Person(base, "127.0.0.4");
    await bob.signIn("bob", "bob-password");
    for (let i = 0; i < 10; i++) {
      for (const site of ["cross-site", "same-site", "none"]) {
        const sent = await bob.send("/device?user_code=BCDF-GHJK", {
          headers: { "sec-fetch-site": site },
        });
        expect(sent.status).toBe(200);
        expect(sent.body).toContain('value="BCDF-GHJK"');
        expect(sent.body).toContain("then press Review");
      }
    }
    const { user_code } = await beginAgent(base, "demo-agent-2", "demo-agent-2-secret", "echo");
    const review = await bob.review(user_code);
    expect(review.status).toBe(200);
    expect(review.body).toContain("Second demo agent");
  });

  it(`lets ${GUESSERS} guessing accounts, five wrong codes each, stop nobody else's approval`, async () => {
    // From one address, then each from its own.
    const shared = await attack(base, {
      accounts: GUESSERS / 2,
      perAccount: 5,
      password: GUESSER_PASSWORD,
      addressOf: () => "127.0.1.1",
    });
    const spread = await attack(base, {
      accounts: GUESSERS,
      perAccount: 5,
      password: GUESSER_PASSWORD,
      addressOf: (i) => `127.0.2.${i + 1}`,
    });
    for (const [name, password, address] of [
      ["alice", "demo-alice", "127.0.1.1"], // behind the guessers' address
      ["sam", "demo-sam", "127.0.3.1"],
    ] as const) {
      const person = new Person(base, address);
      await person.signIn(name, password);
      const { user_code, device_code } = await beginAgent(base);
      const review = await person.review(user_code);
      expect(review.status, name).toBe(200);
      expect((await person.decide(review.body, "approve")).status, name).toBe(200);
      expect(await pollAgent(base, device_code), name).toHaveProperty("access_token");
    }
    // Accounts that guessed from the shared address: a first entry each, then its 20.
    expect(shared.guesses).toBe(GUESSERS / 2 + 20);
    expect(spread.guesses).toBeLessThanOrEqual(GUESSERS * 5);
    // A guesser is refused, even with a right code.
    const mallory = new Person(base, "127.0.2.1");
    await mallory.signIn("mallory0", GUESSER_PASSWORD);
    const { user_code } = await beginAgent(base, "demo-agent-2", "demo-agent-2-secret", "echo");
    expect((await mallory.review(user_code)).status).toBe(429);
  }, 60_000);
});
