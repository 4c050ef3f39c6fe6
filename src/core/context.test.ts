import { describe, expect, it } from "vitest";
import {
  bindContext,
  bindValue,
  boundContext,
  Context,
  contextFrom,
  createContextKey,
} from "./context.ts";

describe("Context", () => {
  it("returns a new context from with() and leaves the old one unchanged", () => {
    const key = createContextKey<string>("k");
    const base = Context.empty;
    const one = base.with(key, "one");
    const two = one.with(key, "two");

    expect(one).not.toBe(base);
    expect(two).not.toBe(one);
    expect(base.get(key)).toBeUndefined();
    expect(base.has(key)).toBe(false);
    expect(one.get(key)).toBe("one");
    expect(two.get(key)).toBe("two");
  });

  it("keeps values of other keys when a key is shadowed", () => {
    const a = createContextKey<number>("a");
    const b = createContextKey<number>("b");
    const ctx = Context.empty.with(a, 1).with(b, 2).with(a, 3);
    expect(ctx.get(a)).toBe(3);
    expect(ctx.get(b)).toBe(2);
  });

  it("treats two keys with the same name as different keys", () => {
    const first = createContextKey<string>("same-name");
    const second = createContextKey<string>("same-name");
    const ctx = Context.empty.with(first, "mine");
    expect(ctx.get(first)).toBe("mine");
    expect(ctx.get(second)).toBeUndefined();
    expect(ctx.has(second)).toBe(false);
  });

  it("reports a key bound to undefined as present", () => {
    const key = createContextKey<string | undefined>("maybe");
    const ctx = Context.empty.with(key, undefined);
    expect(ctx.has(key)).toBe(true);
    expect(ctx.get(key)).toBeUndefined();
  });

  it("makes keys immutable", () => {
    const key = createContextKey<string>("frozen");
    expect(Object.isFrozen(key)).toBe(true);
  });
});

describe("binding contexts to requests", () => {
  it("keeps an object's context its own: not read through, nor rebound through, its prototype", () => {
    const key = createContextKey<string>("k");
    const shared = {};
    bindValue(shared, key, "prototype's");
    const instance = Object.create(shared) as object;
    expect(boundContext(instance)).toBeUndefined();
    bindValue(instance, key, "instance's");
    expect(contextFrom(instance).get(key)).toBe("instance's");
    expect(contextFrom(shared).get(key)).toBe("prototype's");
  });

  it("gives the empty context for a request nothing was bound to", () => {
    const request = new Request("http://h/");
    expect(boundContext(request)).toBeUndefined();
    expect(contextFrom(request)).toBe(Context.empty);
  });

  it("reads back what bindContext bound", () => {
    const key = createContextKey<string>("k");
    const request = new Request("http://h/");
    const ctx = Context.empty.with(key, "v");
    bindContext(request, ctx);
    expect(contextFrom(request)).toBe(ctx);
    expect(contextFrom(request).get(key)).toBe("v");
  });

  it("extends the bound context with bindValue and returns the new context", () => {
    const a = createContextKey<string>("a");
    const b = createContextKey<string>("b");
    const request = new Request("http://h/");
    const first = bindValue(request, a, "1");
    const second = bindValue(request, b, "2");
    expect(first.get(b)).toBeUndefined();
    expect(second.get(a)).toBe("1");
    expect(contextFrom(request)).toBe(second);
  });

  it("keeps the contexts of two requests apart, even with equal URLs", () => {
    const key = createContextKey<string>("who");
    const one = new Request("http://h/same");
    const two = new Request("http://h/same");
    bindValue(one, key, "one");
    bindValue(two, key, "two");
    expect(contextFrom(one).get(key)).toBe("one");
    expect(contextFrom(two).get(key)).toBe("two");
  });

  it("does not let a context read earlier see later bindings", () => {
    const key = createContextKey<string>("k");
    const request = new Request("http://h/");
    bindValue(request, key, "before");
    const snapshot = contextFrom(request);
    bindValue(request, key, "after");
    expect(snapshot.get(key)).toBe("before");
    expect(contextFrom(request).get(key)).toBe("after");
  });

  it("accepts a Context as its own source", () => {
    const key = createContextKey<string>("k");
    const ctx = Context.empty.with(key, "v");
    expect(contextFrom(ctx)).toBe(ctx);
  });

  it("reads a framework object through its raw request when it has no binding of its own", () => {
    const key = createContextKey<string>("k");
    const raw = new Request("http://h/");
    bindValue(raw, key, "from-raw");
    const honoLike = { req: { raw } };
    expect(contextFrom(honoLike).get(key)).toBe("from-raw");
  });

  it("prefers a binding on the framework object over its raw request", () => {
    const key = createContextKey<string>("k");
    const raw = new Request("http://h/");
    bindValue(raw, key, "raw");
    const native = { req: { raw } };
    bindContext(native, Context.empty.with(key, "native"));
    expect(contextFrom(native).get(key)).toBe("native");
  });

  it("keeps the binding out of sight: no enumerable key, nothing copied by spread or JSON", () => {
    const key = createContextKey<string>("k");
    const target = { id: 1 };
    bindValue(target, key, "secret");
    expect(Object.keys(target)).toEqual(["id"]);
    expect(JSON.stringify(target)).toBe('{"id":1}');
    const copy = { ...target };
    expect(contextFrom(copy).get(key)).toBeUndefined();
    expect(Object.getOwnPropertySymbols(copy)).toEqual([]);
  });

  it("leaves nothing a reflective caller could see, replace or delete", () => {
    const key = createContextKey<string>("k");
    const request = new Request("http://h/");
    const before = Reflect.ownKeys(request);
    bindValue(request, key, "mine");
    expect(Reflect.ownKeys(request)).toEqual(before);
    for (const own of Reflect.ownKeys(request)) {
      Reflect.deleteProperty(request, own);
      Reflect.set(request, own, { context: Context.empty });
    }
    expect(contextFrom(request).get(key)).toBe("mine");
    expect(contextFrom(Object.create(request)).get(key)).toBeUndefined();
  });

  it("never reads a look-alike planted on a request as a context", () => {
    const key = createContextKey<string>("role");
    const victim = new Request("http://h/");
    const forged = { context: Context.empty.with(key, "admin") };
    // What a caller guessing at the binding could plant: a symbol of the old name, a field.
    Object.defineProperty(victim, Symbol("portcullis.context"), { value: forged });
    Object.defineProperty(victim, "context", { value: forged.context });
    expect(boundContext(victim)).toBeUndefined();
    expect(contextFrom(victim).get(key)).toBeUndefined();
    bindValue(victim, key, "guest");
    expect(contextFrom(victim).get(key)).toBe("guest");
    expect(forged.context.get(key)).toBe("admin");
  });

  it("reads nothing from a value that is not an object", () => {
    expect(boundContext("text" as unknown as object)).toBeUndefined();
    expect(boundContext(42 as unknown as object)).toBeUndefined();
  });

  it("binds to frozen objects too", () => {
    const key = createContextKey<string>("k");
    const frozen = Object.freeze({ id: 2 });
    bindValue(frozen, key, "one");
    bindValue(frozen, key, "two");
    expect(contextFrom(frozen).get(key)).toBe("two");
    expect(contextFrom(Object.freeze({ id: 2 })).get(key)).toBeUndefined();
  });
});
