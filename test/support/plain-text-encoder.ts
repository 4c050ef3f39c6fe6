import type { PasswordEncoder } from "../../src/login/index.ts";

/**
 * Test support only: a `PasswordEncoder` that stores passwords as they are
 * (`{plain}<password>`), for suites that need many instant password checks.
 * Never ship it: a leaked user table would give every password away.
 */
export function plainTextEncoder(): PasswordEncoder {
  return {
    hash: async (password) => `{plain}${password}`,
    verify: async (password, encoded) => encoded === `{plain}${password}`,
    needsRehash: (encoded) => !encoded.startsWith("{plain}"),
  };
}
