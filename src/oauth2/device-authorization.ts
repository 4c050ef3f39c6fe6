import { clientAddressOf } from "../core/client-address.ts";
import type { ContextSource } from "../core/context.ts";
import { sha256Base64url as sha256 } from "../core/digest.ts";
import { randomToken } from "../core/encoding.ts";
import { StoreFullError, StoreUnavailableError } from "../core/errors.ts";
import { throttledConsole } from "../core/log.ts";
import { type LoginAttemptStore, MemoryLoginAttemptStore } from "../core/login-attempt-store.ts";
import { storeCaller } from "../core/store-call.ts";
import { approverOf } from "./approval-form.ts";
import {
  type DecideOutcome,
  type DeviceCodeRecord,
  type DeviceCodeStore,
  MemoryDeviceCodeStore,
  type PollOutcome,
} from "./device-code-store.ts";
import {
  checkServiceOptions,
  type DeviceAuthorizationServiceOptions,
} from "./device-service-options.ts";
import { formatUserCode, generateUserCode, normalizeUserCode } from "./user-code.ts";
import type { DeviceAuthorizationResponseBody } from "./wire.ts";

/** RFC 8628 §3.5: each `slow_down` adds five seconds to the interval. */
export const SLOW_DOWN_MS = 5_000;

/** What a human's entry of a user code came to. */
export type UserCodeOutcome =
  | {
      readonly ok: true;
      readonly clientId: string;
      readonly scope: readonly string[];
      /** The code as shown, `XXXX-XXXX`. */
      readonly userCode: string;
      readonly expiresAt: number;
    }
  | {
      readonly ok: false;
      /**
       * `invalid_code` covers unknown, expired and already decided: a guesser
       * learns nothing. `expired` answers only a decision on a code that
       * existed. `unconfirmed` answers a `lookup` from a navigation the human
       * did not submit on this site (a link, another site): nothing was
       * looked up or counted, and `userCode` is the code to pre-fill.
       */
      readonly reason: "invalid_code" | "expired" | "too_many_attempts" | "unconfirmed";
      readonly retryAfterSeconds?: number;
      /** With `unconfirmed`: the code as typed, `XXXX-XXXX`, when well-formed. */
      readonly userCode?: string;
    };

/** What a poll came to; `approved` carries what the token is issued for, once. */
export type PollResult =
  | {
      readonly outcome: "approved";
      readonly clientId: string;
      readonly subject: string;
      readonly scope: readonly string[];
      readonly approvedBy: string;
      /** Identifies the approval: the hash of the user code the human entered. */
      readonly userCodeHash: string;
      /** When this poll consumed the approval; `release` takes it back with it. */
      readonly consumedAt: number;
    }
  | { readonly outcome: "pending" | "denied" | "expired" | "invalid" }
  | { readonly outcome: "slow_down"; readonly intervalSeconds: number };

/**
 * The RFC 8628 device authorization grant: `begin` hands a client a device
 * code and a user code, a human approves (`authorize`) or refuses (`deny`)
 * the user code, and the client's `poll` gets the approval exactly once.
 */
export class DeviceAuthorizationService {
  readonly verificationUri: string;
  readonly lifetimeSeconds: number;
  readonly intervalSeconds: number;
  readonly #store: DeviceCodeStore;
  readonly #attempts: LoginAttemptStore;
  readonly #perApprover: number;
  readonly #perAddress: number;
  readonly #overall: number;
  readonly #windowMs: number;
  readonly #call: <T>(operation: () => Promise<T>) => Promise<T>;
  readonly #now: () => number;

  constructor(options: DeviceAuthorizationServiceOptions) {
    const settings = checkServiceOptions(options);
    this.verificationUri = settings.verificationUri;
    this.lifetimeSeconds = settings.lifetimeSeconds;
    this.intervalSeconds = settings.intervalSeconds;
    this.#store = settings.store;
    this.#attempts = settings.attempts;
    this.#perApprover = settings.perApprover;
    this.#perAddress = settings.perAddress;
    this.#overall = settings.overall;
    this.#windowMs = settings.windowMs;
    this.#call = storeCaller({
      what: "the device code store",
      timeoutMs: settings.storeTimeoutMs,
      report: options.onStoreError ?? throttledConsole("device code store failed"),
      // Built-in memory stores answer within the call: no timer for them.
      timed:
        !(this.#store instanceof MemoryDeviceCodeStore) ||
        !(this.#attempts instanceof MemoryLoginAttemptStore),
    });
    this.#now = options.now ?? Date.now;
  }

  /**
   * Starts a device authorization for `clientId` and `scope` (already checked
   * by the caller). The device code (256 random bits) and the user code are
   * returned here once; the store keeps only their hashes.
   */
  async begin(
    clientId: string,
    scope: readonly string[],
  ): Promise<DeviceAuthorizationResponseBody> {
    if (typeof clientId !== "string" || clientId === "")
      throw new TypeError("DeviceAuthorizationService.begin: clientId must be a non-empty string");
    const now = this.#now();
    const deviceCode = randomToken(32);
    const deviceCodeHash = await sha256(deviceCode);
    // A collision among live user codes is rare; a few tries make it vanishingly so.
    for (let attempt = 0; attempt < 5; attempt++) {
      const userCode = generateUserCode();
      const record: DeviceCodeRecord = {
        deviceCodeHash,
        userCodeHash: await sha256(userCode),
        clientId,
        scope: [...scope],
        createdAt: now,
        expiresAt: now + this.lifetimeSeconds * 1000,
        intervalMs: this.intervalSeconds * 1000,
        status: "pending",
      };
      const outcome = await this.#call(async () => {
        const created = await this.#store.create(record, now);
        // Inside the call, so it is warned about as a full store, not reported as a failure.
        if (created === "full")
          throw new StoreFullError({ store: "the device code store", quota: "store" });
        return created;
      });
      if (outcome !== "created") continue;
      const shown = formatUserCode(userCode);
      const complete = new URL(this.verificationUri);
      complete.searchParams.set("user_code", shown);
      return {
        device_code: deviceCode,
        user_code: shown,
        verification_uri: this.verificationUri,
        verification_uri_complete: complete.href,
        expires_in: this.lifetimeSeconds,
        interval: this.intervalSeconds,
      };
    }
    throw new StoreUnavailableError("no free user code was found");
  }

  /** The service's clock (epoch ms): what its lifetimes are measured against. */
  now(): number {
    return this.#now();
  }

  /**
   * What a user code asks for, for the approval page. Wrong entries count
   * against the budgets (see `UserCodeAttemptOptions`). `ctx` must be an
   * authenticated human (a `Request` the chain ran on, or its `Context`).
   *
   * Only a code the human submitted on this site is looked up: a form post
   * (the chain's CSRF leg vouches for it) or a GET the browser marks
   * `Sec-Fetch-Site: same-origin`. A GET from a link or another site answers
   * `unconfirmed` without counting anything, so a page elsewhere cannot spend
   * a human's budget by sending their browser to the approval page.
   */
  async lookup(ctx: ContextSource, userCode: unknown): Promise<UserCodeOutcome> {
    approverOf(ctx);
    if (ctx instanceof Request && !submittedOnSite(ctx)) {
      const code = normalizeUserCode(userCode);
      return {
        ok: false,
        reason: "unconfirmed",
        ...(code === undefined ? {} : { userCode: formatUserCode(code) }),
      };
    }
    return this.#withBudget(ctx, userCode, async (hash) => {
      const record = await this.#call(() => this.#store.findByUserCode(hash, this.#now()));
      return record?.status === "pending" ? record : undefined;
    });
  }

  /**
   * Approves the request a user code names, binding `subject`: the principal
   * the token is issued to. For agents, the agent's principal id, never the
   * approving human's (`deviceApproveHandler` is for a human's own devices).
   */
  async authorize(
    ctx: ContextSource,
    userCode: unknown,
    subject: string,
  ): Promise<UserCodeOutcome> {
    if (typeof subject !== "string" || subject === "")
      throw new TypeError(
        "DeviceAuthorizationService.authorize: subject must be a non-empty string",
      );
    const approver = approverOf(ctx);
    return this.#withBudget(ctx, userCode, async (hash) => {
      const outcome = await this.#call(() =>
        this.#store.decide(hash, { status: "approved", subject, decidedBy: approver }, this.#now()),
      );
      return decided(outcome);
    });
  }

  /** Refuses the request a user code names; the client's next poll gets `access_denied`. */
  async deny(ctx: ContextSource, userCode: unknown): Promise<UserCodeOutcome> {
    const approver = approverOf(ctx);
    return this.#withBudget(ctx, userCode, async (hash) => {
      const outcome = await this.#call(() =>
        this.#store.decide(hash, { status: "denied", decidedBy: approver }, this.#now()),
      );
      return decided(outcome);
    });
  }

  /** One poll of the token endpoint by `clientId` with `deviceCode`. */
  async poll(deviceCode: string, clientId: string): Promise<PollResult> {
    if (typeof deviceCode !== "string" || deviceCode.length > 128) return { outcome: "invalid" };
    const hash = await sha256(deviceCode);
    const result: PollOutcome = await this.#call(() =>
      this.#store.poll(hash, clientId, this.#now(), SLOW_DOWN_MS),
    );
    switch (result.outcome) {
      case "approved": {
        const { record } = result;
        if (record.subject === undefined) return { outcome: "invalid" };
        return {
          outcome: "approved",
          clientId: record.clientId,
          subject: record.subject,
          scope: record.scope,
          approvedBy: record.decidedBy ?? "",
          userCodeHash: record.userCodeHash,
          consumedAt: record.lastPolledAt ?? 0,
        };
      }
      case "slow_down":
        return { outcome: "slow_down", intervalSeconds: Math.ceil(result.intervalMs / 1000) };
      default:
        return { outcome: result.outcome };
    }
  }

  /**
   * Gives back an approval `poll` answered when its token could not be issued,
   * so the client's next poll gets it; `false` when the store cannot (it has
   * no `release`, or the record moved on). Never throws: the caller is already
   * answering a failure.
   */
  async release(deviceCode: string, clientId: string, consumedAt: number): Promise<boolean> {
    const store = this.#store;
    if (typeof store.release !== "function") return false;
    try {
      const hash = await sha256(deviceCode);
      return await this.#call(() =>
        (store.release as NonNullable<DeviceCodeStore["release"]>)(hash, clientId, consumedAt),
      );
    } catch {
      return false;
    }
  }

  async #withBudget(
    ctx: ContextSource,
    userCode: unknown,
    act: (userCodeHash: string) => Promise<DeviceCodeRecord | "expired" | undefined>,
  ): Promise<UserCodeOutcome> {
    const approver = approverOf(ctx);
    const address = clientAddressOf(ctx);
    const now = this.#now();
    const taken: string[] = [];
    const take = async (key: string, limit: number) => {
      const reservation = await this.#call(() =>
        this.#attempts.consume(key, limit, this.#windowMs, now),
      );
      if (reservation.allowed) taken.push(key);
      return reservation;
    };
    const giveBack = async () => {
      for (const key of taken) await this.#settle(() => this.#attempts.release(key, now));
    };
    // Budget is taken before the code is tried, so racing guesses cannot overrun it.
    let reservation = await take(`approver:${approver}`, this.#perApprover);
    if (reservation.allowed) reservation = await take("overall", this.#overall);
    // An approver's first entry in the window passes whatever others did from
    // the same address (an office, a carrier NAT); later ones share its budget.
    if (reservation.allowed && address !== undefined) {
      const first = await take(`first:${approver}`, 1);
      if (!first.allowed) reservation = await take(`address:${address}`, this.#perAddress);
    }
    if (!reservation.allowed) {
      await giveBack();
      return {
        ok: false,
        reason: "too_many_attempts",
        retryAfterSeconds: Math.max(1, Math.ceil((reservation.resetAt - now) / 1000)),
      };
    }
    const code = normalizeUserCode(userCode);
    const record = code === undefined ? undefined : await act(await sha256(code));
    if (record === "expired") return { ok: false, reason: "expired" };
    if (record === undefined || code === undefined) return { ok: false, reason: "invalid_code" };
    await giveBack();
    return {
      ok: true,
      clientId: record.clientId,
      scope: record.scope,
      userCode: formatUserCode(code),
      expiresAt: record.expiresAt,
    };
  }

  // Giving budget back only loosens it: a failure (reported) keeps the entry counted.
  async #settle(operation: () => Promise<void>): Promise<void> {
    await this.#call(operation).catch(() => {});
  }
}

function decided(outcome: DecideOutcome): DeviceCodeRecord | "expired" | undefined {
  if (outcome.outcome === "decided") return outcome.record;
  // A code that existed and ran out: telling so helps the human and tells a guesser nothing usable.
  return outcome.outcome === "expired" ? "expired" : undefined;
}

/**
 * A code the human submitted on this site: any unsafe method (behind the
 * chain, CSRF-checked) or a GET the browser marks same-origin.
 */
function submittedOnSite(request: Request): boolean {
  if (request.method !== "GET" && request.method !== "HEAD") return true;
  return request.headers.get("sec-fetch-site") === "same-origin";
}

/** How stores key a user code: SHA-256 of its normalized form, base64url; `undefined` if malformed. */
export async function userCodeHash(userCode: unknown): Promise<string | undefined> {
  const code = normalizeUserCode(userCode);
  return code === undefined ? undefined : sha256(code);
}

export type {
  DeviceAuthorizationServiceOptions,
  UserCodeAttemptOptions,
} from "./device-service-options.ts";
