import { addressNetwork, clientAddress, clientAddressAdvice } from "../core/client-address.ts";
import { withDeadline } from "../core/deadline.ts";
import { sha256Base64url, sha256Base64urlNow } from "../core/digest.ts";
import { randomToken } from "../core/encoding.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import {
  type AttemptReservation,
  consumeAttemptNow,
  isPlainMemoryStore,
  type LoginAttemptStore,
  MemoryLoginAttemptStore,
  releaseAttemptNow,
  resetAttemptsNow,
} from "../core/login-attempt-store.ts";
import { rejectUnknownKeys, timeoutOption } from "../core/options.ts";
import { problemResponse } from "../core/problem.ts";
import { warnOnce } from "../core/warning.ts";
import { createPasswordEncoder, type PasswordEncoder } from "./password-encoder.ts";

/** A user who signs in with a password, as `findUser` returns it. */
export interface LoginUser {
  readonly name: string;
  readonly authorities: readonly string[];
  /** An encoded hash such as `{scrypt}ln=15,r=8,p=3$…$…`. */
  readonly passwordHash: string;
}

/**
 * Failed sign-in throttling, shared by every endpoint that takes the same
 * `PasswordCredentials`: the `throttle` option of `passwordCredentials`.
 *
 * @example
 * ```ts
 * import { passwordCredentials } from "portcullis";
 * import { RedisLoginAttemptStore } from "portcullis/stores/redis";
 *
 * const credentials = passwordCredentials({
 *   findUser: (name) => users.get(name),
 *   throttle: {
 *     maxFailuresPerUser: 3,
 *     windowMs: 30 * 60_000,
 *     store: new RedisLoginAttemptStore({ client: redis }), // shared by every instance
 *   },
 * });
 * ```
 */
export interface LoginThrottleOptions {
  /**
   * Password checks per username and window that may fail; beyond them the
   * username is refused (429) until the window ends. Checks still running
   * count too, so concurrent guesses cannot overrun the budget.
   *
   * @default 5
   */
  readonly maxFailuresPerUser?: number;
  /**
   * The same budget per client (see `clientKey`).
   *
   * @default 20
   */
  readonly maxFailuresPerClient?: number;
  /**
   * How long a counter lasts from its first attempt, in ms.
   *
   * @default 900_000 (15 minutes)
   */
  readonly windowMs?: number;
  /**
   * Where attempts are counted. Behind a load balancer use a shared store,
   * such as `RedisLoginAttemptStore`, or each instance grants its own allowance.
   *
   * @default a new `MemoryLoginAttemptStore()` (one process)
   */
  readonly store?: LoginAttemptStore;
  /**
   * Longest wait for one store call, in ms; past it the attempt is refused
   * (503), as when the store fails. Bounds any store, whatever its own timeout.
   *
   * @default 1000
   */
  readonly storeTimeoutMs?: number;
  /**
   * Told about every failure of the store. The attempt then answers 503 rather
   * than going on unthrottled.
   *
   * @default console.error
   */
  readonly onStoreError?: (error: unknown) => void;
}

/**
 * Options of `passwordCredentials`.
 *
 * @example
 * ```ts
 * import { basicAuth, createPasswordEncoder, login, passwordCredentials } from "portcullis";
 *
 * const encoder = createPasswordEncoder();
 * const credentials = passwordCredentials({
 *   findUser: (name) => users.get(name),
 *   passwordEncoder: encoder,
 *   onPasswordUpgrade: (user, passwordHash) => db.setPasswordHash(user.name, passwordHash),
 * });
 * // One object for both, so form logins and Basic guesses share one budget.
 * const endpoints = login({ credentials });
 * const apiClients = basicAuth({ credentials, required: false });
 * ```
 */
export interface PasswordCredentialsOptions {
  /** Looks a user up by the presented username; `undefined` when there is none. */
  readonly findUser: (username: string) => LoginUser | undefined | Promise<LoginUser | undefined>;
  /**
   * Hashes and verifies passwords. Give it the encoder your user table's hashes were made with.
   *
   * @default createPasswordEncoder() (scrypt, also verifies PBKDF2-SHA256 hashes)
   */
  readonly passwordEncoder?: PasswordEncoder;
  /**
   * Called after a successful check whose stored hash is outdated, with a fresh hash to store.
   *
   * @default none — outdated hashes are left as they are
   */
  readonly onPasswordUpgrade?: (user: LoginUser, passwordHash: string) => void | Promise<void>;
  /**
   * Failed sign-in throttling; `false` turns it off.
   *
   * @default on, with the defaults of `LoginThrottleOptions`
   */
  readonly throttle?: LoginThrottleOptions | false;
  /**
   * The client a request counts against, for the per-client budget; `undefined`
   * for none.
   *
   * @default the client address the chain resolved, IPv6 grouped by /56 (one subscriber's network), IPv4 per address
   */
  readonly clientKey?: (request: Request) => string | undefined;
  /**
   * Clock, for tests.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

/** What `PasswordCredentials.check` found. */
export type PasswordCheck =
  | { readonly outcome: "authenticated"; readonly user: LoginUser }
  /** Unknown user or wrong password: the two are never told apart. */
  | { readonly outcome: "rejected" }
  /** The username's or the client's budget is spent; no password was checked. */
  | { readonly outcome: "throttled"; readonly retryAfterSeconds: number }
  /** The attempt store failed or timed out; no password was checked. */
  | { readonly outcome: "unavailable" };

/** Longest username and password checked; longer ones are refused without a check. */
export const MAX_USERNAME_LENGTH = 256;
export const MAX_PASSWORD_LENGTH = 1024;

const REJECTED: PasswordCheck = Object.freeze({ outcome: "rejected" });
const UNAVAILABLE: PasswordCheck = Object.freeze({ outcome: "unavailable" });

let isCredentials: (value: unknown) => boolean;

/**
 * Users, their password hashes and the failure throttle, in one place that
 * every password sign-in (`login`, `basicAuth`) shares: a guess counts
 * against the same per-user and per-client budget whichever way it comes, and
 * an unknown user costs the same password check as a known one. Built by
 * `passwordCredentials()`.
 */
export class PasswordCredentials {
  readonly #findUser: PasswordCredentialsOptions["findUser"];
  readonly #encoder: PasswordEncoder;
  readonly #onPasswordUpgrade: PasswordCredentialsOptions["onPasswordUpgrade"];
  readonly #throttle: Throttle | undefined;
  readonly #clientKey: (request: Request) => string | undefined;
  readonly #now: () => number;
  #dummyHash: Promise<string> | undefined;
  // The dummy hash once made, so an unknown user's check waits no longer than a known one's.
  #madeDummyHash: string | undefined;
  // Checks running now, by a digest of (client, username, password): the same
  // credentials sent again meanwhile share the check instead of spending budget.
  // Where the runtime hashes within the call, a check that runs alone is not
  // hashed until another arrives while it runs: what a request costs then
  // depends only on whether some check is running, never on whose or with what.
  readonly #running = new Map<string, Flight>();
  #alone: Flight | undefined;

  /** @internal made by `passwordCredentials()` */
  constructor(options: PasswordCredentialsOptions) {
    rejectUnknownKeys("passwordCredentials", options, [
      "findUser",
      "passwordEncoder",
      "onPasswordUpgrade",
      "throttle",
      "clientKey",
      "now",
    ]);
    if (typeof options?.findUser !== "function")
      throw new InvalidOptionsError("passwordCredentials needs a findUser function");
    this.#findUser = options.findUser;
    this.#encoder = options.passwordEncoder ?? createPasswordEncoder();
    if (
      typeof this.#encoder?.verify !== "function" ||
      typeof this.#encoder.hash !== "function" ||
      typeof this.#encoder.needsRehash !== "function"
    )
      throw new InvalidOptionsError(
        "passwordCredentials: passwordEncoder must be a PasswordEncoder",
      );
    for (const name of ["onPasswordUpgrade", "clientKey", "now"] as const) {
      if (options[name] !== undefined && typeof options[name] !== "function")
        throw new InvalidOptionsError(`passwordCredentials: ${name} must be a function`);
    }
    this.#onPasswordUpgrade = options.onPasswordUpgrade;
    this.#throttle = options.throttle === false ? undefined : throttleSettings(options.throttle);
    this.#clientKey = options.clientKey ?? defaultClientKey;
    this.#now = options.now ?? Date.now;
  }

  static {
    // The private field is the brand: an object merely given this prototype has none.
    isCredentials = (value) => typeof value === "object" && value !== null && #running in value;
  }

  /**
   * Checks a username and password presented with `request`: takes one attempt
   * from the username's and the client's budgets, then looks the user up and
   * verifies the password (against a dummy hash for an unknown user). A
   * success gives the attempt back and clears the username's failures; the
   * client's failures stay. Never throws for the store; `findUser`,
   * `onPasswordUpgrade` and the encoder may.
   */
  check(request: Request, username: string, password: string): Promise<PasswordCheck> {
    try {
      return this.#share(request, username, password);
    } catch (error) {
      // Never a throw (a failing clientKey): the caller gets a rejection, as from any check.
      return Promise.reject(error);
    }
  }

  // The check of these credentials already running, or a new one. Not async: a
  // request that starts or joins a check adds no promise of its own.
  #share(request: Request, username: string, password: string): Promise<PasswordCheck> {
    if (
      typeof username !== "string" ||
      typeof password !== "string" ||
      username === "" ||
      password === "" ||
      username.length > MAX_USERNAME_LENGTH ||
      password.length > MAX_PASSWORD_LENGTH
    )
      return Promise.resolve(REJECTED);
    const client = this.#throttle === undefined ? undefined : this.#clientKey(request);
    // Lengths first, so no two (client, username, password) make one key.
    const key =
      client === undefined
        ? `-${username.length}:${username}${password}`
        : `+${client.length}:${client}${username.length}:${username}${password}`;
    if (!HASHES_NOW) return this.#shareHashed(key, username, password, client);
    let flight: Flight;
    if (this.#alone === undefined && this.#running.size === 0) {
      flight = { key, digest: undefined, check: undefined };
      this.#alone = flight;
    } else {
      const alone = this.#alone;
      if (alone !== undefined) {
        alone.digest = sha256Base64urlNow(alone.key) as string;
        this.#running.set(alone.digest, alone);
        this.#alone = undefined;
      }
      const digest = sha256Base64urlNow(key) as string;
      const running = this.#running.get(digest);
      if (running?.check !== undefined) return running.check;
      flight = { key, digest, check: undefined };
      this.#running.set(digest, flight);
    }
    // Registered first: a check that ends within the call still finds its entry to remove.
    flight.check = this.#checkOnce(flight, username, password, client);
    return flight.check;
  }

  // `#share` where the runtime only hashes asynchronously: every check is hashed.
  async #shareHashed(
    key: string,
    username: string,
    password: string,
    client: string | undefined,
  ): Promise<PasswordCheck> {
    const digest = await sha256Base64url(key);
    const running = this.#running.get(digest);
    if (running?.check !== undefined) return await running.check;
    const flight: Flight = { key, digest, check: undefined };
    this.#running.set(digest, flight);
    flight.check = this.#checkOnce(flight, username, password, client);
    return await flight.check;
  }

  // Checks `flight`'s credentials, then removes it from the running checks.
  async #checkOnce(
    flight: Flight,
    username: string,
    password: string,
    client: string | undefined,
  ): Promise<PasswordCheck> {
    try {
      const throttle = this.#throttle;
      if (throttle === undefined) return await this.#verify(username, password);
      const at = this.#now();
      const userKey = `user:${(isAscii(username) ? username : username.normalize("NFKC")).toLowerCase()}`;
      const { store } = throttle;
      if (isPlainMemoryStore(store)) {
        // The same steps on the built-in memory store, which answers within the call and
        // cannot fail: no promise, deadline or error report for each of them.
        const user = consumeAttemptNow(
          store,
          userKey,
          throttle.maxFailuresPerUser,
          throttle.windowMs,
          at,
        );
        if (!user.allowed) return throttled(user.resetAt, at);
        const clientKey = client === undefined ? undefined : `client:${client}`;
        if (clientKey !== undefined) {
          const fromClient = consumeAttemptNow(
            store,
            clientKey,
            throttle.maxFailuresPerClient,
            throttle.windowMs,
            at,
          );
          if (!fromClient.allowed) {
            releaseAttemptNow(store, userKey, this.#now());
            return throttled(fromClient.resetAt, at);
          }
        }
        const result = await this.#verify(username, password);
        if (result.outcome === "authenticated") {
          resetAttemptsNow(store, userKey);
          if (clientKey !== undefined) releaseAttemptNow(store, clientKey, this.#now());
        }
        return result;
      }
      const reserved = await this.#consume(throttle, userKey, throttle.maxFailuresPerUser, at);
      if (!reserved.allowed) return reserved.check;
      if (client !== undefined) {
        const clientKey = `client:${client}`;
        const fromClient = await this.#consume(
          throttle,
          clientKey,
          throttle.maxFailuresPerClient,
          at,
        );
        if (!fromClient.allowed) {
          // Not checked, so not the username's failure either.
          await this.#settle(throttle, () => throttle.store.release(userKey, this.#now()));
          return fromClient.check;
        }
        const result = await this.#verify(username, password);
        if (result.outcome === "authenticated") {
          await Promise.all([
            this.#settle(throttle, () => throttle.store.reset(userKey)),
            this.#settle(throttle, () => throttle.store.release(clientKey, this.#now())),
          ]);
        }
        return result;
      }
      const result = await this.#verify(username, password);
      if (result.outcome === "authenticated")
        await this.#settle(throttle, () => throttle.store.reset(userKey));
      return result;
    } finally {
      if (this.#alone === flight) this.#alone = undefined;
      else if (flight.digest !== undefined && this.#running.get(flight.digest) === flight)
        this.#running.delete(flight.digest);
    }
  }

  async #consume(
    throttle: Throttle,
    key: string,
    max: number,
    at: number,
  ): Promise<{ allowed: true } | { allowed: false; check: PasswordCheck }> {
    let reservation: AttemptReservation;
    try {
      reservation = await bounded(throttle, () =>
        throttle.store.consume(key, max, throttle.windowMs, at),
      );
      if (typeof reservation?.allowed !== "boolean" || !Number.isFinite(reservation.resetAt))
        throw new TypeError("the login-attempt store answered something other than a reservation");
    } catch (error) {
      report(throttle, error);
      return { allowed: false, check: UNAVAILABLE };
    }
    if (reservation.allowed) return { allowed: true };
    return { allowed: false, check: throttled(reservation.resetAt, at) };
  }

  // Giving an attempt back only loosens the throttle: when it fails the attempt
  // stays counted, which errs on the safe side, so the answer does not change.
  async #settle(throttle: Throttle, operation: () => Promise<void>): Promise<void> {
    try {
      await bounded(throttle, operation);
    } catch (error) {
      report(throttle, error);
    }
  }

  async #verify(username: string, password: string): Promise<PasswordCheck> {
    const found = this.#findUser(username);
    // Awaited only when it is a promise: each await is a turn of the microtask queue.
    const user =
      typeof (found as PromiseLike<unknown> | undefined)?.then === "function"
        ? await found
        : (found as LoginUser | undefined);
    const hash =
      user === undefined
        ? (this.#madeDummyHash ?? (await this.#unknownUserHash()))
        : user.passwordHash;
    const ok = await this.#encoder.verify(password, hash);
    if (ok !== true || user === undefined) return REJECTED;
    if (this.#onPasswordUpgrade !== undefined && this.#encoder.needsRehash(user.passwordHash)) {
      await this.#onPasswordUpgrade(user, await this.#encoder.hash(password));
    }
    return { outcome: "authenticated", user };
  }

  // Made once, with the configured encoder, so an unknown user costs a real
  // check of the same algorithm and parameters as a known user's wrong password.
  #unknownUserHash(): Promise<string> {
    this.#dummyHash ??= this.#encoder.hash(randomToken(24)).then(
      (hash) => {
        this.#madeDummyHash = hash;
        return hash;
      },
      (error: unknown) => {
        this.#dummyHash = undefined;
        throw error;
      },
    );
    return this.#dummyHash;
  }
}

/**
 * The user and password model `login({ credentials })` and
 * `basicAuth({ credentials })` share. Give both the same object: they then
 * share one failure throttle, one password encoder and one dummy hash.
 */
export function passwordCredentials(options: PasswordCredentialsOptions): PasswordCredentials {
  return new PasswordCredentials(options);
}

/** Throws `InvalidOptionsError` unless `value` was built by `passwordCredentials()`. */
export function mustPasswordCredentials(where: string, value: unknown): PasswordCredentials {
  if (!isCredentials(value))
    throw new InvalidOptionsError(`${where} needs credentials: passwordCredentials({ findUser })`);
  return value as PasswordCredentials;
}

/** The answer to an attempt that was not checked: 429 with `Retry-After`, or 503. */
export function refusedResponse(check: PasswordCheck): Response {
  if (check.outcome === "throttled") {
    return problemResponse(429, {
      detail: "Too many failed sign-in attempts; try again later.",
      headers: { "retry-after": String(check.retryAfterSeconds) },
    });
  }
  return problemResponse(503, { detail: "Sign-in is unavailable; try again later." });
}

/** A password check running, and the credentials it checks. */
interface Flight {
  /** (client, username, password), unambiguous. */
  readonly key: string;
  /** The key's SHA-256, once taken: the check's entry in `#running`. */
  digest: string | undefined;
  /** Set as soon as the check starts. */
  check: Promise<PasswordCheck> | undefined;
}

/** Whether the runtime hashes within the call (see `#alone`). */
const HASHES_NOW = sha256Base64urlNow("") !== undefined;

/** Whether `text` is all ASCII, which NFKC leaves as it is. */
function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** The answer to an attempt refused until `resetAt`, seen at `at`. */
function throttled(resetAt: number, at: number): PasswordCheck {
  return { outcome: "throttled", retryAfterSeconds: Math.max(1, Math.ceil((resetAt - at) / 1000)) };
}

/**
 * A store call bounded by the throttle's deadline. (The built-in memory store is not called
 * through here: `#checkOnce` calls it within the call.)
 */
function bounded<T>(throttle: Throttle, call: () => Promise<T>): Promise<T> {
  return withDeadline(call, throttle.storeTimeoutMs, "the login-attempt store");
}

type Throttle = Required<Omit<LoginThrottleOptions, "store" | "onStoreError">> & {
  readonly store: LoginAttemptStore;
  readonly onStoreError: (error: unknown) => void;
};

function throttleSettings(options: LoginThrottleOptions = {}): Throttle {
  rejectUnknownKeys("passwordCredentials: throttle", options, [
    "maxFailuresPerUser",
    "maxFailuresPerClient",
    "windowMs",
    "store",
    "storeTimeoutMs",
    "onStoreError",
  ]);
  const settings: Throttle = {
    maxFailuresPerUser: options.maxFailuresPerUser ?? 5,
    maxFailuresPerClient: options.maxFailuresPerClient ?? 20,
    windowMs: options.windowMs ?? 15 * 60_000,
    storeTimeoutMs: timeoutOption(
      "passwordCredentials",
      "throttle.storeTimeoutMs",
      options.storeTimeoutMs,
      1000,
    ),
    store: options.store ?? new MemoryLoginAttemptStore(),
    onStoreError:
      options.onStoreError ??
      ((error: unknown) => console.error("portcullis: login-attempt store failed", error)),
  };
  if (typeof settings.onStoreError !== "function")
    throw new InvalidOptionsError("passwordCredentials: throttle.onStoreError must be a function");
  const store = settings.store as Partial<LoginAttemptStore> | null;
  if (
    typeof store?.consume !== "function" ||
    typeof store.release !== "function" ||
    typeof store.reset !== "function"
  )
    throw new InvalidOptionsError(
      "passwordCredentials: throttle.store must implement LoginAttemptStore (consume, release, reset)",
    );
  for (const name of ["maxFailuresPerUser", "maxFailuresPerClient", "windowMs"] as const) {
    if (!Number.isSafeInteger(settings[name]) || settings[name] < 1)
      throw new InvalidOptionsError(
        `passwordCredentials: throttle.${name} must be a positive integer`,
      );
  }
  return settings;
}

function defaultClientKey(request: Request): string | undefined {
  const address = clientAddress(request);
  if (address === undefined) {
    // Counting every address-less client together would let one of them lock out everyone.
    warnOnce(
      "PORTCULLIS_NO_CLIENT_ADDRESS",
      `the login throttle saw a request with no client address, so its per-client budget (maxFailuresPerClient) does not apply and one client may try many usernames; ${clientAddressAdvice(request)}`,
    );
    return undefined;
  }
  // One IPv6 subscriber holds at least a /64: per address, each guess could come from a new one.
  return addressNetwork(address) ?? address;
}

function report(throttle: Throttle, error: unknown): void {
  try {
    throttle.onStoreError(error);
  } catch {
    // A failing logger must not change the answer.
  }
}
