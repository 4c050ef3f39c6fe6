import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { CheckedFields } from "./checked-fields.ts";
import { FieldList } from "./field-list.ts";
import { isPassThrough, passThroughResponse } from "./pass-through.ts";
import { setAbsent } from "./response.ts";

type Operation = readonly ["set" | "append" | "delete" | "get" | "has", string, string?];

/** Applies `ops` to a list, recording every answer and every refusal. */
function run(headers: Headers, ops: readonly Operation[]): unknown[] {
  const log: unknown[] = [];
  for (const [op, name, value] of ops) {
    try {
      if (op === "set") headers.set(name, value as string);
      else if (op === "append") headers.append(name, value as string);
      else if (op === "delete") headers.delete(name);
      else if (op === "get") log.push(headers.get(name));
      else log.push(headers.has(name));
    } catch (error) {
      log.push((error as Error).name);
    }
  }
  log.push([...headers], headers.getSetCookie(), [...headers.keys()], [...headers.values()]);
  const seen: string[] = [];
  headers.forEach((value, name, parent) => {
    seen.push(`${name}=${value}:${parent === headers}`);
  });
  log.push(seen);
  return log;
}

const NAMES = [
  "Vary",
  "vary",
  "Set-Cookie",
  "x-a",
  "X-Z",
  "cache-control",
  "Cookie",
  "bad name",
  "é",
  "",
];
const VALUES = ["1", " padded\t", "a, b", "x\r\ny", "nul\0", "ünï", "☃", "", "k=v; Path=/"];

/** A repeatable stream of integers below `n`, so a failing case can be replayed. */
function seeded(start: number): (n: number) => number {
  let seed = start;
  return (n) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
}

describe("FieldList", () => {
  it("answers every operation as the runtime's Headers does", () => {
    const random = seeded(7);
    const kinds = ["set", "append", "delete", "get", "has"] as const;
    for (let round = 0; round < 300; round++) {
      const ops: Operation[] = [];
      for (let i = 0; i < 12; i++) {
        ops.push([
          kinds[random(kinds.length)] as Operation[0],
          NAMES[random(NAMES.length)] as string,
          VALUES[random(VALUES.length)],
        ]);
      }
      expect(run(new FieldList(), ops)).toEqual(run(new Headers(), ops));
    }
  });

  it("is a Headers, and a Response or Headers built from it carries its fields", () => {
    const list = new FieldList([
      ["x-b", "2"],
      ["set-cookie", "a=1"],
      ["set-cookie", "b=2"],
      ["x-a", "1"],
    ]);
    expect(list).toBeInstanceOf(Headers);
    expect([...new Headers(list)]).toEqual([...list]);
    const response = new Response(null, { headers: list });
    expect(response.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(response.headers.get("x-a")).toBe("1");
  });
});

describe("the pass-through answer", () => {
  it("is recognised, also when a leg copies it, and its copies keep the legs' fields", () => {
    const response = passThroughResponse();
    response.headers.set("x-leg", "1");
    response.headers.append("set-cookie", "s=1");
    expect(isPassThrough(response)).toBe(true);
    const copy = new Response(response.body, response);
    expect(isPassThrough(copy)).toBe(true);
    expect(copy.headers.get("x-leg")).toBe("1");
    expect(copy.headers.getSetCookie()).toEqual(["s=1"]);
    const clone = response.clone();
    expect(isPassThrough(clone)).toBe(true);
    expect([...clone.headers]).toEqual([...response.headers]);
  });

  it("is told apart from a leg's own answer", () => {
    expect(isPassThrough(new Response(null, { status: 200 }))).toBe(false);
    expect(isPassThrough(new Response("body", passThroughResponse()))).toBe(false);
  });
});

describe("CheckedFields and setAbsent", () => {
  it("checks and normalizes once, and refuses what cannot be constant", () => {
    const fields = new CheckedFields([["X-Frame-Options", " DENY "]]);
    expect(fields.names).toEqual(["x-frame-options"]);
    expect(fields.values).toEqual(["DENY"]);
    expect(() => new CheckedFields([["bad name", "x"]])).toThrow(TypeError);
    expect(() => new CheckedFields([["x-a", "a\r\nb"]])).toThrow(TypeError);
    expect(() => new CheckedFields([["Set-Cookie", "a=1"]])).toThrow(TypeError);
    expect(
      () =>
        new CheckedFields([
          ["x-a", "1"],
          ["X-A", "2"],
        ]),
    ).toThrow(TypeError);
  });

  it("adds only the fields the headers lack, on a FieldList and on the runtime's Headers", () => {
    const fields = new CheckedFields([
      ["x-frame-options", "DENY"],
      ["referrer-policy", "no-referrer"],
    ]);
    for (const headers of [new FieldList(), new Headers()]) {
      headers.set("X-Frame-Options", "SAMEORIGIN");
      setAbsent(headers, fields);
      expect([...headers]).toEqual([
        ["referrer-policy", "no-referrer"],
        ["x-frame-options", "SAMEORIGIN"],
      ]);
    }
  });
});

describe("FieldList.parsed", () => {
  type Record_ = Record<string, string | string[] | undefined>;

  /** The runtime's Headers holding what a parser recorded, or the error it refuses with. */
  function reference(record: Record_): Headers | string {
    const headers = new Headers();
    try {
      for (const [name, value] of Object.entries(record)) {
        if (value === undefined || name.startsWith(":")) continue;
        for (const item of typeof value === "string" ? [value] : value) headers.append(name, item);
      }
    } catch (error) {
      return (error as Error).name;
    }
    return headers;
  }

  const RECORD_NAMES = ["cookie", "origin", "x-a", "Upper", "set-cookie", ":path", "accept"];
  const RECORD_VALUES: (string | string[] | undefined)[] = [
    "1",
    " padded\t",
    "a, b",
    "",
    "nul\0",
    ["one", "two"],
    undefined,
    "ünï",
  ];

  it("answers as the runtime's Headers built from the same record, whatever is read first", () => {
    const random = seeded(11);
    const kinds = ["set", "append", "delete", "get", "has"] as const;
    for (let round = 0; round < 400; round++) {
      const record: Record_ = {};
      for (let i = random(5); i > 0; i--) {
        record[RECORD_NAMES[random(RECORD_NAMES.length)] as string] =
          RECORD_VALUES[random(RECORD_VALUES.length)];
      }
      const expected = reference(record);
      if (typeof expected === "string") {
        expect(() => [...FieldList.parsed(record)]).toThrow(TypeError);
        continue;
      }
      const ops: Operation[] = [];
      for (let i = 0; i < 6; i++) {
        ops.push([
          kinds[random(3) === 0 ? random(kinds.length) : 3 + random(2)] as Operation[0],
          NAMES.concat(RECORD_NAMES)[random(NAMES.length + RECORD_NAMES.length)] as string,
          VALUES[random(VALUES.length)],
        ]);
      }
      expect(run(FieldList.parsed(record), ops)).toEqual(run(expected, ops));
    }
  });

  it("reads fields in shape through, and refuses a bad one whenever the whole list is asked for", () => {
    const record = { a: "1", b: " x ", c: "bad\0" };
    const list = FieldList.parsed(record);
    expect(list.get("a")).toBe("1");
    expect(list.get("B")).toBe("x");
    expect(() => list.get("c")).toThrow(TypeError);
    expect(() => [...list]).toThrow(TypeError);
    expect(() => [...list]).toThrow(TypeError); // never half a list
    expect(() => list.set("d", "4")).toThrow(TypeError);
    expect(list.get("a")).toBe("1");
    expect(list.has("zz")).toBe(false);
  });

  it("ignores what the record inherits", () => {
    const record = Object.create({ inherited: "x" }) as Record_;
    record.own = "y";
    const list = FieldList.parsed(record);
    expect(list.get("inherited")).toBeNull();
    expect(list.get("constructor")).toBeNull();
    expect([...list]).toEqual([["own", "y"]]);
  });

  it("still checks and folds names once its cache of names is full", () => {
    const list = new FieldList();
    for (let i = 0; i < 400; i++) list.set(`x-fill-${i}`, "1");
    expect(list.get("X-FILL-399")).toBe("1");
    expect(list.get("X-Late-Name")).toBeNull();
    expect(() => list.get("bad late")).toThrow(TypeError);
    list.set("X-Late-Name", "v");
    expect(list.get("x-late-name")).toBe("v");
  });
});

describe("FieldList as a Headers", () => {
  it("is one to instanceof, toString, printing and the runtime's own constructors", () => {
    const list = new FieldList([
      ["X-A", "1"],
      ["set-cookie", "a=1"],
    ]);
    expect(list instanceof Headers).toBe(true);
    expect(Object.prototype.toString.call(list)).toBe("[object Headers]");
    expect(inspect(list)).toContain("x-a");
    const copy = new Headers(list);
    expect(copy.get("x-a")).toBe("1");
    expect(copy.getSetCookie()).toEqual(["a=1"]);
    expect(new Response("x", { headers: list }).headers.get("x-a")).toBe("1");
    expect(new Request("http://h/", { headers: list }).headers.get("x-a")).toBe("1");
  });
});

describe("FieldList constant blocks", () => {
  const written = (list: FieldList) => {
    const out: [string, string][] = [];
    list.forEachField((name, value) => out.push([name, value]));
    return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  };

  it("writes each field once: the list's own fields over any block's, an earlier block's over a later one's", () => {
    const first = new CheckedFields([
      ["a", "1"],
      ["b", "1"],
    ]);
    const second = new CheckedFields([
      ["b", "2"],
      ["c", "2"],
    ]);
    const disjoint = new CheckedFields([["d", "3"]]);
    const list = new FieldList();
    list.set("c", "own");
    list.addAbsent(first);
    list.addAbsent(second);
    list.addAbsent(disjoint);
    list.set("a", "set after");
    const expected: [string, string][] = [
      ["a", "set after"],
      ["b", "1"],
      ["c", "own"],
      ["d", "3"],
    ];
    expect(written(list)).toEqual(expected);
    expect([...list]).toEqual(expected);
    // Asked again, as every request asks: the remembered overlap of the two blocks still holds.
    const again = new FieldList();
    again.addAbsent(first);
    again.addAbsent(second);
    expect(written(again)).toEqual([
      ["a", "1"],
      ["b", "1"],
      ["c", "2"],
    ]);
  });

  it("copies the blocks in before an append or delete of a name they hold", () => {
    const block = new CheckedFields([["vary", "Origin"]]);
    const list = new FieldList();
    list.addAbsent(block);
    list.append("vary", "Accept");
    expect(list.get("vary")).toBe("Origin, Accept");
    list.delete("vary");
    expect(list.has("vary")).toBe(false);
    expect(written(list)).toEqual([]);
  });
});
