/**
 * The one path from a capability token to an agent session, presented at the
 * execute URL and at a capability's own location side by side: every check
 * refuses at both, with the same answer and the same event.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { activeGrant } from "../../test/support/grants.ts";
import { generateKeySet, type KeySet } from "../jwt/keys.ts";
import { MemoryClientStore } from "../oauth2/clients.ts";
import { type AgentAuth, type AgentAuthOptions, agentAuth } from "./agent-auth.ts";
import type { AgentEvent } from "./events.ts";
import { type Grant, MemoryGrantStore } from "./grants.ts";
import { type AgentSession, agentSessionFrom, isDenial, openAgentSession } from "./session.ts";

const ISSUER = "https://agents.example";
const EXECUTE = `${ISSUER}/capability/execute`;
const REMOTE = `${ISSUER}/remote`;
const DAY = 86_400_000;

type Place = "execute" | "location";
const PLACES: Place[] = ["execute", "location"];

let keys: KeySet;
let t: number;
let events: AgentEvent[];
let served: { session: AgentSession; bound: AgentSession | undefined }[];

beforeEach(async () => {
  keys ??= await generateKeySet();
  t = Date.now();
  events = [];
  served = [];
});

async function setup(overrides: Partial<AgentAuthOptions> = {}): Promise<AgentAuth> {
  return agentAuth({
    issuer: ISSUER,
    capabilities: [
      {
        name: "a",
        description: "A.",
        handler: (_args, session, request) => {
          served.push({ session, bound: agentSessionFrom(request) });
          return "ran";
        },
      },
      { name: "b", description: "B.", handler: () => "ran" },
      { name: "remote", description: "Elsewhere.", location: REMOTE },
    ],
    clients: new MemoryClientStore(),
    keys,
    now: () => t,
    onEvent: (event) => events.push(event),
    onError: () => {},
    onStoreError: () => {},
    ...overrides,
  });
}

function grant(
  agents: AgentAuth,
  capabilities = ["a", "remote"],
  principalId = "agent-1",
): Promise<Grant> {
  return activeGrant(agents.runtime.grants, t, capabilities, principalId);
}

/** A token for `place`, carrying what is used there unless told otherwise. */
async function token(
  agents: AgentAuth,
  place: Place,
  g: { grantId: string },
  options: { principalId?: string; capabilities?: string[] } = {},
): Promise<string> {
  const minted = await agents.runtime.tokens.mint({
    principalId: options.principalId ?? "agent-1",
    grantId: g.grantId,
    capabilities: options.capabilities ?? (place === "execute" ? ["a"] : ["remote"]),
    ...(place === "location" ? { audience: REMOTE } : {}),
  });
  return minted.token;
}

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly challenge: string | null;
}

/** Presents `bearer` at `place`: execute runs `capability`, the location serves its session. */
async function present(
  agents: AgentAuth,
  place: Place,
  bearer: string | undefined,
  capability = "a",
): Promise<Answer> {
  const headers: Record<string, string> =
    bearer === undefined ? {} : { authorization: `Bearer ${bearer}` };
  let response: Response;
  if (place === "execute") {
    response = await agents.execute(
      new Request(EXECUTE, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ capability }),
      }),
    );
  } else {
    const behind = agents.resolveSession(REMOTE)(async (request) => {
      const session = agentSessionFrom(request) as AgentSession;
      served.push({ session, bound: session });
      return Response.json({ data: "ran" });
    });
    response = await behind(new Request(REMOTE, { headers }));
  }
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    challenge: response.headers.get("www-authenticate"),
  };
}

/** The refusal event `place` tells listeners of. */
function deniedEvent(place: Place, error: string, ids: Record<string, string> = {}) {
  return {
    type: "execute.denied",
    error,
    ...ids,
    ...(place === "location" ? { location: REMOTE } : {}),
  };
}

function tamperedJti(token: string): string {
  const [header, payload, signature] = token.split(".") as [string, string, string];
  const claims = JSON.parse(atob(payload.replace(/-/g, "+").replace(/_/g, "/")));
  claims.jti = `${claims.jti}x`;
  const forged = btoa(JSON.stringify(claims)).replace(/\+/g, "-").replace(/\//g, "_");
  return `${header}.${forged.replace(/=+$/, "")}.${signature}`;
}

interface Case {
  readonly name: string;
  /** Builds the token to present (and may present others first); execute runs `capability`. */
  readonly arrange: (
    agents: AgentAuth,
    place: Place,
  ) => Promise<{
    bearer: string | undefined;
    ids?: Record<string, string>;
    capability?: string;
    /** Where to present it, when not where it was arranged. */
    at?: AgentAuth;
  }>;
  readonly status: number;
  readonly error: string;
  readonly message: string;
}

const CASES: Case[] = [
  {
    name: "no token at all",
    arrange: async () => ({ bearer: undefined }),
    status: 401,
    error: "authentication_required",
    message: "a capability token is required",
  },
  {
    name: "a token whose signature does not hold",
    arrange: async (agents, place) => ({
      bearer: tamperedJti(await token(agents, place, await grant(agents))),
    }),
    status: 401,
    error: "invalid_jwt",
    message: "the capability token is invalid",
  },
  {
    name: "a token minted for the other place",
    arrange: async (agents, place) => ({
      bearer: await token(
        agents,
        place === "execute" ? "location" : "execute",
        await grant(agents),
      ),
    }),
    status: 401,
    error: "invalid_jwt",
    message: "the capability token is invalid",
  },
  {
    name: "a token presented a second time",
    arrange: async (agents, place) => {
      const g = await grant(agents);
      const once = await token(agents, place, g);
      expect((await present(agents, place, once)).status).toBe(200);
      return { bearer: once, ids: { principalId: "agent-1", grantId: g.grantId } };
    },
    status: 401,
    error: "invalid_jwt",
    message: "the capability token was already used",
  },
  {
    name: "a token of a grant that does not exist",
    arrange: async (agents, place) => ({
      bearer: await token(agents, place, { grantId: "g-missing" }),
      ids: { principalId: "agent-1", grantId: "g-missing" },
    }),
    status: 403,
    error: "grant_revoked",
    message: "the grant is no longer valid",
  },
  {
    name: "a token naming another agent's grant",
    arrange: async (agents, place) => {
      const theirs = await grant(agents, ["a", "remote"], "agent-2");
      return {
        bearer: await token(agents, place, theirs),
        ids: { principalId: "agent-1", grantId: theirs.grantId },
      };
    },
    status: 403,
    error: "grant_revoked",
    message: "the grant is no longer valid",
  },
  {
    name: "a token of a revoked grant",
    arrange: async (agents, place) => {
      const g = await grant(agents);
      const bearer = await token(agents, place, g);
      await agents.revoke(g.grantId);
      return { bearer, ids: { principalId: "agent-1", grantId: g.grantId } };
    },
    status: 403,
    error: "grant_revoked",
    message: "the grant was revoked",
  },
  {
    name: "a token of a grant that has expired",
    arrange: async (agents, place) => {
      const g = await grant(agents);
      t += DAY;
      return {
        bearer: await token(agents, place, g),
        ids: { principalId: "agent-1", grantId: g.grantId },
      };
    },
    status: 403,
    error: "grant_expired",
    message: "the grant has expired",
  },
  {
    // Execute asks for a name nobody defines: a token holding nothing learns nothing more.
    name: "a token every capability of which was revoked from the grant",
    arrange: async (agents, place) => {
      const g = await grant(agents, ["a", "b", "remote"]);
      const bearer = await token(agents, place, g);
      await agents.revoke(g.grantId, place === "execute" ? ["a"] : ["remote"]);
      return {
        bearer,
        ids: { principalId: "agent-1", grantId: g.grantId },
        capability: "nope",
      };
    },
    status: 403,
    error: "capability_not_granted",
    message: "the capability is not granted",
  },
  {
    name: "a token issued before a restart on the memory replay store",
    arrange: async (agents, place) => {
      // Keys and grants outlive the process; the memory replay store does not.
      const grants = agents.runtime.grants;
      const g = await grant(agents);
      const before = await token(agents, place, g);
      t += 1000;
      return {
        bearer: before,
        ids: { principalId: "agent-1", grantId: g.grantId },
        at: await setup({ stores: { grants } }),
      };
    },
    status: 401,
    error: "invalid_jwt",
    message: "the capability token was already used",
  },
];

describe("the one agent-session path, at the execute URL and at a location", () => {
  for (const place of PLACES) {
    it(`opens a session at the ${place} holding exactly token ∩ grant, bound to the request`, async () => {
      const agents = await setup();
      const g = await grant(agents, ["a", "b", "remote"]);
      const capabilities = place === "execute" ? ["a", "c"] : ["remote", "c"];
      const answer = await present(agents, place, await token(agents, place, g, { capabilities }));
      expect([answer.status, answer.body]).toEqual([200, { data: "ran" }]);
      expect(served).toHaveLength(1);
      expect(served[0]?.session).toMatchObject({
        principalId: "agent-1",
        grantId: g.grantId,
        approvedBy: "alice",
        capabilities: capabilities.slice(0, 1),
      });
      expect(served[0]?.bound).toBe(served[0]?.session);
      expect(events.filter((event) => event.type === "execute.denied")).toEqual([]);
    });

    for (const check of CASES) {
      it(`refuses at the ${place}: ${check.name}`, async () => {
        const agents = await setup();
        const { bearer, ids, capability, at } = await check.arrange(agents, place);
        served = [];
        events = [];
        const answer = await present(at ?? agents, place, bearer, capability);
        expect([answer.status, answer.body]).toEqual([
          check.status,
          { error: check.error, message: check.message },
        ]);
        if (check.status === 401) {
          expect(answer.challenge).toContain(
            check.error === "invalid_jwt" ? 'Bearer error="invalid_token"' : "Bearer",
          );
          expect(answer.challenge).toContain(`AgentAuth discovery="${ISSUER}/.well-known/`);
        }
        expect(events).toEqual([deniedEvent(place, check.error, ids)]);
        expect(served).toEqual([]);
      });
    }
  }

  it("answers 503 at both when the grants store fails, and the token stays spent", async () => {
    const grants = new (class extends MemoryGrantStore {
      down = false;
      override async get(grantId: string) {
        if (this.down) throw new Error("grants store down");
        return super.get(grantId);
      }
    })();
    const agents = await setup({ stores: { grants } });
    const g = await grant(agents);
    for (const place of PLACES) {
      const bearer = await token(agents, place, g);
      grants.down = true;
      const down = await present(agents, place, bearer);
      expect([down.status, down.body.error]).toEqual([503, "temporarily_unavailable"]);
      grants.down = false;
      expect((await present(agents, place, bearer)).body.error).toBe("invalid_jwt");
    }
    expect(served).toEqual([]);
  });
});

describe("openAgentSession", () => {
  it("runs beforeConsume on the verified claims before the token is spent", async () => {
    const agents = await setup();
    const g = await grant(agents);
    const bearer = await token(agents, "execute", g);
    const seen: string[] = [];
    const refused = await openAgentSession(agents.runtime, bearer, EXECUTE, {
      beforeConsume: async (claims) => {
        seen.push(claims.grant_id);
        return { error: "invalid_jwt", message: "the proof does not hold" };
      },
    });
    expect(refused).toEqual({ error: "invalid_jwt", message: "the proof does not hold" });
    expect(seen).toEqual([g.grantId]);
    // Not consumed: the same token still opens a session once.
    const opened = await openAgentSession(agents.runtime, bearer, EXECUTE);
    expect(isDenial(opened)).toBe(false);
    expect(isDenial(await openAgentSession(agents.runtime, bearer, EXECUTE))).toBe(true);
  });
});
