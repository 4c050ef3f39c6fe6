import { describe, expect, it } from "vitest";
import {
  composeLegs,
  directLeg,
  type Handler,
  type Middleware,
  onAnswer,
} from "../core/handler.ts";
import { Chain } from "./chain.ts";

/** A leg that records when it is entered and left. */
function recording(name: string, log: string[]): Middleware {
  return (next) =>
    async (request, ...rest) => {
      log.push(`${name}:in`);
      const response = await next(request, ...rest);
      log.push(`${name}:out`);
      return response;
    };
}

describe("Chain", () => {
  it("runs legs outermost first and unwinds in reverse", async () => {
    const log: string[] = [];
    const handler = new Chain(recording("a", log), recording("b", log), recording("c", log)).wrap(
      async () => {
        log.push("handler");
        return new Response("ok");
      },
    );
    const response = await handler(new Request("http://h/"));
    expect(await response.text()).toBe("ok");
    expect(log).toEqual(["a:in", "b:in", "c:in", "handler", "c:out", "b:out", "a:out"]);
  });

  it("wraps a handler that answers synchronously", async () => {
    const handler = new Chain().wrap(() => new Response("sync"));
    const response = await handler(new Request("http://h/"));
    expect(await response.text()).toBe("sync");
  });

  it("passes extra runtime arguments through to the handler untouched", async () => {
    const env = { SECRET: "x" };
    const ctx = { waitUntil() {} };
    let seen: unknown[] = [];
    const log: string[] = [];
    const handler = new Chain(recording("a", log)).wrap((_request, ...rest) => {
      seen = rest;
      return new Response("ok");
    });
    await handler(new Request("http://h/"), env, ctx);
    expect(seen[0]).toBe(env);
    expect(seen[1]).toBe(ctx);
  });

  it("lets a leg answer without calling the handler", async () => {
    let ran = false;
    const stop: Middleware = () => async () => new Response("stopped", { status: 418 });
    const handler = new Chain(stop).wrap(() => {
      ran = true;
      return new Response("ok");
    });
    expect((await handler(new Request("http://h/"))).status).toBe(418);
    expect(ran).toBe(false);
  });

  it("returns a new chain from append and leaves the original unchanged", async () => {
    const log: string[] = [];
    const base = new Chain(recording("a", log));
    const longer = base.append(recording("b", log));
    expect(longer).not.toBe(base);
    expect(base.legs).toHaveLength(1);
    expect(longer.legs).toHaveLength(2);

    await base.wrap(() => new Response(""))(new Request("http://h/"));
    expect(log).toEqual(["a:in", "a:out"]);
    log.length = 0;
    await longer.wrap(() => new Response(""))(new Request("http://h/"));
    expect(log).toEqual(["a:in", "b:in", "b:out", "a:out"]);
  });

  it("exposes a frozen copy of its legs", () => {
    const legs: Middleware[] = [recording("a", [])];
    const chain = new Chain(...legs);
    legs.push(recording("b", []));
    expect(chain.legs).toHaveLength(1);
    expect(Object.isFrozen(chain.legs)).toBe(true);
  });

  it("offers the whole chain as one middleware that nests in another chain", async () => {
    const log: string[] = [];
    const inner = new Chain(recording("inner1", log), recording("inner2", log));
    const outer = new Chain(recording("outer", log), inner.middleware);
    await outer.wrap(() => new Response(""))(new Request("http://h/"));
    expect(log).toEqual([
      "outer:in",
      "inner1:in",
      "inner2:in",
      "inner2:out",
      "inner1:out",
      "outer:out",
    ]);
  });

  it("is not a thenable: awaiting a chain resolves to the chain itself", async () => {
    const chain = new Chain(recording("a", []));
    expect("then" in chain).toBe(false);
    const build = async () => chain;
    await expect(build()).resolves.toBe(chain);
    const awaited = await chain;
    expect(awaited).toBe(chain);
  });

  it.each([undefined, null, "leg", {}])("refuses a leg that is not a function (%j)", (leg) => {
    expect(() => new Chain(leg as unknown as Middleware)).toThrow(TypeError);
    expect(() => new Chain().append(leg as unknown as Middleware)).toThrow(TypeError);
  });

  it("builds each leg once per wrap, not per request", async () => {
    let built = 0;
    const counting: Middleware = (next: Handler) => {
      built++;
      return next;
    };
    const handler = new Chain(counting).wrap(() => new Response(""));
    await handler(new Request("http://h/"));
    await handler(new Request("http://h/"));
    expect(built).toBe(1);
  });
});

describe("direct legs", () => {
  const direct = (name: string, log: string[]) =>
    directLeg((next) => (request, ...rest) => {
      log.push(`${name}:in`);
      return onAnswer(next(request, ...rest), (response) => {
        log.push(`${name}:out`);
        return response;
      });
    });

  it("run within the call when every leg and the handler answer at once", () => {
    const log: string[] = [];
    const handler = composeLegs([direct("a", log), direct("b", log)], () => new Response("now"));
    const answer = handler(new Request("http://h/"));
    expect(answer).toBeInstanceOf(Response);
    expect(log).toEqual(["a:in", "b:in", "b:out", "a:out"]);
  });

  it("give a leg of someone else's a next that returns a promise, as Handler says", async () => {
    const log: string[] = [];
    let seen: unknown;
    const foreign: Middleware =
      (next) =>
      (request, ...rest) => {
        const answer = next(request, ...rest);
        seen = answer;
        return answer.then((response) => response);
      };
    const handler = new Chain(direct("a", log), foreign, direct("b", log)).wrap(
      () => new Response("ok"),
    );
    const response = await handler(new Request("http://h/"));
    expect(seen).toBeInstanceOf(Promise);
    expect(await response.text()).toBe("ok");
    expect(log).toEqual(["a:in", "b:in", "b:out", "a:out"]);
  });

  it("alone, and from wrap, answer in a promise; a throw becomes a rejection", async () => {
    const alone = direct("a", [])(async () => new Response("ok"));
    expect(alone(new Request("http://h/"))).toBeInstanceOf(Promise);
    const wrapped = new Chain(direct("a", [])).wrap(() => {
      throw new Error("route failed");
    });
    const answer = wrapped(new Request("http://h/"));
    expect(answer).toBeInstanceOf(Promise);
    await expect(answer).rejects.toThrow("route failed");
  });
});
