import type { Rule } from "../src/authz/rules.ts";
import { authz, basicAuth, type Chain, newChain, passwordCredentials } from "../src/index.ts";
import { plainTextEncoder } from "./support/plain-text-encoder.ts";

// One user per role; each one's password is "<name>-pw".
const users = new Map(
  [
    ["user", "USER"],
    ["staff", "STAFF"],
    ["admin", "ADMIN"],
  ].map(([name, role]) => [
    name as string,
    { name: name as string, authorities: [role as string], passwordHash: `{plain}${name}-pw` },
  ]),
);

/** A chain without sessions whose callers sign in with HTTP Basic, decided by `rules`. */
export function basicChain(rules: readonly Rule[]): Chain {
  const credentials = passwordCredentials({
    findUser: (name) => users.get(name),
    passwordEncoder: plainTextEncoder(),
    throttle: false,
  });
  return newChain({
    session: false,
    authentication: basicAuth({ credentials, required: false }),
    authorization: authz.routes(rules),
  });
}

/** The `Authorization` header of the test user `who` (`user`, `staff` or `admin`). */
export const basic = (who: string): string => `Basic ${btoa(`${who}:${who}-pw`)}`;
