import { createRequire } from "node:module";
import type * as RedisPackage from "redis";
import { InvalidOptionsError } from "../../core/errors.ts";
import { throttledConsole } from "../../core/log.ts";
import { rejectUnknownKeys } from "../../core/options.ts";
import { missingPeer } from "../../core/peer.ts";

/**
 * node-redis, an optional peer dependency, loaded when a client is made
 * rather than with this module: the stores take clients the application
 * made, and an application without the package is told in one line which to
 * install (`MissingPeerError`), not with a module-not-found stack.
 */
function redisPackage(): typeof RedisPackage {
  try {
    return createRequire(import.meta.url)("redis") as typeof RedisPackage;
  } catch (error) {
    throw missingPeer(error, "portcullis/stores/redis", "redis");
  }
}

/** The part of a node-redis client that reports connection errors. */
interface ErrorEmitter {
  on(event: "error", listener: (error: unknown) => void): unknown;
  listenerCount(event: "error"): number;
}

const reportToConsole = throttledConsole("Redis client error");
const listening = new WeakMap<object, Set<(error: unknown) => void>>();

/**
 * Makes sure an `error` event of `client` can never end the process. A
 * node-redis client emits `error` whenever its connection fails; an
 * EventEmitter with no listener for it throws, which kills the process on the
 * first Redis outage. With `onError`, that listener is attached (once per
 * client and listener). Without it, a default one that logs through
 * `console.error` at most once every 10 s is attached only when the client has
 * no listener of its own, and stays quiet once the application adds one.
 * Clients that are not EventEmitters are left alone.
 */
export function guardRedisClient(client: unknown, onError?: (error: unknown) => void): void {
  const emitter = client as Partial<ErrorEmitter> | null;
  if (typeof emitter?.on !== "function" || typeof emitter.listenerCount !== "function") return;
  if (onError !== undefined && typeof onError !== "function")
    throw new InvalidOptionsError("onError must be a function");
  let attached = listening.get(emitter);
  if (attached === undefined) {
    attached = new Set();
    listening.set(emitter, attached);
  }
  const listener = onError ?? reportToConsole;
  if (attached.has(listener)) return;
  if (onError === undefined && emitter.listenerCount("error") > 0) return;
  attached.add(listener);
  const target = emitter as ErrorEmitter;
  target.on("error", (error) => {
    if (onError === undefined && target.listenerCount("error") > attached.size) return;
    try {
      listener(error);
    } catch {
      // A failing logger must not turn a Redis outage into a crash.
    }
  });
}

export interface RedisClientSetup {
  /**
   * Told about every connection error (each failed reconnection attempt
   * included).
   *
   * @default console.error, at most once every 10 s
   */
  readonly onError?: (error: unknown) => void;
  /**
   * Longest wait for a connection to open, in milliseconds.
   *
   * @default 2000
   */
  readonly connectTimeoutMs?: number;
  /**
   * Longest pause between reconnection attempts, which never stop.
   *
   * @default 2000 ms
   */
  readonly maxReconnectDelayMs?: number;
}

/**
 * A node-redis client set up for the stores: it survives Redis outages (an
 * `error` listener is attached, reporting through `onError`), reconnects on
 * its own for as long as it takes (backing off up to `maxReconnectDelayMs`),
 * and fails commands at once while disconnected instead of queueing them
 * (`disableOfflineQueue`), so requests answer 503 rather than wait. Connect it
 * before use: `const redis = await createRedisClient(url).connect()`. Throws
 * `MissingPeerError` when the `redis` package is not installed.
 */
export function createRedisClient(url: string, setup: RedisClientSetup = {}) {
  rejectUnknownKeys("createRedisClient", setup, [
    "onError",
    "connectTimeoutMs",
    "maxReconnectDelayMs",
  ]);
  if (typeof url !== "string" || !/^rediss?:\/\//.test(url))
    throw new InvalidOptionsError("createRedisClient: url must be a redis:// or rediss:// URL");
  const connectTimeout = positiveInteger("connectTimeoutMs", setup.connectTimeoutMs ?? 2000);
  const maxDelay = positiveInteger("maxReconnectDelayMs", setup.maxReconnectDelayMs ?? 2000);
  const client = redisPackage().createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout,
      // Exponential back-off with jitter, so instances do not reconnect in lockstep.
      reconnectStrategy: (retries: number) =>
        Math.min(50 * 2 ** Math.min(retries, 16), maxDelay) + Math.floor(Math.random() * 50),
    },
  });
  guardRedisClient(client, setup.onError);
  return client;
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1)
    throw new InvalidOptionsError(`createRedisClient: ${name} must be a positive integer`);
  return value;
}
