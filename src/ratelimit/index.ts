/**
 * The rate-limiting leg: `rateLimit` with sliding-window, fixed-window and token-bucket rules,
 * and the `RateLimitStore` interface with its bounded memory store.
 *
 * @module portcullis/ratelimit
 */
export {
  type RateLimitAlgorithm,
  type RateLimitDecision,
  type RateLimitPolicy,
  type RateLimitState,
  type RateLimitStep,
  step,
} from "./algorithms.ts";
export {
  type RateLimitKey,
  type RateLimitLeg,
  type RateLimitOptions,
  type RateLimitPlacement,
  type RateLimitRule,
  rateLimit,
} from "./rate-limit.ts";
export {
  MemoryRateLimitStore,
  type MemoryRateLimitStoreOptions,
  type RateLimitStore,
} from "./rate-limit-store.ts";
