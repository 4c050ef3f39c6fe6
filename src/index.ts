export * as authz from "./authz/index.ts";
export {
  type BrowserDenialOptions,
  browserDenials,
  isNavigation,
  newChain,
  newHandler,
  type SecurityOptions,
} from "./chain/index.ts";
export * from "./core/index.ts";
export * from "./cors/index.ts";
export * from "./csrf/index.ts";
export * from "./headers/index.ts";
export * from "./login/index.ts";
export * from "./middleware/index.ts";
export {
  MemoryRateLimitStore,
  type MemoryRateLimitStoreOptions,
  type RateLimitAlgorithm,
  type RateLimitKey,
  type RateLimitLeg,
  type RateLimitOptions,
  type RateLimitPlacement,
  type RateLimitRule,
  type RateLimitStore,
  rateLimit,
} from "./ratelimit/index.ts";
export * from "./session/index.ts";
