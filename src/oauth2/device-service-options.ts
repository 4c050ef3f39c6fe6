import { InvalidOptionsError } from "../core/errors.ts";
import { type LoginAttemptStore, MemoryLoginAttemptStore } from "../core/login-attempt-store.ts";
import { functionOptions, integerOption, rejectUnknownKeys } from "../core/options.ts";
import { httpsUrlOption } from "../core/url.ts";
import { type DeviceCodeStore, MemoryDeviceCodeStore } from "./device-code-store.ts";

/**
 * How many wrong user codes approvers may enter: the `userCodeAttempts`
 * option of `DeviceAuthorizationService`. Each entry is counted against the
 * approver's budget, the overall one and, unless it is the approver's first
 * entry in the window, the budget of the client address it came from; a
 * right code gives its counts back. Past a budget even the right code is
 * refused (429) until the window ends.
 *
 * The overall budget bounds guessing: with L live codes among 20^8, each
 * guess hits one with chance L / 20^8 (L = 1000: 3.9e-8), so the defaults
 * (10 000 per 15 minutes) allow at most 40 000 guesses an hour, a chance
 * under 0.16 % an hour to hit any of 1000 live codes. It is large enough
 * that exhausting it takes 2000 accounts and 500 client addresses; one
 * approver's budget is spent only by that approver, and an address's budget
 * never refuses an approver's first entry.
 *
 * @example
 * ```ts
 * import { DeviceAuthorizationService } from "portcullis/oauth2";
 * import { RedisLoginAttemptStore } from "portcullis/stores/redis";
 *
 * const service = new DeviceAuthorizationService({
 *   verificationUri: "https://api.example.com/device",
 *   userCodeAttempts: {
 *     perApprover: 3,
 *     store: new RedisLoginAttemptStore({ client: redis, prefix: "portcullis:usercodes:" }),
 *   },
 * });
 * ```
 */
export interface UserCodeAttemptOptions {
  /**
   * Where wrong entries are counted; use a shared store for several instances.
   *
   * @default a new `MemoryLoginAttemptStore()`
   */
  readonly store?: LoginAttemptStore;
  /**
   * Wrong user codes one approver may enter per window (1 to 1000).
   *
   * @default 5
   */
  readonly perApprover?: number;
  /**
   * Wrong user codes entered from one client address per window (1 to
   * 100 000), an approver's first entry excepted. Not applied when the chain
   * resolved no client address.
   *
   * @default 20
   */
  readonly perAddress?: number;
  /**
   * Wrong user codes all approvers together may enter per window, bounding the
   * chance that guessing hits any live code.
   *
   * @default 10_000
   */
  readonly overall?: number;
  /**
   * How long the counts last, in ms (1 s to 24 h).
   *
   * @default 900_000 (15 minutes)
   */
  readonly windowMs?: number;
}

/**
 * Options of `DeviceAuthorizationService`.
 *
 * @example
 * ```ts
 * import { DeviceAuthorizationService } from "portcullis/oauth2";
 * import { RedisDeviceCodeStore } from "portcullis/stores/redis";
 *
 * const service = new DeviceAuthorizationService({
 *   verificationUri: "https://api.example.com/device",
 *   store: new RedisDeviceCodeStore({ client: redis }), // shared by every instance
 *   lifetimeSeconds: 900,
 * });
 * ```
 */
export interface DeviceAuthorizationServiceOptions {
  /** The absolute URL of the page where humans enter user codes. */
  readonly verificationUri: string;
  /**
   * Where device codes live; use a shared store for several instances.
   *
   * @default a new `MemoryDeviceCodeStore()`
   */
  readonly store?: DeviceCodeStore;
  /**
   * How long a device code lives, in seconds (1 to 86 400).
   *
   * @default 600
   */
  readonly lifetimeSeconds?: number;
  /**
   * The polling interval handed out, in seconds (1 to 300).
   *
   * @default 5
   */
  readonly intervalSeconds?: number;
  /**
   * How many wrong user codes approvers may enter.
   *
   * @default { perApprover: 5, perAddress: 20, overall: 10_000, windowMs: 900_000 } (memory store)
   */
  readonly userCodeAttempts?: UserCodeAttemptOptions;
  /**
   * A store call not answered within this many ms fails (503).
   *
   * @default 1000
   */
  readonly storeTimeoutMs?: number;
  /**
   * Told about store failures.
   *
   * @default console.error, at most once every 10 s
   */
  readonly onStoreError?: (error: unknown) => void;
  /**
   * Clock, in milliseconds since the epoch.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/** The options of `DeviceAuthorizationService`, checked, defaults filled in. */
export interface ServiceSettings {
  readonly verificationUri: string;
  readonly lifetimeSeconds: number;
  readonly intervalSeconds: number;
  readonly store: DeviceCodeStore;
  readonly attempts: LoginAttemptStore;
  readonly perApprover: number;
  readonly perAddress: number;
  readonly overall: number;
  readonly windowMs: number;
  readonly storeTimeoutMs: number;
}

const WHERE = "DeviceAuthorizationService";

const OPTION_NAMES = [
  "verificationUri",
  "store",
  "lifetimeSeconds",
  "intervalSeconds",
  "userCodeAttempts",
  "storeTimeoutMs",
  "onStoreError",
  "now",
];

/** Checks every option of `DeviceAuthorizationService` once, naming the key the caller wrote. */
export function checkServiceOptions(options: DeviceAuthorizationServiceOptions): ServiceSettings {
  rejectUnknownKeys(WHERE, options, OPTION_NAMES);
  const store = options.store ?? new MemoryDeviceCodeStore();
  for (const method of ["create", "findByUserCode", "decide", "poll"] as const) {
    if (typeof store?.[method] !== "function")
      throw new InvalidOptionsError(
        `${WHERE}: store must implement DeviceCodeStore; ${method} is missing`,
      );
  }
  functionOptions(WHERE, options, ["onStoreError", "now"]);
  return {
    verificationUri: httpsUrlOption(`${WHERE}: verificationUri`, options?.verificationUri),
    lifetimeSeconds: integerOption(
      WHERE,
      "lifetimeSeconds",
      options.lifetimeSeconds,
      600,
      1,
      86_400,
    ),
    intervalSeconds: integerOption(WHERE, "intervalSeconds", options.intervalSeconds, 5, 1, 300),
    store,
    ...attemptBudgets(options.userCodeAttempts ?? {}),
    storeTimeoutMs: integerOption(WHERE, "storeTimeoutMs", options.storeTimeoutMs, 1000, 1, 60_000),
  };
}

function attemptBudgets(attempts: UserCodeAttemptOptions) {
  const where = `${WHERE}: userCodeAttempts`;
  rejectUnknownKeys(where, attempts, ["store", "perApprover", "perAddress", "overall", "windowMs"]);
  const store = attempts.store ?? new MemoryLoginAttemptStore();
  if (typeof store?.consume !== "function" || typeof store.release !== "function")
    throw new InvalidOptionsError(`${where}: store must implement LoginAttemptStore`);
  const name = (key: string) => `userCodeAttempts.${key}`;
  return {
    attempts: store,
    perApprover: integerOption(WHERE, name("perApprover"), attempts.perApprover, 5, 1, 1000),
    perAddress: integerOption(WHERE, name("perAddress"), attempts.perAddress, 20, 1, 100_000),
    overall: integerOption(WHERE, name("overall"), attempts.overall, 10_000, 1, 1e9),
    windowMs: integerOption(WHERE, name("windowMs"), attempts.windowMs, 15 * 60_000, 1000, 864e5),
  };
}
