import { createClient } from "redis";
import { afterAll, beforeAll } from "vitest";

/**
 * A client on the real Redis the suite needs (scripts/ensure-services.sh
 * starts it), connected before the file's tests and cleaned up after them,
 * with a key prefix of its own. No skip: an unreachable Redis fails the tests.
 */
export function redisForTests() {
  const client = createClient({
    url: process.env.PORTCULLIS_REDIS_URL ?? "redis://127.0.0.1:6379",
  });
  const prefix = `portcullis-test:${crypto.randomUUID()}:`;
  beforeAll(async () => {
    await client.connect();
  });
  afterAll(async () => {
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(keys);
    await client.quit();
  });
  return { client, prefix };
}
