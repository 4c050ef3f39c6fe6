// Approvals under guessing: attacker accounts typing wrong user codes at the
// example's /device, from one address and from many, and links from other
// sites at a signed-in person; then a legitimate person approves an agent.

import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { ScryptPasswordEncoder } from "portcullis";
import { createExampleHandler, demoAccounts } from "../examples/hono/app.ts";
import { USER_CODE_ALPHABET, USER_CODE_LENGTH } from "../src/oauth2/user-code.ts";
import { attack, beginAgent, Person, pollAgent } from "../test/support/approval-attack.ts";

const ACCOUNTS = 200;
const WRONG_EACH = 5;
// The defaults of DeviceAuthorizationService's userCodeAttempts.
const PER_APPROVER = 5;
const PER_ADDRESS = 20;
const OVERALL = 10_000;
const WINDOWS_PER_HOUR = 4;

const line = (text: string) => console.log(`  ${text}`);

export async function approvalBudget(): Promise<void> {
  console.log(
    `approvals: ${ACCOUNTS} guessing accounts x ${WRONG_EACH} wrong codes against one person's approval`,
  );
  const space = USER_CODE_ALPHABET.length ** USER_CODE_LENGTH;
  const perGuess = (live: number) => live / space;
  line(
    `user codes: ${USER_CODE_ALPHABET.length} letters ^ ${USER_CODE_LENGTH} = ${space.toExponential(3)}; one guess hits one of L live codes with chance L / ${space.toExponential(3)} (L = 1000: ${perGuess(1000).toExponential(2)})`,
  );
  const hourly = OVERALL * WINDOWS_PER_HOUR;
  line(
    `guesses allowed per hour: ${hourly} overall (chance to hit any of 1000 live codes <= ${(hourly * perGuess(1000) * 100).toFixed(3)} %), ${PER_APPROVER * WINDOWS_PER_HOUR} per approver (${(PER_APPROVER * WINDOWS_PER_HOUR * perGuess(1000)).toExponential(2)}), ${PER_ADDRESS * WINDOWS_PER_HOUR} per address beyond first entries`,
  );
  line(
    `stopping everyone needs the overall budget spent: ${OVERALL / PER_APPROVER} accounts and ${OVERALL / PER_ADDRESS} addresses per 15 minutes`,
  );

  let handler: Awaited<ReturnType<typeof createExampleHandler>> | undefined;
  const server = serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request, ...rest) => (handler as NonNullable<typeof handler>)(request, ...rest),
  });
  await new Promise((resolve) => server.once("listening", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const password = "guesser-password";
  const log = console.log;
  console.log = () => {}; // the example logs every agent event
  try {
    handler = await createExampleHandler({
      issuer: base,
      passwordEncoder: new ScryptPasswordEncoder({ logN: 10, r: 8, p: 1 }),
      loginLimit: 1_000_000,
      pollIntervalSeconds: 1,
      accounts: [
        ...demoAccounts(),
        ...["a", "b"].flatMap((prefix) =>
          Array.from({ length: ACCOUNTS }, (_, i) => ({
            name: `${prefix}${i}`,
            authorities: ["USER"],
            password,
          })),
        ),
      ],
    });
    const shared = await attack(base, {
      accounts: ACCOUNTS,
      perAccount: WRONG_EACH,
      password,
      prefix: "a",
      addressOf: () => "127.0.1.1",
    });
    const many = await attack(base, {
      accounts: ACCOUNTS,
      perAccount: WRONG_EACH,
      password,
      prefix: "b",
      addressOf: (i) => `127.0.${3 + (i >> 8)}.${(i & 255) + 1}`,
    });
    // Links from other sites at a signed-in person.
    const alice = new Person(base, "127.0.1.1");
    await alice.signIn("alice", "demo-alice");
    let spent = 0;
    for (let i = 0; i < 50; i++) {
      const sent = await alice.send("/device?user_code=BCDF-GHJK", {
        headers: { "sec-fetch-site": "cross-site" },
      });
      if (!sent.body.includes("then press Review")) spent++;
    }
    const started = performance.now();
    const { user_code, device_code } = await beginAgent(base);
    const review = await alice.review(user_code);
    const decided = await alice.decide(review.body, "approve");
    await new Promise((resolve) => setTimeout(resolve, 1000)); // the agent's poll interval
    const token = await pollAgent(base, device_code);
    const ms = performance.now() - started;
    console.log = log;
    line(
      `${ACCOUNTS} accounts from one address: ${shared.entries} entries, ${shared.guesses} looked up, ${shared.refused} refused (429), ${Math.round(shared.ms)} ms`,
    );
    line(
      `${ACCOUNTS} accounts from ${ACCOUNTS} addresses: ${many.entries} entries, ${many.guesses} looked up, ${many.refused} refused (429), ${Math.round(many.ms)} ms`,
    );
    line(`50 cross-site links at a signed-in person: ${spent} looked anything up`);
    line(
      `then the person behind the guessers' address: review ${review.status}, approve ${decided.status}, agent token ${"access_token" in token ? "issued" : JSON.stringify(token)} (${Math.round(ms)} ms with a 1 s poll)`,
    );
  } finally {
    console.log = log;
    await new Promise((resolve) => server.close(resolve));
  }
}
