import { createPasswordEncoder, type LoginUser, type PasswordEncoder } from "portcullis";

/**
 * The demo accounts of the examples: for local use only, their passwords are
 * public. Override them with PORTCULLIS_DEMO_<NAME>_PASSWORD.
 */
export function demoLogins(env: Record<string, string | undefined> = process.env) {
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
  for (const { name, authorities, password } of demoLogins()) {
    users.set(name, { name, authorities, passwordHash: await encoder.hash(password) });
  }
  return users;
}
