import { StoreUnavailableError } from "./errors.ts";

/**
 * The deadline, on `performance.now()`'s clock, of the store call that is
 * being started through `withDeadline(() => ...)` at this moment. A store
 * reads it with `callerDeadline()` as its call begins and has its server
 * refuse the work once the caller has given up (see the Redis stores). It is
 * set only while the operation's synchronous start runs, so it never reaches
 * another request: core has no async context on every runtime, and a store
 * sends its command within the call.
 */
let starting: number | undefined;

/**
 * The deadline of the caller whose store operation is starting now
 * (`performance.now()` milliseconds), or undefined outside `withDeadline`.
 * Read it synchronously, before the operation's first `await`.
 */
export function callerDeadline(): number | undefined {
  return starting;
}

// A store's server must do a call at least this long before its caller gives up (a fifth of
// the time allowed, when that is shorter), so that the answer has time to arrive.
const ANSWER_MARGIN_MS = 50;

/**
 * The last moment (`performance.now()`) at which a store's server may still
 * do the work of a call starting now: `timeoutMs` from now or the caller's
 * deadline, whichever comes first, less a margin for the answer's way back.
 * Read it synchronously as the call starts. A store that has its server
 * refuse work past this moment changes nothing for a caller that gave up.
 */
export function serverCutoff(timeoutMs: number): number {
  const start = performance.now();
  const deadline = Math.min(starting ?? Number.POSITIVE_INFINITY, start + timeoutMs);
  return deadline - Math.min(ANSWER_MARGIN_MS, Math.max(0, deadline - start) / 5);
}

/**
 * `work`'s result, or a rejection once `ms` have passed: a store that stalls
 * fails the call in bounded time, so the caller's fail-closed answer applies
 * instead of requests piling up behind it. Given a function, it is called
 * here with its deadline published (`callerDeadline()`; an enclosing call's
 * earlier deadline wins). The rejection never comes before the deadline by
 * `performance.now()`, and waits one more turn of the event loop, so a reply
 * that arrived while this process was busy is taken rather than dropped. The
 * timer lives only while the call does.
 */
export function withDeadline<T>(
  work: Promise<T> | (() => Promise<T> | T),
  ms: number,
  what: string,
): Promise<T> {
  const deadline = performance.now() + ms;
  const promise = typeof work === "function" ? startBy(deadline, work) : work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    const giveUp = () => reject(new Error(`${what} did not answer within ${ms} ms`));
    const check = () => {
      const left = deadline - performance.now();
      timer = left > 0 ? setTimeout(check, Math.ceil(left)) : setTimeout(giveUp, 0);
    };
    timer = setTimeout(check, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function startBy<T>(deadline: number, operation: () => Promise<T> | T): Promise<T> {
  const outer = starting;
  starting = outer === undefined ? deadline : Math.min(outer, deadline);
  try {
    return Promise.resolve(operation());
  } catch (error) {
    return Promise.reject(error);
  } finally {
    starting = outer;
  }
}

/** The deadline of one request, as its steps see it. */
export interface RequestDeadline {
  /**
   * `step()`, started with the request's deadline as its caller's
   * (`callerDeadline()`, so a store that honours it does no work past it), or
   * `StoreUnavailableError` without starting it once the deadline has passed.
   * A step that changes state runs through here: nothing starts after the
   * caller was told the request failed.
   */
  run<T>(step: () => Promise<T>): Promise<T>;
}

/**
 * `work`'s answer, or `StoreUnavailableError` (503) once `ms` have passed:
 * one deadline for a whole request, whatever its steps. The work is not
 * stopped; its steps that change state go through `deadline.run`.
 */
export async function withinDeadline<T>(
  ms: number,
  what: string,
  work: (deadline: RequestDeadline) => Promise<T>,
): Promise<T> {
  const end = performance.now() + ms;
  const late = () => new StoreUnavailableError(`${what} did not finish within ${ms} ms`);
  const deadline: RequestDeadline = {
    run: (step) => (performance.now() < end ? startBy(end, step) : Promise.reject(late())),
  };
  let settled = false;
  const started = () => {
    const answer = work(deadline);
    answer.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    return answer;
  };
  try {
    return await withDeadline(started, ms, what);
  } catch (error) {
    // The work's own failure as it is; the deadline's, as the 503 it stands for.
    throw settled ? error : late();
  }
}
