/**
 * Logout and id rotation against requests of the same session in flight: once
 * the logout (or the sign-in that rotates the id) has answered, the old id
 * never authenticates again, on any instance. Real sockets, real concurrency,
 * a memory store, a Redis store, and two processes sharing one Redis.
 */
import { createClient } from "redis";
import { afterAll, describe, expect, it } from "vitest";
import { type ServerProcess, startServer } from "./processes.ts";

const COOKIE = "portcullis-session";
const ROUNDS = 10;
const WIDTH = 40;

function sessionPair(response: Response): string | undefined {
  for (const line of response.headers.getSetCookie()) {
    const pair = line.split(";")[0] ?? "";
    if (pair.startsWith(`${COOKIE}=`) && pair.length > COOKIE.length + 1) return pair;
  }
  return undefined;
}

async function token(base: string, cookie?: string): Promise<{ token: string; cookie: string }> {
  const response = await fetch(`${base}/csrf`, { headers: cookie ? { cookie } : {} });
  expect(response.status).toBe(200);
  const { token } = (await response.json()) as { token: string };
  return { token, cookie: sessionPair(response) ?? (cookie as string) };
}

async function signIn(base: string, cookie?: string): Promise<string> {
  const csrf = await token(base, cookie);
  const response = await fetch(`${base}/login`, {
    method: "POST",
    headers: {
      cookie: csrf.cookie,
      "x-csrf-token": csrf.token,
      "content-type": "application/json",
    },
    body: JSON.stringify({ username: "alice", password: "alice-pw" }),
  });
  expect(response.status).toBe(200);
  const signedIn = sessionPair(response);
  expect(signedIn).toBeDefined();
  return signedIn as string;
}

/** GET /me and GET /visit (which saves the session after a short wait) with `cookie`, across `bases`. */
function traffic(bases: readonly string[], cookie: string, count: number): Promise<number>[] {
  return Array.from({ length: count }, async (_, i) => {
    const base = bases[i % bases.length] as string;
    const response = await fetch(`${base}${i % 2 === 0 ? "/me" : "/visit"}`, {
      headers: { cookie },
    });
    await response.arrayBuffer();
    return response.status;
  });
}

/** How many of `bases` still let `cookie` in. */
async function stillSignedIn(bases: readonly string[], cookie: string): Promise<number> {
  let count = 0;
  for (const base of bases) {
    const response = await fetch(`${base}/me`, { headers: { cookie } });
    await response.arrayBuffer();
    if (response.status === 200) count++;
    else expect(response.status).toBe(401);
  }
  return count;
}

/** Rounds of: sign in, fire traffic, log out in the middle of it; counts rounds the old cookie survived. */
async function raceLogouts(bases: readonly string[]): Promise<number> {
  let survived = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const cookie = await signIn(bases[0] as string);
    const { token: csrf } = await token(bases[round % bases.length] as string, cookie);
    const before = traffic(bases, cookie, WIDTH / 2);
    const logout = await fetch(`${bases[round % bases.length]}/logout`, {
      method: "POST",
      headers: { cookie, "x-csrf-token": csrf },
    });
    const after = traffic(bases, cookie, WIDTH / 2);
    expect(logout.status).toBe(204);
    const statuses = await Promise.all([...before, ...after]);
    for (const status of statuses) expect([200, 401, 403]).toContain(status);
    if ((await stillSignedIn(bases, cookie)) > 0) survived++;
  }
  return survived;
}

/** Rounds of: sign in, fire traffic, sign in again (which rotates the id) in the middle of it. */
async function raceRotations(bases: readonly string[]): Promise<number> {
  let survived = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const cookie = await signIn(bases[0] as string);
    const base = bases[round % bases.length] as string;
    const csrf = await token(base, cookie);
    const before = traffic(bases, cookie, WIDTH / 2);
    const login = fetch(`${base}/login`, {
      method: "POST",
      headers: { cookie, "x-csrf-token": csrf.token, "content-type": "application/json" },
      body: JSON.stringify({ username: "alice", password: "alice-pw" }),
    });
    const after = traffic(bases, cookie, WIDTH / 2);
    const response = await login;
    expect(response.status).toBe(200);
    const rotated = sessionPair(response) as string;
    expect(rotated).toBeDefined();
    expect(rotated).not.toBe(cookie);
    await Promise.all([...before, ...after]);
    if ((await stillSignedIn(bases, cookie)) > 0) survived++;
    // The new id works everywhere.
    for (const other of bases) {
      const me = await fetch(`${other}/me`, { headers: { cookie: rotated } });
      expect(me.status).toBe(200);
    }
  }
  return survived;
}

const servers: ServerProcess[] = [];
const prefixes: string[] = [];
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  const redis = await createClient({ url: "redis://127.0.0.1:6379" }).connect();
  for (const prefix of prefixes) {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(keys);
  }
  await redis.quit();
});

async function start(count: number, env: Record<string, string>): Promise<string[]> {
  const started = await Promise.all(Array.from({ length: count }, () => startServer(env)));
  servers.push(...started);
  return started.map((server) => server.base);
}

describe.each([
  ["a memory store, one process", 1, { STORE: "memory" }],
  ["a Redis store, one process", 1, { STORE: "redis" }],
  ["a Redis store shared by two processes", 2, { STORE: "redis" }],
])("logout and rotation under concurrent refreshes and saves: %s", (_label, count, env) => {
  let bases: string[] = [];
  const prefix = `portcullis-test:${crypto.randomUUID()}:`;
  prefixes.push(prefix);

  it(`ends the session for good in ${ROUNDS} of ${ROUNDS} raced logouts`, async () => {
    bases = await start(count, { ...env, PREFIX: prefix, TOUCH_MS: "1" });
    expect(await raceLogouts(bases)).toBe(0);
  }, 120_000);

  it(`retires the old id for good in ${ROUNDS} of ${ROUNDS} raced rotations`, async () => {
    expect(await raceRotations(bases)).toBe(0);
  }, 120_000);
});
