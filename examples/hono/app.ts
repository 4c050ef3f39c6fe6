import { Hono } from "hono";
import {
  authz,
  type BasicAuthUser,
  basicAuth,
  type Handler,
  mustAuthentication,
  newHandler,
  requireRole,
} from "portcullis";
import { honoMiddleware } from "portcullis/adapters/hono";

const { match, routes } = authz;

/**
 * Demo accounts, for local use only: fixed passwords anyone can read here.
 * Override them with PORTCULLIS_DEMO_<NAME>_PASSWORD; never deploy them.
 */
export function demoUsers(env: Record<string, string | undefined> = process.env): BasicAuthUser[] {
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

/** The example application: a Hono router behind the whole security chain. */
export function createExampleHandler(users: readonly BasicAuthUser[] = demoUsers()): Handler {
  const app = new Hono();

  app.get("/public/hello", (c) => c.json({ message: "hello, whoever you are" }));
  app.get("/", (c) => {
    // Integration pattern 1: the chain in front of the router resolved the principal.
    const me = mustAuthentication(c);
    return c.json({ name: me.name, authorities: me.authorities });
  });
  app.get("/staff/*", (c) =>
    c.json({ area: "staff", path: c.req.path, name: mustAuthentication(c).name }),
  );

  // Integration pattern 2: a literal role guard on the framework's route group.
  const admin = new Hono();
  admin.use("*", honoMiddleware(requireRole("ADMIN")));
  admin.get("/panel", (c) => c.json({ area: "admin", name: mustAuthentication(c).name }));
  app.route("/admin", admin);

  const byName = new Map(users.map((u) => [u.name, u]));
  return newHandler(app.fetch, {
    // HTTP Basic for now; requests without credentials go on as anonymous.
    authentication: basicAuth({
      findUser: (name) => byName.get(name),
      realm: "portcullis example",
      required: false,
    }),
    authorization: routes(
      [
        match("GET", "/public/**").permitAll(),
        match("GET", "/").authenticated(),
        match("GET", "/staff/**").hasRole("STAFF"),
        match("GET", "/admin/**").authenticated(), // the route group's guard asks for ADMIN
        // Anything else, including paths the router has no route for, is denied.
      ],
      { hierarchy: "ADMIN > STAFF > USER" },
    ),
  });
}
