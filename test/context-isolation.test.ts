import {
  authenticationFrom,
  authz,
  basicAuth,
  type LoginUser,
  type Middleware,
  mustAuthentication,
  newHandler,
  passwordCredentials,
} from "portcullis";
import { describe, expect, it } from "vitest";
import { LoginEndpoint } from "../src/login/endpoint.ts";
import { basicHeader, randomDelay } from "./helpers.ts";
import { plainTextEncoder } from "./support/plain-text-encoder.ts";

const COUNT = 200;

const users = new Map<string, LoginUser>();
for (let i = 0; i < COUNT; i++) {
  users.set(`user${i}`, {
    name: `user${i}`,
    authorities: [`ROLE_${i}`],
    passwordHash: `{plain}pw-${i}`,
  });
}
const plain = plainTextEncoder();

/** A leg that waits a random moment before and after the rest of the chain. */
const slow: Middleware =
  (next) =>
  async (request, ...rest) => {
    await randomDelay();
    const response = await next(request, ...rest);
    await randomDelay();
    return response;
  };

/** A leg after authentication that checks the principal does not change while it waits. */
const stablePrincipal: Middleware =
  (next) =>
  async (request, ...rest) => {
    const before = authenticationFrom(request)?.name;
    await randomDelay();
    const response = await next(request, ...rest);
    await randomDelay();
    if (authenticationFrom(request)?.name !== before)
      return new Response("changed", { status: 409 });
    return response;
  };

describe("context isolation under concurrency", () => {
  it(`gives each of ${COUNT} concurrent requests exactly its own principal`, async () => {
    const handler = newHandler(
      async (request) => {
        await randomDelay();
        const first = mustAuthentication(request);
        await randomDelay();
        const second = mustAuthentication(request);
        return Response.json({
          first: first.name,
          second: second.name,
          authorities: second.authorities,
        });
      },
      {
        headers: slow,
        cors: slow,
        rateLimit: slow,
        session: slow,
        authentication: [
          basicAuth({
            credentials: passwordCredentials({
              findUser: async (name) => {
                await randomDelay();
                return users.get(name);
              },
              passwordEncoder: {
                ...plain,
                verify: async (presented, stored) => {
                  await randomDelay();
                  return plain.verify(presented, stored);
                },
              },
            }),
          }),
          stablePrincipal,
        ],
        csrf: slow,
        login: new LoginEndpoint(slow),
        authorization: authz.routes([authz.anyRequest().authenticated()]),
      },
    );

    const results = await Promise.all(
      Array.from({ length: COUNT }, async (_, i) => {
        const response = await handler(
          new Request(`http://h/me?i=${i}`, {
            headers: { authorization: basicHeader(`user${i}`, `pw-${i}`) },
          }),
        );
        return { i, status: response.status, body: await response.json() };
      }),
    );

    for (const { i, status, body } of results) {
      expect(status).toBe(200);
      expect(body).toEqual({ first: `user${i}`, second: `user${i}`, authorities: [`ROLE_${i}`] });
    }
  });

  it("keeps a denied request's anonymity while its neighbours sign in", async () => {
    let ran = 0;
    const handler = newHandler(
      async (request) => {
        ran++;
        await randomDelay();
        return new Response(mustAuthentication(request).name);
      },
      {
        session: slow,
        authentication: basicAuth({
          credentials: passwordCredentials({
            findUser: (name) => users.get(name),
            passwordEncoder: plain,
          }),
          required: false,
        }),
        authorization: authz.routes([authz.anyRequest().authenticated()]),
      },
    );
    const statuses = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        const signedIn = i % 2 === 0;
        const init = signedIn
          ? { headers: { authorization: basicHeader(`user${i}`, `pw-${i}`) } }
          : {};
        const response = await handler(new Request("http://h/", init));
        return { signedIn, status: response.status, text: await response.text(), i };
      }),
    );
    for (const { signedIn, status, text, i } of statuses) {
      if (signedIn) {
        expect(status).toBe(200);
        expect(text).toBe(`user${i}`);
      } else {
        expect(status).toBe(401);
      }
    }
    expect(ran).toBe(25);
  });
});
