import { EventEmitter } from "node:events";
import { describe, expect, it, vi } from "vitest";
import { redisForTests } from "../../../test/support/redis.ts";
import { newHandler } from "../../chain/index.ts";
import { InvalidOptionsError } from "../../core/errors.ts";
import { createAuthentication } from "../../core/index.ts";
import { authz } from "../../index.ts";
import { type SessionRecord, sessionFrom, sessions } from "../../session/index.ts";
import {
  type RedisSessionClient,
  RedisSessionStore,
  type RedisSessionStoreOptions,
} from "./session-store.ts";

const { client, prefix } = redisForTests();

const record: SessionRecord = {
  data: { cart: [1, 2] },
  createdAt: 1000,
  lastAccessAt: 2000,
  principal: { name: "ada", authorities: ["ADMIN"] },
};

const store = () => new RedisSessionStore({ client, prefix });

describe("RedisSessionStore on a real Redis", () => {
  it("round-trips a record and deletes it, answering whether there was one", async () => {
    const s = store();
    await expect(s.create("a", record, 60_000)).resolves.toBe(true);
    await expect(s.get("a")).resolves.toEqual(record);
    await expect(s.delete("a")).resolves.toBe(true);
    await expect(s.delete("a")).resolves.toBe(false);
    await expect(s.get("a")).resolves.toBeUndefined();
  });

  it("creates only where nothing is (SET NX)", async () => {
    const s = store();
    await expect(s.create("nx", record, 60_000)).resolves.toBe(true);
    await expect(s.create("nx", { ...record, data: { other: true } }, 60_000)).resolves.toBe(false);
    await expect(s.get("nx")).resolves.toEqual(record);
  });

  it("updates only where a record is (SET XX): a deleted session stays deleted", async () => {
    const s = store();
    await expect(s.update("xx", record, 60_000)).resolves.toBe(false);
    await expect(client.exists(`${prefix}xx`)).resolves.toBe(0);
    await s.create("xx", record, 60_000);
    await expect(s.update("xx", { ...record, data: { n: 2 } }, 60_000)).resolves.toBe(true);
    await expect(s.get("xx")).resolves.toMatchObject({ data: { n: 2 } });
    await s.delete("xx");
    await expect(s.update("xx", record, 60_000)).resolves.toBe(false);
    await expect(client.exists(`${prefix}xx`)).resolves.toBe(0);
  });

  it("touches only where a record is, changing the time and TTL and keeping the data saved meanwhile", async () => {
    const s = store();
    await expect(s.touch("t", 5000, 60_000)).resolves.toBe(false);
    await expect(client.exists(`${prefix}t`)).resolves.toBe(0);
    await s.create("t", record, 1000);
    await s.update("t", { ...record, data: { saved: "later" } }, 1000);
    await expect(s.touch("t", 5000, 60_000)).resolves.toBe(true);
    await expect(s.get("t")).resolves.toEqual({
      ...record,
      data: { saved: "later" },
      lastAccessAt: 5000,
    });
    expect(await client.pTTL(`${prefix}t`)).toBeGreaterThan(1000);
    await s.delete("t");
    await expect(s.touch("t", 6000, 60_000)).resolves.toBe(false);
    await expect(client.exists(`${prefix}t`)).resolves.toBe(0);
  });

  it("refreshes only the TTL of a record stored in another layout", async () => {
    const s = store();
    const foreign = JSON.stringify({ data: {}, createdAt: 1, lastAccessAt: 1 });
    await client.set(`${prefix}foreign`, foreign, { expiration: { type: "PX", value: 1000 } });
    await expect(s.touch("foreign", 9, 60_000)).resolves.toBe(true);
    await expect(client.get(`${prefix}foreign`)).resolves.toBe(foreign);
    expect(await client.pTTL(`${prefix}foreign`)).toBeGreaterThan(1000);
  });

  it("gives the key a millisecond TTL no longer than asked", async () => {
    await store().create("ttl", record, 5_000);
    const ttl = await client.pTTL(`${prefix}ttl`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(5_000);
  });

  it("expires records after their TTL", async () => {
    const s = store();
    await s.create("short", record, 50);
    await new Promise((r) => setTimeout(r, 120));
    await expect(s.get("short")).resolves.toBeUndefined();
  });

  it("reads garbage or a forged shape as no session", async () => {
    const s = store();
    await client.set(`${prefix}garbage`, "{not json");
    await client.set(
      `${prefix}forged`,
      JSON.stringify({
        data: {},
        createdAt: 1,
        lastAccessAt: 1,
        principal: { name: "x", authorities: [1] },
      }),
    );
    await client.set(
      `${prefix}null-principal`,
      JSON.stringify({ data: {}, createdAt: 1, lastAccessAt: 1, principal: null }),
    );
    await expect(s.get("garbage")).resolves.toBeUndefined();
    await expect(s.get("forged")).resolves.toBeUndefined();
    await expect(s.get("null-principal")).resolves.toBeUndefined();
  });

  it("a non-positive TTL writes nothing; on update it deletes", async () => {
    const s = store();
    await expect(s.create("zero", record, 0)).resolves.toBe(false);
    await expect(client.exists(`${prefix}zero`)).resolves.toBe(0);
    await s.create("gone", record, 60_000);
    await expect(s.update("gone", record, 0)).resolves.toBe(false);
    await expect(client.exists(`${prefix}gone`)).resolves.toBe(0);
  });

  it("shares a signed-in session between two chains, as two instances would", async () => {
    const handler = async (request: Request) => {
      const session = sessionFrom(request);
      if (new URL(request.url).pathname === "/public/sign-in" && session) {
        session.setAuthentication(createAuthentication("ada", ["ADMIN"]));
        await session.save();
      }
      return new Response("ok");
    };
    const build = () =>
      newHandler(handler, {
        session: sessions({ store: new RedisSessionStore({ client, prefix }) }),
        authorization: authz.routes([
          authz.match("/public/**").permitAll(),
          authz.anyRequest().hasRole("ADMIN"),
        ]),
      });
    const first = build();
    const second = build();
    const signIn = await first(new Request("https://app.test/public/sign-in"));
    const cookie = signIn.headers.getSetCookie()[0]?.split(";")[0] ?? "";
    expect(cookie).toMatch(/^__Host-portcullis-session=/);
    const onOther = await second(new Request("https://app.test/admin", { headers: { cookie } }));
    expect(onOther.status).toBe(200);
    const anonymous = await second(new Request("https://app.test/admin"));
    expect(anonymous.status).toBe(401);
  });
});

/** A client whose every command waits forever, as one talking to a frozen Redis does. */
function stalledClient(): RedisSessionClient {
  const never = () => new Promise<never>(() => {});
  return { get: never, set: never, del: never, evalSha: never, eval: never };
}

describe("RedisSessionStore without a usable Redis", () => {
  it.each([
    ["get", (s: RedisSessionStore) => s.get("x")],
    ["create", (s: RedisSessionStore) => s.create("x", record, 1000)],
    ["update", (s: RedisSessionStore) => s.update("x", record, 1000)],
    ["touch", (s: RedisSessionStore) => s.touch("x", 1, 1000)],
    ["delete", (s: RedisSessionStore) => s.delete("x")],
  ])("rejects a %s Redis does not answer once timeoutMs has passed", async (_name, call) => {
    const s = new RedisSessionStore({ client: stalledClient(), timeoutMs: 30 });
    await expect(call(s)).rejects.toThrow(/did not answer within 30 ms/);
  });

  it("attaches an error listener to a client with none, so a Redis outage cannot end the process", () => {
    const emitter = Object.assign(new EventEmitter(), stalledClient());
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      new RedisSessionStore({ client: emitter });
      new RedisSessionStore({ client: emitter }); // a second store adds no second listener
      expect(emitter.listenerCount("error")).toBe(1);
      expect(() => emitter.emit("error", new Error("ECONNREFUSED"))).not.toThrow();
      emitter.emit("error", new Error("ECONNREFUSED")); // within 10 s of the first: not logged
      expect(errors).toHaveBeenCalledTimes(1);
    } finally {
      errors.mockRestore();
    }
  });

  it("reports through onError, and leaves a client that has its own listener alone", () => {
    const own = Object.assign(new EventEmitter(), stalledClient());
    const mine = vi.fn();
    own.on("error", mine);
    new RedisSessionStore({ client: own });
    expect(own.listenerCount("error")).toBe(1);

    const reported = Object.assign(new EventEmitter(), stalledClient());
    const onError = vi.fn();
    new RedisSessionStore({ client: reported, onError });
    reported.emit("error", new Error("down"));
    expect(onError).toHaveBeenCalledOnce();
  });

  it.each([
    ["no client", {}],
    ["a client without commands", { client: {} }],
    ["a misspelt option", { client, prefx: "x" }],
    ["timeoutMs 0", { client, timeoutMs: 0 }],
    ["a fractional timeoutMs", { client, timeoutMs: 1.5 }],
    ["a prefix that is not a string", { client, prefix: 5 }],
    ["an onError that is not a function", { client, onError: "log" }],
  ])("refuses to be built with %s", (_label, options) => {
    expect(() => new RedisSessionStore(options as unknown as RedisSessionStoreOptions)).toThrow(
      InvalidOptionsError,
    );
  });
});
