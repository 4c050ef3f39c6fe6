import { connect, createServer, type Socket } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { callerDeadline, serverCutoff, withDeadline, withinDeadline } from "./deadline.ts";
import { StoreUnavailableError } from "./errors.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("withDeadline", () => {
  it("publishes its deadline to the operation's synchronous start only; an enclosing earlier one wins", async () => {
    expect(callerDeadline()).toBeUndefined();
    const seen: (number | undefined)[] = [];
    const before = performance.now();
    await withDeadline(
      async () => {
        seen.push(callerDeadline());
        await Promise.resolve();
        seen.push(callerDeadline());
        await withDeadline(() => Promise.resolve(seen.push(callerDeadline())), 5000, "inner");
      },
      100,
      "outer",
    );
    expect(seen[0]).toBeGreaterThanOrEqual(before + 100);
    expect(seen[0]).toBeLessThan(performance.now() + 100);
    // After an await the outer deadline is no longer published; an inner call has its own.
    expect(seen[1]).toBeUndefined();
    expect(seen[2]).toBeGreaterThan(seen[0] as number);
    const nested: (number | undefined)[] = [];
    await withDeadline(
      () => withDeadline(() => Promise.resolve(nested.push(callerDeadline())), 5000, "inner"),
      100,
      "outer",
    );
    expect(nested[0]).toBeLessThan(performance.now() + 100);
    expect(callerDeadline()).toBeUndefined();
  });

  it("rejects a call that outlives its deadline, and clears the deadline when the operation throws", async () => {
    await expect(withDeadline(() => new Promise(() => {}), 20, "the store")).rejects.toThrow(
      "the store did not answer within 20 ms",
    );
    await expect(
      withDeadline(
        () => {
          throw new Error("sync failure");
        },
        20,
        "the store",
      ),
    ).rejects.toThrow("sync failure");
    expect(callerDeadline()).toBeUndefined();
  });

  it("never gives up before its deadline by performance.now(), even when timers run ahead of it", async () => {
    const real = performance.now.bind(performance);
    const origin = real();
    // A clock that runs at half speed: timers fire at the real time, before the deadline by it.
    vi.spyOn(performance, "now").mockImplementation(() => origin + (real() - origin) / 2);
    const started = performance.now();
    const outcome = await withDeadline(() => new Promise(() => {}), 40, "the store").catch(
      () => performance.now() - started,
    );
    expect(outcome).toBeGreaterThanOrEqual(40);
  });

  it("takes an answer that arrived while the process was busy past the deadline, rather than dropping it", async () => {
    let sender: Socket | undefined;
    const server = createServer((socket) => {
      sender = socket;
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const socket = connect(port, "127.0.0.1");
    try {
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      while (sender === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
      const answer = withDeadline(
        () =>
          new Promise<string>((resolve) => socket.once("data", (data) => resolve(String(data)))),
        30,
        "the store",
      );
      // The answer is sent now, and this process stays busy past the deadline: when the
      // event loop turns again, the timer and the answer are both due.
      sender.write("answer");
      const until = performance.now() + 150;
      while (performance.now() < until) {
        // Blocking on purpose.
      }
      expect(await answer).toBe("answer");
    } finally {
      socket.destroy();
      sender?.destroy();
      server.close();
    }
  });
});

describe("serverCutoff", () => {
  it("is the earlier of the store's limit and the caller's deadline, less a margin for the answer", async () => {
    const now = performance.now();
    expect(serverCutoff(1000)).toBeGreaterThanOrEqual(now + 950);
    expect(serverCutoff(1000)).toBeLessThan(performance.now() + 951);
    // A fifth of a short limit.
    expect(serverCutoff(100)).toBeLessThan(performance.now() + 81);
    let inCall = 0;
    await withDeadline(
      () => {
        inCall = serverCutoff(10_000);
        return Promise.resolve();
      },
      300,
      "the store",
    );
    expect(inCall).toBeLessThan(performance.now() + 251);
    expect(inCall).toBeGreaterThan(now + 200);
  });
});

describe("withinDeadline", () => {
  it("answers the work's answer, or its own failure as it is", async () => {
    await expect(withinDeadline(1000, "the request", async () => "done")).resolves.toBe("done");
    const failure = new Error("handler failed");
    await expect(
      withinDeadline(1000, "the request", async () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
  });

  it("answers 503 once the time is up, and starts no step after it", async () => {
    const started: string[] = [];
    let late: Promise<unknown> = Promise.resolve();
    const answer = withinDeadline(50, "the request", async (deadline) => {
      await deadline.run(async () => started.push("in time"));
      await new Promise((settle) => setTimeout(settle, 80));
      late = deadline.run(async () => started.push("too late"));
      // Looked at below, after the answer: handled now, so it is no unhandled rejection meanwhile.
      late.catch(() => {});
      return "done";
    });
    await expect(answer).rejects.toThrow(StoreUnavailableError);
    await expect(answer).rejects.toThrow("the request did not finish within 50 ms");
    await new Promise((settle) => setTimeout(settle, 60));
    await expect(late).rejects.toThrow(StoreUnavailableError);
    expect(started).toEqual(["in time"]);
  });

  it("gives a step the request's deadline as its caller's, unless the step's own is earlier", async () => {
    const seen: (number | undefined)[] = [];
    const before = performance.now();
    await withinDeadline(1000, "the request", async (deadline) => {
      await deadline.run(async () => seen.push(callerDeadline()));
      await deadline.run(() =>
        withDeadline(async () => seen.push(callerDeadline()), 20, "a store"),
      );
      await deadline.run(() =>
        withDeadline(async () => seen.push(callerDeadline()), 5000, "a slow store"),
      );
    });
    const [own = 0, shorter, capped] = seen;
    expect(own).toBeGreaterThanOrEqual(before + 1000);
    expect(own).toBeLessThan(performance.now() + 1000);
    expect(shorter).toBeLessThan(own);
    expect(capped).toBe(own);
    expect(callerDeadline()).toBeUndefined();
  });
});
