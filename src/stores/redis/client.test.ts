import { EventEmitter } from "node:events";
import { describe, expect, it, vi } from "vitest";
import { InvalidOptionsError } from "../../core/errors.ts";
import { createRedisClient, guardRedisClient, type RedisClientSetup } from "./client.ts";
import { RedisLoginAttemptStore } from "./login-attempt-store.ts";
import { RedisRateLimitStore } from "./rate-limit-store.ts";

const commands = () => {
  const never = () => new Promise<never>(() => {});
  return { evalSha: never, eval: never, del: never };
};

describe("createRedisClient", () => {
  it("makes a client that survives connection errors, fails fast while disconnected, and reconnects for good", async () => {
    const onError = vi.fn();
    // Nothing listens on port 1: every attempt fails.
    const client = createRedisClient("redis://127.0.0.1:1", { onError, maxReconnectDelayMs: 20 });
    expect(client.listenerCount("error")).toBe(1);
    expect(client.options?.disableOfflineQueue).toBe(true);
    const connecting = client.connect().catch(() => {});
    try {
      await vi.waitFor(() => expect(onError.mock.calls.length).toBeGreaterThanOrEqual(3), {
        timeout: 5000,
      });
      // Still trying, and a command fails at once instead of waiting in a queue.
      await expect(client.get("x")).rejects.toThrow();
    } finally {
      client.destroy();
      await connecting;
    }
  });

  it.each([
    ["a URL of another scheme", "http://127.0.0.1:6379", {}],
    ["a misspelt option", "redis://127.0.0.1:6379", { onEror: () => {} }],
    ["connectTimeoutMs 0", "redis://127.0.0.1:6379", { connectTimeoutMs: 0 }],
    ["a fractional maxReconnectDelayMs", "redis://127.0.0.1:6379", { maxReconnectDelayMs: 1.5 }],
    ["an onError that is not a function", "redis://127.0.0.1:6379", { onError: 1 }],
  ])("refuses %s", (_label, url, setup) => {
    expect(() => createRedisClient(url, setup as unknown as RedisClientSetup)).toThrow(
      InvalidOptionsError,
    );
  });
});

describe("guardRedisClient and the scripted stores", () => {
  it("the rate-limit and login-attempt stores give a client without an error listener one", () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      for (const make of [
        (client: EventEmitter) =>
          new RedisRateLimitStore({ client: Object.assign(client, commands()) }),
        (client: EventEmitter) =>
          new RedisLoginAttemptStore({ client: Object.assign(client, commands()) }),
      ]) {
        const client = new EventEmitter();
        make(client);
        expect(client.listenerCount("error")).toBe(1);
        expect(() => client.emit("error", new Error("ECONNRESET"))).not.toThrow();
      }
    } finally {
      errors.mockRestore();
    }
  });

  it("the default listener goes quiet once the application listens itself", () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const client = new EventEmitter();
      guardRedisClient(client);
      client.on("error", () => {});
      client.emit("error", new Error("down"));
      expect(errors).not.toHaveBeenCalled();
    } finally {
      errors.mockRestore();
    }
  });

  it("a throwing onError does not turn a Redis error into a crash", () => {
    const client = new EventEmitter();
    guardRedisClient(client, () => {
      throw new Error("logger down");
    });
    expect(() => client.emit("error", new Error("down"))).not.toThrow();
  });

  it("leaves objects that are not EventEmitters alone", () => {
    expect(() => guardRedisClient({})).not.toThrow();
    expect(() => guardRedisClient(undefined)).not.toThrow();
  });
});
