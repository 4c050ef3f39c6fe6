import { describe, expect, it } from "vitest";
import { ExpiryQueue } from "./expiry-queue.ts";

describe("ExpiryQueue", () => {
  it("hands out exactly the keys due, soonest first, whatever the order they came in", () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const queue = new ExpiryQueue<number>();
    const due = new Map<number, number>();
    for (let i = 0; i < 2000; i++) {
      const at = Math.floor(random() * 1000);
      queue.push(i, at);
      due.set(i, at);
    }
    const popped: [number, number][] = [];
    for (const now of [-1, 100, 100, 500, 999]) {
      queue.popDue(now, (key, at) => popped.push([key, at]));
      expect(popped.every(([, at]) => at <= now)).toBe(true);
      expect(queue.size).toBe([...due.values()].filter((at) => at > now).length);
    }
    expect(popped.map(([, at]) => at)).toEqual(
      [...popped.map(([, at]) => at)].sort((a, b) => a - b),
    );
    expect(popped.every(([key, at]) => due.get(key) === at)).toBe(true);
    expect(popped).toHaveLength(2000);
  });

  it("keeps only what retain accepts, still in order", () => {
    const queue = new ExpiryQueue<string>();
    for (let i = 20; i > 0; i--) queue.push(`k${i}`, i);
    queue.retain((_key, at) => at % 2 === 0);
    const out: number[] = [];
    queue.popDue(100, (_key, at) => out.push(at));
    expect(out).toEqual([2, 4, 6, 8, 10, 12, 14, 16, 18, 20]);
  });
});
