/**
 * The memory stores' cost per call as they fill: recording a used token id
 * with n ids held, and starting a device flow with n codes held (the store at
 * its capacity, every record live, so each call also looks for room).
 */
import { MemoryReplayStore } from "portcullis/agentauth";
import { type DeviceCodeRecord, MemoryDeviceCodeStore } from "portcullis/oauth2";

const CALLS = 2_000;

function perCall(label: string, micros: number): void {
  console.log(`  ${label.padEnd(58)} ${micros.toFixed(2).padStart(9)} µs/call`);
}

async function replayAt(held: number, full: boolean): Promise<number> {
  const now = Date.now();
  const store = new MemoryReplayStore({ maxEntries: full ? held : held + CALLS });
  for (let i = 0; i < held; i++) await store.setIfAbsent(`held-${i}`, now + 600_000 + i, now);
  const start = performance.now();
  for (let i = 0; i < CALLS; i++)
    await store.setIfAbsent(`new-${i}`, now + 600_000 - i, now).catch(() => false);
  return ((performance.now() - start) * 1000) / CALLS;
}

function record(client: string, i: number, now: number): DeviceCodeRecord {
  return {
    deviceCodeHash: `dc-${client}-${i}`,
    userCodeHash: `uc-${client}-${i}`,
    clientId: client,
    scope: ["read"],
    createdAt: now,
    expiresAt: now + 600_000,
    intervalMs: 5000,
    status: "pending",
  };
}

async function deviceCodesAt(held: number): Promise<number> {
  const now = Date.now();
  const store = new MemoryDeviceCodeStore({ maxEntries: held });
  for (let i = 0; i < held; i++) await store.create(record(`client-${i}`, 0, now), now);
  const start = performance.now();
  // Every call finds the store full of live codes and is refused, as a flood would be.
  for (let i = 0; i < CALLS; i++) await store.create(record("newcomer", i, now), now);
  return ((performance.now() - start) * 1000) / CALLS;
}

export async function memoryStoreBenchmarks(): Promise<void> {
  console.log(`\nmemory stores: cost per call with n entries held (${CALLS} calls each)`);
  await replayAt(1_000, false); // warm-up
  for (const held of [10_000, 100_000]) {
    perCall(`MemoryReplayStore.setIfAbsent, ${held} ids held`, await replayAt(held, false));
    perCall(
      `MemoryReplayStore.setIfAbsent when full, ${held} live ids`,
      await replayAt(held, true),
    );
  }
  for (const held of [1_000, 10_000])
    perCall(
      `MemoryDeviceCodeStore.create when full, ${held} live codes`,
      await deviceCodesAt(held),
    );
}

if (import.meta.url === `file://${process.argv[1]}`) await memoryStoreBenchmarks();
