import { createPasswordEncoder, type LoginUser, type PasswordEncoder } from "portcullis";

/** A demo account: for local use only, its password is public. */
export interface DemoAccount {
  readonly name: string;
  readonly authorities: readonly string[];
  readonly password: string;
}

/**
 * The demo accounts of the examples: for local use only, their passwords are
 * public. Override them with PORTCULLIS_DEMO_<NAME>_PASSWORD; never deploy them.
 */
export function demoAccounts(env: Record<string, string | undefined> = process.env): DemoAccount[] {
  return [
    {
      name: "alice",
      authorities: ["USER"],
      password: env.PORTCULLIS_DEMO_ALICE_PASSWORD ?? "demo-alice",
    },
    {
      name: "sam",
      authorities: ["STAFF"],
      password: env.PORTCULLIS_DEMO_SAM_PASSWORD ?? "demo-sam",
    },
    {
      name: "ada",
      authorities: ["ADMIN"],
      password: env.PORTCULLIS_DEMO_ADA_PASSWORD ?? "demo-ada",
    },
  ];
}

/** The demo accounts as a user table keeps them: hashes only. */
export async function demoUsers(
  encoder: PasswordEncoder = createPasswordEncoder(),
): Promise<Map<string, LoginUser>> {
  const users = new Map<string, LoginUser>();
  for (const { name, authorities, password } of demoAccounts()) {
    users.set(name, { name, authorities, passwordHash: await encoder.hash(password) });
  }
  return users;
}
