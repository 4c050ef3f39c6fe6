/**
 * Sign-in: the `login` endpoint, `passwordCredentials` (users, password encoders and the failure
 * throttle) and the login-attempt stores.
 *
 * @module portcullis/login
 */
export {
  type AttemptReservation,
  type LoginAttemptStore,
  MemoryLoginAttemptStore,
  type MemoryLoginAttemptStoreOptions,
} from "../core/login-attempt-store.ts";
export {
  type LoginThrottleOptions,
  type LoginUser,
  type PasswordCheck,
  type PasswordCredentials,
  type PasswordCredentialsOptions,
  passwordCredentials,
} from "./credentials.ts";
export type { LoginEndpoint } from "./endpoint.ts";
export { type LoginOptions, login, signedInAt } from "./login.ts";
export {
  createPasswordEncoder,
  DelegatingPasswordEncoder,
  type PasswordEncoder,
  Pbkdf2PasswordEncoder,
  type ScryptParameters,
  ScryptPasswordEncoder,
} from "./password-encoder.ts";
