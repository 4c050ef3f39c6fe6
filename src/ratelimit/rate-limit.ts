import { authenticationFrom } from "../core/authentication.ts";
import {
  addressNetwork,
  type ClientAddressOptions,
  checkClientAddressOptions,
  clientAddress,
  clientAddressAdvice,
  resolveClientAddress,
} from "../core/client-address.ts";
import { bindValue, contextFrom, createContextKey } from "../core/context.ts";
import { sha256Hex } from "../core/digest.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { directLeg, type FetchHandler, type Middleware, onAnswer } from "../core/handler.ts";
import { declaredMethods, isMethodToken, methodProblem } from "../core/http-method.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { matchPath, refusedPathResponse } from "../core/path.ts";
import { compilePattern, type PathMatcher } from "../core/pattern.ts";
import { problemResponse } from "../core/problem.ts";
import { withHeaders } from "../core/response.ts";
import { warnOnce } from "../core/warning.ts";
import {
  ALGORITHMS,
  type RateLimitAlgorithm,
  type RateLimitDecision,
  type RateLimitPolicy,
} from "./algorithms.ts";
import { hitNow, MemoryRateLimitStore, type RateLimitStore } from "./rate-limit-store.ts";

/** Whose requests a rule counts together. */
export type RateLimitKey =
  | "address"
  | "principal"
  | ((request: Request) => string | undefined | Promise<string | undefined>);

/** One quota. Every rule that covers a request counts it; the strictest answer wins. */
export interface RateLimitRule {
  /**
   * Policy name in the `RateLimit` fields and part of the counter key, so rules
   * never share counters. Letters, digits, `_`, `.`, `-`; unique.
   *
   * @default `rule<n>`, n its 1-based position
   */
  readonly name?: string;
  /**
   * Path pattern(s) (`authz.match` syntax: `*` one segment, `**` any depth)
   * against the normalized request path.
   *
   * @default every path
   */
  readonly match?: string | readonly string[];
  /**
   * Methods counted, in upper case: those of RFC 9110, PATCH, and any declared
   * in `extensionMethods`; any other is refused, so a misspelt one cannot
   * leave its rule counting nothing.
   *
   * @default every method
   */
  readonly methods?: readonly string[];
  /** Requests allowed per window: a positive integer. */
  readonly limit: number;
  /** Window length in milliseconds: a positive integer. */
  readonly windowMs: number;
  /** @default "sliding-window"; see `RateLimitAlgorithm` */
  readonly algorithm?: RateLimitAlgorithm;
  /**
   * `"address"`: the client address, grouped by network (see
   * `ipv6Prefix`). `"principal"`: the authenticated principal's name, falling
   * back to the address for anonymous requests. A function returns a key of
   * your own (an API key id, a tenant; not a secret), falling back to the
   * address when it returns `undefined`; one that throws is handled like a
   * store failure (see `failOpen`).
   *
   * @default "address"
   */
  readonly key?: RateLimitKey;
}

/**
 * Options of `rateLimit`.
 *
 * @example
 * ```ts
 * import { newHandler, rateLimit } from "portcullis";
 * import { RedisRateLimitStore } from "portcullis/stores/redis";
 *
 * const handler = newHandler(app.fetch, {
 *   rateLimit: rateLimit({
 *     rules: [
 *       { name: "login", match: "/login", methods: ["POST"], limit: 10, windowMs: 60_000 },
 *       { name: "api", match: "/api/**", limit: 600, windowMs: 60_000, key: "principal" },
 *     ],
 *     store: new RedisRateLimitStore({ client: redis }), // shared by every instance
 *   }),
 *   authorization,
 * });
 * ```
 */
export interface RateLimitOptions extends ClientAddressOptions {
  /** The quotas, at least one. A rule without `match` and `methods` is a global default. */
  readonly rules: readonly RateLimitRule[];
  /**
   * Methods beyond RFC 9110's and PATCH that rules may name, in upper case
   * (`["PROPFIND"]`), as in `authz.routes`.
   *
   * @default none
   */
  readonly extensionMethods?: readonly string[];
  /**
   * Where the counters live; use a shared store, such as `RedisRateLimitStore`,
   * behind a load balancer.
   *
   * @default a new `MemoryRateLimitStore()` with its defaults (process-local)
   */
  readonly store?: RateLimitStore;
  /**
   * IPv6 clients are keyed by this network prefix, 0..128. A home or office is
   * usually delegated a /56 (at least a /64), and every address in it is one
   * client's to rotate through.
   *
   * @default 56
   */
  readonly ipv6Prefix?: number;
  /**
   * IPv4 clients are keyed by this prefix, 0..32.
   *
   * @default 32 (one address)
   */
  readonly ipv4Prefix?: number;
  /**
   * Add the `RateLimit-Policy` and `RateLimit` fields (draft-ietf-httpapi-ratelimit-headers-11)
   * to allowed responses, where the downstream has not set them.
   * 429 answers carry `Retry-After` either way.
   *
   * @default true
   */
  readonly headers?: boolean;
  /**
   * When the store fails: `false` answers 503, so an outage of the store never
   * lifts the limits; `true` lets the request through uncounted.
   *
   * @default false
   */
  readonly failOpen?: boolean;
  /**
   * Told about every store failure.
   *
   * @default console.error
   */
  readonly onStoreError?: (error: unknown, request: Request) => void;
  /**
   * Clock in milliseconds.
   *
   * @default Date.now
   */
  readonly now?: () => number;
}

interface CompiledRule {
  readonly name: string;
  readonly id: string;
  readonly policy: RateLimitPolicy;
  readonly matchers: readonly PathMatcher[] | undefined;
  readonly methods: ReadonlySet<string> | undefined;
  readonly key: RateLimitKey;
  readonly policyItem: string;
  /** The last counter key made and the key part it was made from: requests repeat clients. */
  readonly last: { part: string; key: string };
}

interface Counted {
  readonly rule: CompiledRule;
  readonly decision: RateLimitDecision;
}

const RULE_KEYS = ["name", "match", "methods", "limit", "windowMs", "algorithm", "key"];
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
// The problem type draft-ietf-httpapi-ratelimit-headers registers for a spent quota.
const QUOTA_EXCEEDED = "https://iana.org/assignments/http-problem-types#quota-exceeded";
const ALGORITHM_CODES: Record<RateLimitAlgorithm, string> = {
  "fixed-window": "fw",
  "sliding-window": "sw",
  "token-bucket": "tb",
};
// Longer key parts are hashed so a client-influenced value cannot bloat store keys.
const MAX_KEY_PART = 200;
const MEMORY_HIT = MemoryRateLimitStore.prototype.hit;

/**
 * Where a `rateLimit` leg with `"principal"` rules runs in the chain: the
 * principal is only known after the session lookup and the authenticators,
 * so those rules are counted there and the others before the session.
 */
export interface RateLimitPlacement {
  /** The rules keyed on anything but the principal; `undefined` when there are none. */
  readonly beforeSession: Middleware | undefined;
  /** The rules keyed on the principal. */
  readonly afterAuthentication: Middleware;
}

/** What `rateLimit` returns: middleware, with its placement when it counts principals. */
export type RateLimitLeg = Middleware & {
  /** Set when some rule keys on the principal; `newChain` mounts the two parts there. */
  readonly placement?: RateLimitPlacement;
};

/**
 * Rate limiting, leg 3 of the chain. Every rule covering the request counts it
 * (all at once, against `store`); if any rule is exhausted the request gets a
 * 429 problem with `Retry-After` and the downstream never runs.
 *
 * The client address comes from `resolveClientAddress`: with `trustProxy` or
 * `forwardedHeader` given here, resolved with them; otherwise the address an
 * earlier leg resolved, or the socket peer. Requests whose address is unknown
 * (nothing bound, malformed) share one counter per rule: they are limited
 * together rather than not at all.
 */
export function rateLimit(options: RateLimitOptions): RateLimitLeg {
  if (typeof options !== "object" || options === null)
    throw new InvalidOptionsError("rateLimit needs an options object");
  rejectUnknownKeys("rateLimit", options, [
    "rules",
    "extensionMethods",
    "store",
    "ipv6Prefix",
    "ipv4Prefix",
    "headers",
    "failOpen",
    "onStoreError",
    "now",
    "trustProxy",
    "forwardedHeader",
  ]);
  const rules = compileRules(options.rules, declaredMethods("rateLimit", options.extensionMethods));
  const store = options.store ?? new MemoryRateLimitStore();
  if (typeof store?.hit !== "function")
    throw new InvalidOptionsError("rateLimit store must implement RateLimitStore");
  checkClientAddressOptions(options);
  const ownAddressOptions =
    options.trustProxy !== undefined || options.forwardedHeader !== undefined;
  const prefixes = {
    ipv4Prefix: integerIn(options.ipv4Prefix, 32, 0, 32, "ipv4Prefix"),
    ipv6Prefix: integerIn(options.ipv6Prefix, 56, 0, 128, "ipv6Prefix"),
  };
  const headers = booleanOption(options.headers, true, "headers");
  const failOpen = booleanOption(options.failOpen, false, "failOpen");
  const clock = options.now ?? Date.now;
  if (typeof clock !== "function")
    throw new InvalidOptionsError("rateLimit now must be a function");
  const onStoreError =
    options.onStoreError ??
    ((error: unknown) => console.error("portcullis: rate-limit store failed", error));
  if (typeof onStoreError !== "function")
    throw new InvalidOptionsError("rateLimit onStoreError must be a function");

  // The built-in memory store answers within the call (a subclass might not).
  const inMemory =
    Object.getPrototypeOf(store) === MemoryRateLimitStore.prototype
      ? (store as MemoryRateLimitStore)
      : undefined;

  // Requests mostly come from the client the previous one came from.
  let lastAddress: string | undefined;
  let lastAddressPart = "";
  const addressKey = (request: Request): string => {
    const address = ownAddressOptions
      ? resolveClientAddress(request, options)
      : clientAddress(request);
    if (address !== undefined && address === lastAddress) return lastAddressPart;
    const network = address === undefined ? undefined : addressNetwork(address, prefixes);
    if (network !== undefined) {
      lastAddress = address;
      lastAddressPart = `a:${network}`;
      return lastAddressPart;
    }
    warnOnce(
      "PORTCULLIS_NO_CLIENT_ADDRESS",
      `a rate-limit rule keyed on the client address saw a request with no address, so such clients share one counter; ${clientAddressAdvice(request)}`,
    );
    return "u";
  };

  // Synchronous unless a rule's key is a function or the key needs hashing:
  // the common rules cost no promise.
  const keyFor = (
    rule: CompiledRule,
    request: Request,
    address: AddressKey,
  ): string | Promise<string> => {
    let part: string;
    if (rule.key === "address") {
      part = address.get();
    } else if (rule.key === "principal") {
      const auth = authenticationFrom(request);
      part = auth?.authenticated === true && !auth.anonymous ? `p:${auth.name}` : address.get();
    } else {
      return customKey(rule, request, address);
    }
    return counterKey(rule, part);
  };

  const customKey = async (
    rule: CompiledRule,
    request: Request,
    address: AddressKey,
  ): Promise<string> => {
    const value = await (rule.key as Exclude<RateLimitKey, string>)(request);
    return counterKey(
      rule,
      typeof value === "string" && value !== "" ? `k:${value}` : address.get(),
    );
  };

  // Within the call for the memory store and a key known at once; may throw.
  const count = (
    rule: CompiledRule,
    request: Request,
    address: AddressKey,
    now: number,
  ): RateLimitDecision | Promise<RateLimitDecision> => {
    const key = keyFor(rule, request, address);
    // A replaced `hit` (a test's spy, a wrapper) is honoured.
    if (inMemory !== undefined && inMemory.hit === MEMORY_HIT && typeof key === "string")
      return hitNow(inMemory, key, rule.policy, now);
    return countInStore(rule, key, now);
  };

  const countInStore = async (
    rule: CompiledRule,
    key: string | Promise<string>,
    now: number,
  ): Promise<RateLimitDecision> => {
    const decision = await store.hit(typeof key === "string" ? key : await key, rule.policy, now);
    if (!isDecision(decision)) throw new TypeError("rate-limit store answered malformed data");
    return decision;
  };

  const settle = async (
    rule: CompiledRule,
    request: Request,
    address: AddressKey,
    now: number,
  ): Promise<RateLimitDecision> => count(rule, request, address, now);

  const reportStoreError = (error: unknown, request: Request) => {
    try {
      onStoreError(error, request);
    } catch {
      // A failing logger must not change the answer.
    }
  };

  const leg = (legRules: readonly CompiledRule[], part: LegPart): Middleware =>
    directLeg((next) => (request, ...rest) => {
      const path = matchPath(request);
      if (path === undefined) return refusedPathResponse();
      const method = request.method.toUpperCase();
      let applicable: CompiledRule[] | undefined;
      for (const rule of legRules) {
        if (rule.methods !== undefined && !rule.methods.has(method)) continue;
        if (rule.matchers !== undefined && !rule.matchers.some((matches) => matches(path)))
          continue;
        if (applicable === undefined) applicable = [rule];
        else applicable.push(rule);
      }
      if (applicable === undefined) return next(request, ...rest);

      const now = clock();
      const address = new AddressKey(request, addressKey);
      const go = (counted: Counted[], failed: boolean) =>
        decided(counted, failed, part, now, request, rest, next);
      if (applicable.length === 1) {
        // One rule is the common case; it needs no settling of several promises, and none at
        // all when the store answers within the call.
        const rule = applicable[0] as CompiledRule;
        let result: RateLimitDecision | Promise<RateLimitDecision>;
        try {
          result = count(rule, request, address, now);
        } catch (error) {
          reportStoreError(error, request);
          return go([], true);
        }
        if (!(result instanceof Promise)) return go([{ rule, decision: result }], false);
        return result.then(
          (decision) => go([{ rule, decision }], false),
          (error: unknown) => {
            reportStoreError(error, request);
            return go([], true);
          },
        );
      }
      const several = applicable;
      return Promise.allSettled(several.map((rule) => settle(rule, request, address, now))).then(
        (settled) => {
          const counted: Counted[] = [];
          let failed = false;
          settled.forEach((result, i) => {
            if (result.status === "fulfilled") {
              counted.push({ rule: several[i] as CompiledRule, decision: result.value });
            } else {
              failed = true;
              reportStoreError(result.reason, request);
            }
          });
          return go(counted, failed);
        },
      );
    });

  /** What the leg answers once every applicable rule is counted (or its store failed). */
  const decided = (
    counted: Counted[],
    failed: boolean,
    part: LegPart,
    now: number,
    request: Request,
    rest: unknown[],
    next: FetchHandler,
  ): Response | Promise<Response> => {
    if (failed && !failOpen) {
      return problemResponse(503, { detail: "Rate limiting is unavailable; try again later." });
    }

    let retryAt: number | undefined;
    const violated: string[] = [];
    for (const { rule, decision } of counted) {
      if (decision.allowed) continue;
      retryAt = Math.max(retryAt ?? now, decision.retryAt);
      violated.push(rule.name);
    }
    if (retryAt !== undefined) {
      const fields = new Headers({ "retry-after": String(seconds(retryAt - now, 1)) });
      if (headers) setFields(fields, counted, now);
      return problemResponse(429, {
        type: QUOTA_EXCEEDED,
        detail: "Too many requests; retry later.",
        extensions: { "violated-policies": violated },
        headers: fields,
      });
    }

    if (part === "late") {
      // The early part of the same leg writes the fields for both.
      const early = contextFrom(request).get(LATE_COUNTS);
      if (early !== undefined) {
        early.push(...counted);
        return next(request, ...rest);
      }
    }
    let late: Counted[] | undefined;
    if (part === "early") {
      late = [];
      bindValue(request, LATE_COUNTS, late);
    }
    return onAnswer(next(request, ...rest), (response) => {
      const all = late === undefined || late.length === 0 ? counted : [...counted, ...late];
      return headers && all.length > 0 ? decorate(response, all, now) : response;
    });
  };

  const whole = leg(rules, "whole");
  const byPrincipal = rules.filter((rule) => rule.key === "principal");
  if (byPrincipal.length === 0) return whole;
  const others = rules.filter((rule) => rule.key !== "principal");
  const placement: RateLimitPlacement = Object.freeze({
    beforeSession: others.length > 0 ? leg(others, "early") : undefined,
    afterAuthentication: leg(byPrincipal, "late"),
  });
  return Object.assign(whole, { placement });
}

/** Which part of the rules a leg counts: all, those before the session, or those by principal. */
type LegPart = "whole" | "early" | "late";

/** Decisions of the late part, collected for the early part to write. */
const LATE_COUNTS = createContextKey<Counted[]>("portcullis.rateLimit.late");

/** The request's address part of a key, resolved once and only if a rule asks for it. */
class AddressKey {
  #value: string | undefined;
  readonly #request: Request;
  readonly #resolve: (request: Request) => string;

  constructor(request: Request, resolve: (request: Request) => string) {
    this.#request = request;
    this.#resolve = resolve;
  }

  get(): string {
    this.#value ??= this.#resolve(this.#request);
    return this.#value;
  }
}

/** The store key for `part` under `rule`; long parts are hashed, so a client cannot bloat keys. */
function counterKey(rule: CompiledRule, part: string): string | Promise<string> {
  const last = rule.last;
  if (part === last.part) return last.key;
  if (part.length > MAX_KEY_PART) return hashedKey(rule, part);
  last.part = part;
  last.key = `${rule.id}:${part}`;
  return last.key;
}

async function hashedKey(rule: CompiledRule, part: string): Promise<string> {
  return `${rule.id}:h:${await sha256Hex(part)}`;
}

function compileRules(
  rules: readonly RateLimitRule[] | undefined,
  declared: ReadonlySet<string>,
): readonly CompiledRule[] {
  if (!Array.isArray(rules) || rules.length === 0)
    throw new InvalidOptionsError("rateLimit needs a non-empty rules array");
  const names = new Set<string>();
  return Object.freeze(
    rules.map((rule: RateLimitRule, index): CompiledRule => {
      if (typeof rule !== "object" || rule === null)
        throw new InvalidOptionsError("every rate-limit rule must be an object");
      rejectUnknownKeys(`rateLimit rule ${index + 1}`, rule, RULE_KEYS);
      const name = rule.name ?? `rule${index + 1}`;
      if (typeof name !== "string" || !NAME.test(name))
        throw new InvalidOptionsError(
          `rate-limit rule name must be 1-64 letters, digits, "_", "." or "-": ${JSON.stringify(name)}`,
        );
      if (names.has(name))
        throw new InvalidOptionsError(`rate-limit rule names must be unique: ${name}`);
      names.add(name);
      const limit = positiveInteger(rule.limit, `rule ${name}: limit`);
      const windowMs = positiveInteger(rule.windowMs, `rule ${name}: windowMs`);
      const algorithm = rule.algorithm ?? "sliding-window";
      if (!ALGORITHMS.includes(algorithm))
        throw new InvalidOptionsError(`rule ${name}: unknown algorithm ${String(algorithm)}`);
      const key = rule.key ?? "address";
      if (key !== "address" && key !== "principal" && typeof key !== "function")
        throw new InvalidOptionsError(
          `rule ${name}: key must be "address", "principal" or a function`,
        );
      let matchers: PathMatcher[] | undefined;
      if (rule.match !== undefined) {
        const patterns = typeof rule.match === "string" ? [rule.match] : rule.match;
        if (!Array.isArray(patterns) || patterns.length === 0)
          throw new InvalidOptionsError(
            `rule ${name}: match must be a pattern or a non-empty array`,
          );
        matchers = patterns.map((pattern: string) => compilePattern(pattern));
      }
      let methods: Set<string> | undefined;
      if (rule.methods !== undefined) {
        if (!Array.isArray(rule.methods) || rule.methods.length === 0)
          throw new InvalidOptionsError(`rule ${name}: methods must be a non-empty array`);
        methods = new Set();
        for (const method of rule.methods as unknown[]) {
          if (!isMethodToken(method))
            throw new InvalidOptionsError(`rule ${name}: invalid method ${JSON.stringify(method)}`);
          const problem = methodProblem(`rateLimit rule ${name}`, method, declared);
          if (problem !== undefined) throw new InvalidOptionsError(problem);
          methods.add(method);
        }
      }
      return {
        name,
        // Algorithm and window are part of the identity: changing them starts fresh counters
        // instead of reading state written under other semantics.
        id: `${name}:${ALGORITHM_CODES[algorithm]}:${windowMs}`,
        policy: Object.freeze({ algorithm, limit, windowMs }),
        matchers,
        methods,
        key,
        policyItem: `"${name}";q=${limit};w=${seconds(windowMs, 1)}`,
        last: { part: "", key: "" },
      };
    }),
  );
}

/** Whole seconds, rounded up, at least `min`. */
function seconds(ms: number, min: number): number {
  return Math.max(min, Math.ceil(ms / 1000));
}

function setFields(target: Headers, counted: readonly Counted[], now: number): void {
  let policy = "";
  let state = "";
  for (const { rule, decision } of counted) {
    const until = decision.allowed ? decision.resetAt : decision.retryAt;
    const remaining = decision.allowed ? decision.remaining : 0;
    const separator = policy === "" ? "" : ", ";
    policy += separator + rule.policyItem;
    state += `${separator}"${rule.name}";r=${remaining};t=${seconds(until - now, 0)}`;
  }
  if (!target.has("ratelimit-policy")) target.set("ratelimit-policy", policy);
  if (!target.has("ratelimit")) target.set("ratelimit", state);
}

/** `response` with the fields; a copy sharing the body stream when its headers are immutable. */
function decorate(response: Response, counted: readonly Counted[], now: number): Response {
  return withHeaders(response, (headers) => setFields(headers, counted, now));
}

function isDecision(value: unknown): value is RateLimitDecision {
  const d = value as RateLimitDecision | undefined;
  return (
    typeof d === "object" &&
    d !== null &&
    typeof d.allowed === "boolean" &&
    Number.isFinite(d.remaining) &&
    Number.isFinite(d.resetAt) &&
    Number.isFinite(d.retryAt)
  );
}

function positiveInteger(value: unknown, what: string): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1)
    throw new InvalidOptionsError(`${what} must be a positive integer`);
  return value as number;
}

function integerIn(
  value: unknown,
  fallback: number,
  min: number,
  max: number,
  what: string,
): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max)
    throw new InvalidOptionsError(`${what} must be an integer from ${min} to ${max}`);
  return value as number;
}

function booleanOption(value: unknown, fallback: boolean, what: string): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw new InvalidOptionsError(`${what} must be a boolean`);
  return value;
}
