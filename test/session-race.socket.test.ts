/**
 * Logout and id rotation against requests of the same session in flight: once
 * the logout (or the sign-in that rotates the id) has answered, the old id
 * never authenticates again, on any instance. Real sockets, real concurrency,
 * a memory store, a Redis store, and two processes sharing one Redis.
 */
import { describe, expect, it } from "vitest";
import { ROUNDS, raceOn } from "../soak/session-race.ts";

describe.each([
  ["a memory store, one process", "memory", 1],
  ["a Redis store, one process", "redis", 1],
  ["a Redis store shared by two processes", "redis", 2],
] as const)(
  "logout and rotation under concurrent refreshes and saves: %s",
  (_label, store, count) => {
    it(`ends the session for good in ${ROUNDS} of ${ROUNDS} raced logouts and rotations`, async () => {
      expect(await raceOn(store, count)).toEqual({ logouts: 0, rotations: 0 });
    }, 120_000);
  },
);
