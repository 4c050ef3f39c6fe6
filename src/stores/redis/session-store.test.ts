import { describe, expect, it } from "vitest";
import { newHandler } from "../../chain/index.ts";
import { createAuthentication } from "../../core/index.ts";
import { authz } from "../../index.ts";
import { sessionFrom, sessions } from "../../session/index.ts";
import { RedisSessionStore } from "./session-store.ts";
import { redisForTests } from "./testing/redis.ts";

const { client, prefix } = redisForTests();

const record = {
  data: { cart: [1, 2] },
  createdAt: 1000,
  lastAccessAt: 2000,
  principal: { name: "ada", authorities: ["ADMIN"] },
};

describe("RedisSessionStore on a real Redis", () => {
  it("round-trips a record and deletes it", async () => {
    const store = new RedisSessionStore(client, { prefix });
    await store.set("a", record, 60_000);
    await expect(store.get("a")).resolves.toEqual(record);
    await store.delete("a");
    await expect(store.get("a")).resolves.toBeUndefined();
  });

  it("gives the key a millisecond TTL no longer than asked", async () => {
    const store = new RedisSessionStore(client, { prefix });
    await store.set("ttl", record, 5_000);
    const ttl = await client.pTTL(`${prefix}ttl`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(5_000);
  });

  it("expires records after their TTL", async () => {
    const store = new RedisSessionStore(client, { prefix });
    await store.set("short", record, 50);
    await new Promise((r) => setTimeout(r, 120));
    await expect(store.get("short")).resolves.toBeUndefined();
  });

  it("reads garbage or a forged shape as no session", async () => {
    const store = new RedisSessionStore(client, { prefix });
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
    await expect(store.get("garbage")).resolves.toBeUndefined();
    await expect(store.get("forged")).resolves.toBeUndefined();
  });

  it("a zero TTL deletes instead of writing", async () => {
    const store = new RedisSessionStore(client, { prefix });
    await store.set("gone", record, 60_000);
    await store.set("gone", record, 0);
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
        session: sessions({ store: new RedisSessionStore(client, { prefix }) }),
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
