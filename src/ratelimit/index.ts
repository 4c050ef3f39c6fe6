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
