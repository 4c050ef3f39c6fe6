export { type LoginAttemptStore, MemoryLoginAttemptStore } from "./attempts.ts";
export type { LoginEndpoint } from "./endpoint.ts";
export {
  type LoginOptions,
  type LoginThrottleOptions,
  type LoginUser,
  login,
} from "./middleware.ts";
export {
  createPasswordEncoder,
  DelegatingPasswordEncoder,
  type PasswordEncoder,
  Pbkdf2PasswordEncoder,
  type ScryptParameters,
  ScryptPasswordEncoder,
} from "./password-encoder.ts";
