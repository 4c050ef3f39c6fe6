import {
  authz,
  basicAuth,
  createPasswordEncoder,
  type LoginUser,
  newChain,
  passwordCredentials,
  securityHeaders,
} from "portcullis";

const { match, routes } = authz;

// Demo accounts, for local use only: their passwords are public (PORTCULLIS_DEMO_<NAME>_PASSWORD
// overrides one). Your user table keeps password hashes only.
const encoder = createPasswordEncoder();
const roles = { alice: "USER", sam: "STAFF", ada: "ADMIN" };
async function userTable(): Promise<Map<string, LoginUser>> {
  const users = new Map<string, LoginUser>();
  for (const [name, role] of Object.entries(roles)) {
    const password =
      process.env[`PORTCULLIS_DEMO_${name.toUpperCase()}_PASSWORD`] ?? `demo-${name}`;
    users.set(name, { name, authorities: [role], passwordHash: await encoder.hash(password) });
  }
  return users;
}
const users = userTable(); // hashed once, on first use of this module

/**
 * One chain for the proxy and for route handlers. They are bundled apart, so
 * each gets its own instance: keep state (sessions, rate limits) in a shared
 * store such as portcullis/stores/redis. Demo accounts only: see the README.
 */
export const chain = newChain({
  headers: securityHeaders(),
  // Basic credentials on every call, no sessions; the CSRF leg stays on, because
  // browsers resend cached Basic credentials to cross-site requests by themselves.
  session: false,
  // Wrong guesses are throttled per username and per client (in this instance's memory;
  // give the throttle a RedisLoginAttemptStore to share the count between instances).
  authentication: basicAuth({
    required: false,
    credentials: passwordCredentials({
      findUser: async (name) => (await users).get(name),
      passwordEncoder: encoder,
    }),
  }),
  authorization: routes(
    [
      match("GET", "/public/**").permitAll(),
      match("GET", "/").authenticated(),
      match("/admin/**").authenticated(), // the route's own guard asks for ADMIN
      match("GET", "/staff/**").hasRole("STAFF"),
      match("/api/**").authenticated(),
      // Anything else, pages without a route included, is denied.
    ],
    { hierarchy: "ADMIN > STAFF > USER" },
  ),
});
