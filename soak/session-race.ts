/**
 * Logout and id rotation raced by requests of the same session in flight
 * (GET /me refreshing the session, GET /visit saving it after a short wait),
 * on a memory store, a Redis store, and two processes sharing one Redis.
 * Counts the rounds after which the old cookie still signed someone in.
 *
 *   npm run soak -- logout
 */
import { createClient } from "redis";
import { startServer } from "../test/processes.ts";

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

const COOKIE = "portcullis-session";
export const ROUNDS = 10;
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
  check(response.status === 200, `expected 200, got ${response.status}`);
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
  check(response.status === 200, `expected 200, got ${response.status}`);
  const signedIn = sessionPair(response);
  check(signedIn !== undefined, "sign-in set no session cookie");
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
    else check(response.status === 401, `old cookie answered ${response.status}`);
  }
  return count;
}

/** Rounds of: sign in, fire traffic, log out in the middle of it; counts rounds the old cookie survived. */
export async function raceLogouts(bases: readonly string[]): Promise<number> {
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
    check(logout.status === 204, `logout answered ${logout.status}`);
    const statuses = await Promise.all([...before, ...after]);
    for (const status of statuses)
      check([200, 401, 403].includes(status), `a request answered ${status}`);
    if ((await stillSignedIn(bases, cookie)) > 0) survived++;
  }
  return survived;
}

/** Rounds of: sign in, fire traffic, sign in again (which rotates the id) in the middle of it. */
export async function raceRotations(bases: readonly string[]): Promise<number> {
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
    check(response.status === 200, `expected 200, got ${response.status}`);
    const rotated = sessionPair(response) as string;
    check(rotated !== undefined && rotated !== cookie, "sign-in did not rotate the id");
    await Promise.all([...before, ...after]);
    if ((await stillSignedIn(bases, cookie)) > 0) survived++;
    // The new id works everywhere.
    for (const other of bases) {
      const me = await fetch(`${other}/me`, { headers: { cookie: rotated } });
      check(me.status === 200, `the new id answered ${me.status}`);
    }
  }
  return survived;
}

/** Starts `count` servers on `store` with a 1 ms touch interval, runs both races, and cleans up. */
export async function raceOn(
  store: "memory" | "redis",
  count: number,
): Promise<{ logouts: number; rotations: number }> {
  const prefix = `portcullis-soak:${crypto.randomUUID()}:`;
  const servers = await Promise.all(
    Array.from({ length: count }, () =>
      startServer({ STORE: store, PREFIX: prefix, TOUCH_MS: "1" }),
    ),
  );
  try {
    const bases = servers.map((server) => server.base);
    return { logouts: await raceLogouts(bases), rotations: await raceRotations(bases) };
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    if (store === "redis") {
      const redis = await createClient({ url: "redis://127.0.0.1:6379" }).connect();
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(keys);
      await redis.quit();
    }
  }
}
