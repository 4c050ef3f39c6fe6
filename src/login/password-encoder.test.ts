import { afterEach, describe, expect, it, vi } from "vitest";
import { InvalidOptionsError } from "../core/errors.ts";
import {
  createPasswordEncoder,
  DelegatingPasswordEncoder,
  type PasswordEncoder,
  Pbkdf2PasswordEncoder,
  ScryptPasswordEncoder,
} from "./index.ts";

const scrypt = () => new ScryptPasswordEncoder({ logN: 10, r: 8, p: 1 });
const pbkdf2 = () => new Pbkdf2PasswordEncoder({ iterations: 1000 });
const SCRYPT_HASH = /^\{scrypt\}ln=10,r=8,p=1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/;
const PBKDF2_HASH = /^\{pbkdf2-sha256\}i=1000\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/;

/** Changes the character at `index` (counted from the end when negative) to another base64url character. */
function flip(text: string, index: number): string {
  const at = index < 0 ? text.length + index : index;
  const swapped = text[at] === "Q" ? "R" : "Q";
  return text.slice(0, at) + swapped + text.slice(at + 1);
}

function parts(encoded: string): { head: string; salt: string; key: string } {
  const [head = "", salt = "", key = ""] = encoded.split("$");
  return { head, salt, key };
}

describe.each([
  ["ScryptPasswordEncoder", scrypt, SCRYPT_HASH],
  ["Pbkdf2PasswordEncoder", pbkdf2, PBKDF2_HASH],
] as const)("%s", (_name, make, shape) => {
  it("verifies the password it hashed and nothing else", async () => {
    const encoder = make();
    const hash = await encoder.hash("correct horse battery staple");
    expect(hash).toMatch(shape);
    await expect(encoder.verify("correct horse battery staple", hash)).resolves.toBe(true);
    await expect(encoder.verify("correct horse battery stapl", hash)).resolves.toBe(false);
    await expect(encoder.verify("Correct horse battery staple", hash)).resolves.toBe(false);
    await expect(encoder.verify("", hash)).resolves.toBe(false);
  });

  it("round-trips non-ASCII passwords", async () => {
    const encoder = make();
    const hash = await encoder.hash("pässwörd 🔑 密码");
    await expect(encoder.verify("pässwörd 🔑 密码", hash)).resolves.toBe(true);
    await expect(encoder.verify("passwort 🔑 密码", hash)).resolves.toBe(false);
  });

  it("salts: two hashes of one password differ and both verify", async () => {
    const encoder = make();
    const a = await encoder.hash("same");
    const b = await encoder.hash("same");
    expect(a).not.toBe(b);
    expect(parts(a).salt).not.toBe(parts(b).salt);
    await expect(encoder.verify("same", a)).resolves.toBe(true);
    await expect(encoder.verify("same", b)).resolves.toBe(true);
  });

  it("refuses a tampered hash: changed key, changed salt, swapped salts", async () => {
    const encoder = make();
    const hash = await encoder.hash("secret");
    const { head, salt, key } = parts(hash);
    const other = parts(await encoder.hash("secret"));
    for (const tampered of [
      `${head}$${salt}$${flip(key, 10)}`,
      `${head}$${salt}$${flip(key, 0)}`,
      `${head}$${flip(salt, 5)}$${key}`,
      `${head}$${other.salt}$${key}`,
    ]) {
      await expect(encoder.verify("secret", tampered), tampered).resolves.toBe(false);
    }
  });

  it("does not need a rehash for its own hash", async () => {
    const encoder = make();
    expect(encoder.needsRehash(await encoder.hash("x"))).toBe(false);
  });
});

describe("ScryptPasswordEncoder parameters", () => {
  it("refuses a hash whose cost parameters were changed", async () => {
    const encoder = scrypt();
    const hash = await encoder.hash("secret");
    for (const edited of [
      hash.replace("ln=10", "ln=11"),
      hash.replace("r=8", "r=9"),
      hash.replace("p=1", "p=2"),
    ]) {
      await expect(encoder.verify("secret", edited), edited).resolves.toBe(false);
    }
  });

  it("needs a rehash for weaker parameters and for other algorithms, not for stronger ones", async () => {
    const strong = new ScryptPasswordEncoder({ logN: 12, r: 8, p: 2 });
    expect(
      strong.needsRehash(await new ScryptPasswordEncoder({ logN: 11, r: 8, p: 2 }).hash("x")),
    ).toBe(true);
    expect(
      strong.needsRehash(await new ScryptPasswordEncoder({ logN: 12, r: 4, p: 2 }).hash("x")),
    ).toBe(true);
    expect(
      strong.needsRehash(await new ScryptPasswordEncoder({ logN: 12, r: 8, p: 1 }).hash("x")),
    ).toBe(true);
    expect(
      strong.needsRehash(await new ScryptPasswordEncoder({ logN: 13, r: 8, p: 2 }).hash("x")),
    ).toBe(false);
    expect(strong.needsRehash(await pbkdf2().hash("x"))).toBe(true);
    expect(strong.needsRehash("not a hash")).toBe(true);
  });

  it("verifies hashes made with other parameters, read from the hash itself", async () => {
    const hash = await new ScryptPasswordEncoder({ logN: 11, r: 4, p: 2 }).hash("secret");
    await expect(scrypt().verify("secret", hash)).resolves.toBe(true);
  });

  it("normalizes passwords to NFKC, so composed and decomposed spellings match", async () => {
    const encoder = scrypt();
    const hash = await encoder.hash("caf\u00e9");
    await expect(encoder.verify("cafe\u0301", hash)).resolves.toBe(true);
  });

  it.each([
    ["logN 0", { logN: 0 }],
    ["logN 25", { logN: 25 }],
    ["logN 10.5", { logN: 10.5 }],
    ["r 0", { r: 0 }],
    ["r 65", { r: 65 }],
    ["p 0", { p: 0 }],
    ["p 17", { p: 17 }],
    ["p NaN", { p: Number.NaN }],
  ])("refuses %s when built", (_label, parameters) => {
    expect(() => new ScryptPasswordEncoder(parameters)).toThrow(InvalidOptionsError);
  });
});

describe("Pbkdf2PasswordEncoder parameters", () => {
  it("needs a rehash for fewer iterations and for other algorithms", async () => {
    const encoder = new Pbkdf2PasswordEncoder({ iterations: 2000 });
    expect(encoder.needsRehash(await pbkdf2().hash("x"))).toBe(true);
    expect(
      encoder.needsRehash(await new Pbkdf2PasswordEncoder({ iterations: 3000 }).hash("x")),
    ).toBe(false);
    expect(encoder.needsRehash(await scrypt().hash("x"))).toBe(true);
  });

  it("refuses a hash whose iteration count was changed", async () => {
    const hash = await pbkdf2().hash("secret");
    await expect(pbkdf2().verify("secret", hash.replace("i=1000", "i=1001"))).resolves.toBe(false);
  });

  it.each([0, -1, 1.5, 10_000_001, Number.NaN])(
    "refuses iterations %s when built",
    (iterations) => {
      expect(() => new Pbkdf2PasswordEncoder({ iterations })).toThrow(InvalidOptionsError);
    },
  );
});

describe("DelegatingPasswordEncoder", () => {
  const delegating = () =>
    new DelegatingPasswordEncoder("scrypt", { scrypt: scrypt(), "pbkdf2-sha256": pbkdf2() });

  it("hashes with the current encoder and verifies every registered id", async () => {
    const encoder = delegating();
    const current = await encoder.hash("secret");
    expect(current).toMatch(SCRYPT_HASH);
    const legacy = await pbkdf2().hash("secret");
    await expect(encoder.verify("secret", current)).resolves.toBe(true);
    await expect(encoder.verify("secret", legacy)).resolves.toBe(true);
    await expect(encoder.verify("wrong", current)).resolves.toBe(false);
    await expect(encoder.verify("wrong", legacy)).resolves.toBe(false);
  });

  it("refuses an unknown or differently spelled id", async () => {
    const encoder = delegating();
    const hash = await encoder.hash("secret");
    for (const encoded of [
      hash.replace("{scrypt}", "{bcrypt}"),
      hash.replace("{scrypt}", "{SCRYPT}"),
      hash.replace("{scrypt}", "{noop}"),
      "{noop}secret",
      "secret",
      hash.replace("{scrypt}", ""),
    ]) {
      await expect(encoder.verify("secret", encoded), encoded).resolves.toBe(false);
    }
  });

  it("needs a rehash for every hash not made by the current encoder with its parameters", async () => {
    const encoder = delegating();
    expect(encoder.needsRehash(await encoder.hash("x"))).toBe(false);
    expect(encoder.needsRehash(await pbkdf2().hash("x"))).toBe(true);
    expect(
      encoder.needsRehash(await new ScryptPasswordEncoder({ logN: 9, r: 8, p: 1 }).hash("x")),
    ).toBe(true);
    expect(encoder.needsRehash("{unknown}abc")).toBe(true);
  });

  it("refuses to be built with a current id it does not know", () => {
    expect(() => new DelegatingPasswordEncoder("argon2", { scrypt: scrypt() })).toThrow(
      InvalidOptionsError,
    );
  });

  it("createPasswordEncoder hashes with scrypt and verifies PBKDF2-SHA256 hashes", async () => {
    const encoder = createPasswordEncoder({ logN: 10, r: 8, p: 1 });
    const hash = await encoder.hash("secret");
    expect(hash).toMatch(SCRYPT_HASH);
    await expect(encoder.verify("secret", hash)).resolves.toBe(true);
    await expect(encoder.verify("secret", await pbkdf2().hash("secret"))).resolves.toBe(true);
    expect(encoder.needsRehash(await pbkdf2().hash("secret"))).toBe(true);
  });
});

describe("malformed encoded hashes are false, never a throw", () => {
  const encoders: ReadonlyArray<[string, () => PasswordEncoder]> = [
    ["scrypt", scrypt],
    ["pbkdf2", pbkdf2],
    ["delegating", () => createPasswordEncoder({ logN: 10, r: 8, p: 1 })],
  ];

  async function malformed(): Promise<string[]> {
    const s = parts(await scrypt().hash("secret"));
    const p = parts(await pbkdf2().hash("secret"));
    return [
      "",
      "{scrypt}",
      "{scrypt}ln=10,r=8,p=1",
      "{scrypt}ln=10,r=8,p=1$$",
      `{scrypt}ln=10,r=8,p=1$${s.salt}$`,
      `{scrypt}ln=10,r=8,p=1$$${s.key}`,
      `{scrypt}ln=10,r=8,p=1$${s.salt}`,
      `{scrypt}ln=10,r=8,p=1$!!!!$${s.key}`,
      `{scrypt}ln=10,r=8,p=1$${s.salt}$${s.key.slice(0, -4)}`,
      `{scrypt}ln=10,r=8,p=1$${s.salt}$${s.key}AAAA`,
      `{scrypt}ln=10,r=8,p=1$${s.salt}$${s.key}$extra`,
      `{scrypt}ln=10,r=8,p=1$${s.salt}$A`,
      `{scrypt}ln=,r=8,p=1$${s.salt}$${s.key}`,
      `{scrypt}ln=0,r=8,p=1$${s.salt}$${s.key}`,
      `{scrypt}ln=-1,r=8,p=1$${s.salt}$${s.key}`,
      `{scrypt}ln=10,r=0,p=1$${s.salt}$${s.key}`,
      `{scrypt}ln=10,r=8,p=0$${s.salt}$${s.key}`,
      `{scrypt}ln=1e1,r=8,p=1$${s.salt}$${s.key}`,
      `{scrypt}ln=10,p=1,r=8$${s.salt}$${s.key}`,
      ` ${s.head}$${s.salt}$${s.key}`,
      `${s.head}$${s.salt}$${s.key}\n`,
      `${s.head}$${s.salt}=$${s.key}`,
      `${s.head}$${s.salt}$${s.key.replace(/[A-Za-z]/, "+")}`,
      "{pbkdf2-sha256}",
      `{pbkdf2-sha256}i=0$${p.salt}$${p.key}`,
      `{pbkdf2-sha256}i=$${p.salt}$${p.key}`,
      `{pbkdf2-sha256}i=1000$${p.salt}$${p.key.slice(0, 10)}`,
      `{pbkdf2-sha256}i=1000$${p.salt}`,
      `{pbkdf2-sha256}i=1000$%%%$${p.key}`,
      "x".repeat(100_000),
      "$".repeat(1000),
      "{".repeat(1000),
      "\u0000",
    ];
  }

  it.each(encoders)("%s", async (_name, make) => {
    const encoder = make();
    for (const encoded of await malformed()) {
      const label = JSON.stringify(encoded.slice(0, 80));
      await expect(encoder.verify("secret", encoded), label).resolves.toBe(false);
      expect(() => encoder.needsRehash(encoded), label).not.toThrow();
    }
    for (const notAString of [undefined, null, 42, {}]) {
      await expect(encoder.verify("secret", notAString as unknown as string)).resolves.toBe(false);
    }
  });
});

describe("absurd cost parameters in a tampered hash", () => {
  type NodeScrypt = (
    password: string,
    salt: Uint8Array,
    keylen: number,
    options: { N: number; r: number; p: number; maxmem: number },
    callback: (error: Error | null, key: Uint8Array) => void,
  ) => void;
  type GetBuiltinModule = (id: string) => unknown;
  const proc = (globalThis as unknown as { process: { getBuiltinModule: GetBuiltinModule } })
    .process;
  const original = proc.getBuiltinModule;

  afterEach(() => {
    proc.getBuiltinModule = original;
    vi.resetModules();
  });

  /** The encoder module loaded against a recording stand-in for Node's native scrypt (nothing expensive ever runs). */
  async function withRecordingScrypt() {
    const calls: Array<{ N: number; r: number; p: number }> = [];
    const fake: NodeScrypt = (_password, _salt, keylen, { N, r, p }, callback) => {
      calls.push({ N, r, p });
      callback(null, new Uint8Array(keylen));
    };
    proc.getBuiltinModule = (id) =>
      id === "node:crypto" || id === "crypto" ? { scrypt: fake } : original.call(proc, id);
    vi.resetModules();
    const module = await import("./password-encoder.ts");
    const encoder = new module.ScryptPasswordEncoder({ logN: 10, r: 8, p: 1 });
    // Sanity: the stand-in is what the module uses.
    await encoder.verify("x", await encoder.hash("x"));
    expect(calls.length).toBe(2);
    calls.length = 0;
    return { encoder, calls, delegating: module.createPasswordEncoder({ logN: 10, r: 8, p: 1 }) };
  }

  const salt = "A".repeat(22);
  const key = "B".repeat(43); // not all zero bytes, so the stand-in's zero key never matches

  it.each([
    ["ln=40", `{scrypt}ln=40,r=8,p=1$${salt}$${key}`],
    ["ln=99", `{scrypt}ln=99,r=8,p=1$${salt}$${key}`],
    ["r=99", `{scrypt}ln=10,r=99,p=1$${salt}$${key}`],
    ["p=99", `{scrypt}ln=10,r=8,p=99$${salt}$${key}`],
    ["ln=24,r=64,p=16 (128 GiB of memory per check)", `{scrypt}ln=24,r=64,p=16$${salt}$${key}`],
    ["ln=24,r=8,p=1 (16 GiB of memory per check)", `{scrypt}ln=24,r=8,p=1$${salt}$${key}`],
  ])("refuses %s without running scrypt", async (_label, encoded) => {
    const { encoder, calls, delegating } = await withRecordingScrypt();
    await expect(encoder.verify("x", encoded)).resolves.toBe(false);
    await expect(delegating.verify("x", encoded)).resolves.toBe(false);
    expect(calls).toEqual([]);
    expect(encoder.needsRehash(encoded)).toBe(true);
  });

  // Deriving either key would outlast the test's time limit: answering at all shows it was refused first.
  it("refuses ln=40 with the real scrypt before deriving a key", async () => {
    await expect(scrypt().verify("x", `{scrypt}ln=40,r=8,p=1$${salt}$${key}`)).resolves.toBe(false);
  });

  it("refuses a PBKDF2 hash with more than 10 000 000 iterations before deriving a key", async () => {
    await expect(pbkdf2().verify("x", `{pbkdf2-sha256}i=99999999$${salt}$${key}`)).resolves.toBe(
      false,
    );
  });
});
