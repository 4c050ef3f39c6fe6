import { withDeadline } from "./deadline.ts";
import { StoreFullError, StoreUnavailableError } from "./errors.ts";
import { throttledWarning } from "./log.ts";

/**
 * How a leg or service calls its store: bounded, reported, and failing closed.
 *
 * @example
 * ```ts
 * const call = storeCaller({
 *   what: "the session store",
 *   timeoutMs: 1000,
 *   report: (error: unknown) => console.error("session store failed", error),
 *   timed: true, // a network store: bound each call by timeoutMs
 * });
 * const record = await call(() => store.get(id)); // StoreUnavailableError (503) on failure or timeout
 * ```
 */
export interface StoreCallOptions {
  /** Names the store in messages: `"the session store"`. */
  readonly what: string;
  /** A call not answered within this rejects. */
  readonly timeoutMs: number;
  /** Told about every failure; a listener that throws changes nothing. */
  readonly report: (error: unknown) => void;
  /**
   * Told, as one line, about a store that refused for a quota (`StoreFullError`): no fault,
   * so not `report`'s; a listener that throws changes nothing.
   *
   * @default console.warn, at most once every 10 s
   */
  readonly warn?: (line: string) => void;
  /** False for built-in memory stores, which answer within the call: no timer for them. */
  readonly timed: boolean;
}

/**
 * A caller for store operations: each runs within `timeoutMs`, and a failure
 * or timeout is reported and rethrown as `StoreUnavailableError` (HTTP 503),
 * so nothing is ever served as if the store had answered. A store that
 * refused for a quota (`StoreFullError`, also 503) is no failure: it is
 * warned about in one line with its figures, and rethrown as it is.
 */
export function storeCaller(
  options: StoreCallOptions,
): <T>(operation: () => Promise<T>) => Promise<T> {
  const { what, timeoutMs, report, timed } = options;
  const warn = options.warn ?? throttledWarning();
  return async (operation) => {
    try {
      return timed ? await withDeadline(operation, timeoutMs, what) : await operation();
    } catch (error) {
      if (error instanceof StoreFullError) {
        try {
          warn(`${error.message}; the newcomer was refused (${error.code})`);
        } catch {
          // A failing logger must not change the answer.
        }
        throw error;
      }
      if (error instanceof StoreUnavailableError) throw error;
      try {
        report(error);
      } catch {
        // A failing logger must not change the answer.
      }
      throw new StoreUnavailableError(`${what} failed or did not answer in time`, { cause: error });
    }
  };
}
