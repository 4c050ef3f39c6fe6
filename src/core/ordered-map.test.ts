import { describe, expect, it } from "vitest";
import { OrderedMap } from "./ordered-map.ts";

describe("OrderedMap", () => {
  it("keeps the same entries in the same order as a Map through random adds, replaces and deletes", () => {
    let seed = 11;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return Math.floor((seed / 2 ** 31) * n);
    };
    const ours = new OrderedMap<number, number>();
    const map = new Map<number, number>();
    for (let i = 0; i < 5000; i++) {
      const key = random(200);
      if (random(3) === 0) expect(ours.delete(key)).toBe(map.delete(key));
      else {
        ours.set(key, i);
        map.set(key, i);
      }
      expect(ours.size).toBe(map.size);
      expect(ours.firstKey()).toBe(map.keys().next().value);
      expect(ours.get(key)).toBe(map.get(key));
      expect(ours.has(key)).toBe(map.has(key));
    }
    expect([...ours]).toEqual([...map]);
    expect([...ours.keys()]).toEqual([...map.keys()]);
  });

  it("moves an entry to the end only when it is deleted and set again", () => {
    const ours = new OrderedMap<string, number>().set("a", 1).set("b", 2).set("c", 3);
    ours.set("a", 10);
    expect([...ours]).toEqual([
      ["a", 10],
      ["b", 2],
      ["c", 3],
    ]);
    ours.delete("a");
    ours.set("a", 11);
    expect([...ours.keys()]).toEqual(["b", "c", "a"]);
  });

  it("walks on past entries deleted during the walk, the current one included", () => {
    const ours = new OrderedMap<number, string>();
    for (let i = 0; i < 10; i++) ours.set(i, `v${i}`);
    const seen: number[] = [];
    for (const [key] of ours) {
      seen.push(key);
      ours.delete(key);
      ours.delete(key + 1);
    }
    expect(seen).toEqual([0, 2, 4, 6, 8]);
    expect(ours.size).toBe(0);
    expect(ours.firstKey()).toBeUndefined();
    ours.set(42, "again");
    expect([...ours]).toEqual([[42, "again"]]);
  });
});
