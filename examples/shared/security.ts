import {
  authz,
  basicAuth,
  type Chain,
  createPasswordEncoder,
  csrf,
  login,
  newChain,
  passwordCredentials,
  rateLimit,
  securityHeaders,
  sessions,
} from "portcullis";
import { demoUsers } from "./accounts.js";

const { match, routes } = authz;

/** The role hierarchy of the examples. */
export const HIERARCHY = "ADMIN > STAFF > USER";

/**
 * The security chain every framework example mounts first. Demo accounts only
 * (alice / sam / ada, see the README): their passwords are public.
 */
export function exampleChain(): Chain {
  const encoder = createPasswordEncoder();
  const users = demoUsers(encoder); // hashed once; a sign-in waits for it
  // One user table, one password encoder and one failure throttle for form logins and Basic alike.
  const credentials = passwordCredentials({
    findUser: async (name) => (await users).get(name),
    passwordEncoder: encoder,
  });
  return newChain({
    headers: securityHeaders(),
    rateLimit: rateLimit({
      rules: [{ name: "login", match: "/login", methods: ["POST"], limit: 10, windowMs: 60_000 }],
    }),
    // Secure is off only because the examples serve plain HTTP on localhost.
    session: sessions({ secure: false }),
    // API clients may use HTTP Basic; without credentials a request goes on as anonymous.
    authentication: basicAuth({ credentials, required: false }),
    csrf: csrf(),
    login: login({ credentials }),
    authorization: routes(
      [
        match("GET", "/public/**").permitAll(),
        match("GET", "/").authenticated(),
        match("GET", "/me").authenticated(),
        match("GET", "/staff/**").hasRole("STAFF"),
        match("/admin/**").authenticated(), // the route group's own guard asks for ADMIN
        match("POST", "/notes").authenticated(),
        // Anything else, paths without a route included, is denied.
      ],
      { hierarchy: HIERARCHY },
    ),
  });
}

/** What each example prints once it listens. */
export function banner(framework: string, url: string): void {
  console.log(`Portcullis on ${framework}: ${url}`);
  console.log(
    "!! DEMO ACCOUNTS, FOR LOCAL USE ONLY: alice / demo-alice, sam / demo-sam, ada / demo-ada !!",
  );
  console.log(`  curl ${url}/public/hello                      # 200, anyone`);
  console.log(`  curl -u alice:demo-alice ${url}/                # 200, any signed-in user`);
  console.log(`  curl ${url}/nothing/here                      # 401, unmatched paths are denied`);
  console.log(`  curl -u sam:demo-sam ${url}/staff/reports     # 200, STAFF by the chain's rule`);
  console.log(`  curl -u ada:demo-ada ${url}/staff/reports     # 200, ADMIN > STAFF`);
  console.log(
    `  curl -u sam:demo-sam ${url}/admin/panel       # 403, the route's literal ADMIN guard`,
  );
  console.log(
    `  curl -u alice:demo-alice -H 'content-type: application/json' -d '{"text":"hi"}' ${url}/notes`,
  );
}
