/**
 * A store that refuses for a quota is no fault: over a real socket, the
 * party refused is answered 503 in its protocol's shape, and the log gets one
 * warning line with the figures (never a name or a token), not a failure
 * with a stack trace through `onStoreError`.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryReplayStore } from "../src/agentauth/index.ts";
import { MemoryDeviceCodeStore } from "../src/oauth2/index.ts";
import { codeSite, consentFor, pkce, postConsent } from "./support/code-flow.ts";
import { AGENT_ID, AGENT_SECRET, OTHER_ID, OTHER_SECRET } from "./support/mcp.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

function quiet() {
  return {
    warn: vi.spyOn(console, "warn").mockImplementation(() => {}),
    error: vi.spyOn(console, "error").mockImplementation(() => {}),
    failures: [] as unknown[],
  };
}

describe("a full store is a warning with figures", () => {
  it("a replay store full of live ids: the consent answers 503, one warning line, no failure reported", async () => {
    const log = quiet();
    const site = await codeSite({
      stores: { replay: new MemoryReplayStore({ maxEntries: 2 }) },
      onStoreError: (error) => log.failures.push(error),
    });
    try {
      // Each consent answered marks its token used: two people fill it, the third is refused.
      const consent = async (human: string) => {
        const { challenge } = await pkce();
        const shown = await consentFor(site, { challenge }, { human });
        return postConsent(site, { consent: shown.consentToken, action: "approve" }, { human });
      };
      expect((await consent("alice")).status).toBe(303);
      expect((await consent("bob")).status).toBe(303);
      const refused = await consent("carol");
      // A person is waiting: the consent page's own page to try again, not a body for programs.
      expect(refused.status).toBe(503);
      expect(refused.headers.get("content-type")).toMatch(/^text\/html/);
      expect(refused.headers.get("retry-after")).toBe("5");
      expect((await consent("dave")).status).toBe(503);
      expect(log.failures).toEqual([]);
      expect(log.error).not.toHaveBeenCalled();
      expect(log.warn.mock.calls).toEqual([
        [
          "portcullis: the replay store is full: 2 of 2 entries held in all; the newcomer was refused (ERR_STORE_FULL)",
        ],
      ]);
    } finally {
      await site.close();
    }
  });

  it("a device code store full of live codes: the device authorization endpoint answers 503 temporarily_unavailable, one warning line", async () => {
    const log = quiet();
    const site = await codeSite({
      stores: { deviceCodes: new MemoryDeviceCodeStore({ maxEntries: 1 }) },
      onStoreError: (error) => log.failures.push(error),
    });
    try {
      const begin = (id: string, secret: string) =>
        fetch(`${site.base}/oauth/device_authorization`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ client_id: id, client_secret: secret, scope: "read_notes" }),
        });
      expect((await begin(AGENT_ID, AGENT_SECRET)).status).toBe(200);
      const refused = await begin(OTHER_ID, OTHER_SECRET);
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(await refused.json()).toMatchObject({ error: "temporarily_unavailable" });
      expect(log.failures).toEqual([]);
      expect(log.error).not.toHaveBeenCalled();
      expect(log.warn.mock.calls).toEqual([
        [
          "portcullis: the device code store is full: 1 of 1 entries held in all; the newcomer was refused (ERR_STORE_FULL)",
        ],
      ]);
    } finally {
      await site.close();
    }
  });
});
