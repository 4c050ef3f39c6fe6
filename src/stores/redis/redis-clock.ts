import { createHash } from "node:crypto";

/** What reading Redis's clock needs of a client: the scripted stores' own commands. */
interface TimeClient {
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

// Redis's clock is read again this often, so a drift or a step of either clock is soon followed.
const READ_EVERY_MS = 10_000;
// A reading that took longer than this errs early by up to its round trip, which shortens every
// call's time at Redis: the clock is read again soon after it.
const GOOD_ROUND_TRIP_MS = 50;
const AGAIN_SOON_MS = 1000;

const TIME = "return redis.call('TIME')";
const TIME_SHA1 = createHash("sha1").update(TIME).digest("hex");

interface Reading {
  /** Redis's clock minus `performance.now()`, in ms; never more than the true difference. */
  readonly offset: number;
  readonly roundTrip: number;
}

/**
 * How far Redis's clock (its `TIME`, milliseconds since the epoch) is from
 * this process's `performance.now()`, read through the client the stores
 * use. A reading is taken as if Redis had read its clock when the answer
 * arrived here, the latest it can have: the offset is then never more than
 * the truth, and a deadline moved onto Redis's clock by it is never later
 * than the caller's own, whatever the skew between the two hosts' clocks.
 */
class RedisClock {
  #reading: Reading | undefined;
  #nextRead = Number.NEGATIVE_INFINITY;
  #pending: Promise<Reading> | undefined;

  /** The offset; read first when there is none, and again in the background when due. */
  async offset(client: TimeClient): Promise<number> {
    const reading = this.#reading;
    if (reading === undefined) return (await this.#read(client)).offset;
    if (performance.now() >= this.#nextRead)
      this.#read(client).catch(() => {
        // The calls that need Redis report its failures; the clock is read again on the next one.
      });
    return reading.offset;
  }

  /** Redis refused a call as late: the offset may be stale (a clock was stepped); read it again. */
  doubt(): void {
    this.#nextRead = Number.NEGATIVE_INFINITY;
  }

  #read(client: TimeClient): Promise<Reading> {
    this.#pending ??= readClock(client)
      .then((reading) => {
        this.#reading = reading;
        const good = reading.roundTrip <= GOOD_ROUND_TRIP_MS;
        this.#nextRead = performance.now() + (good ? READ_EVERY_MS : AGAIN_SOON_MS);
        return reading;
      })
      .finally(() => {
        this.#pending = undefined;
      });
    return this.#pending;
  }
}

async function readClock(client: TimeClient): Promise<Reading> {
  const args = { keys: [], arguments: [] };
  const sent = performance.now();
  let reply: unknown;
  try {
    reply = await client.evalSha(TIME_SHA1, args);
  } catch (error) {
    if (!String((error as Error)?.message).startsWith("NOSCRIPT")) throw error;
    reply = await client.eval(TIME, args);
  }
  const received = performance.now();
  const [seconds, micros] = Array.isArray(reply) ? reply.map(Number) : [];
  if (!Number.isSafeInteger(seconds) || !Number.isSafeInteger(micros))
    throw new TypeError("unexpected reply from Redis's TIME");
  const redisNow = (seconds as number) * 1000 + (micros as number) / 1000;
  return { offset: redisNow - received, roundTrip: received - sent };
}

const clocks = new WeakMap<object, RedisClock>();

/** The clock of the Redis behind `client`, one per client. */
export function redisClock(client: object): RedisClock {
  let clock = clocks.get(client);
  if (clock === undefined) {
    clock = new RedisClock();
    clocks.set(client, clock);
  }
  return clock;
}
