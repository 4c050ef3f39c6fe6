import { serve } from "@hono/node-server";
import { Hono } from "hono";
import {
  authz,
  createPasswordEncoder,
  type LoginUser,
  login,
  mustAuthentication,
  newHandler,
  nodeServerClientAddress,
  passwordCredentials,
  rateLimit,
  sessions,
} from "portcullis";
import {
  createRedisClient,
  RedisLoginAttemptStore,
  RedisRateLimitStore,
  RedisSessionStore,
} from "portcullis/stores/redis";

// One client for every store; it survives Redis outages (requests answer 503 meanwhile).
const redis = await createRedisClient(process.env.REDIS_URL ?? "redis://127.0.0.1:6379").connect();

// Your user table (hashes only), as in the quick start.
const users = new Map<string, LoginUser>();
const credentials = passwordCredentials({
  findUser: (name) => users.get(name),
  passwordEncoder: createPasswordEncoder(),
  // Failed sign-ins are counted in Redis, so every instance spends the same budget.
  throttle: { store: new RedisLoginAttemptStore({ client: redis }) },
});

const app = new Hono();
app.get("/", (c) => c.json({ hello: mustAuthentication(c).name }));

// Every instance behind the load balancer runs this same chain on the same Redis.
const handler = newHandler(app.fetch, {
  clientAddress: nodeServerClientAddress,
  rateLimit: rateLimit({
    rules: [{ name: "api", limit: 100, windowMs: 60_000 }],
    store: new RedisRateLimitStore({ client: redis }),
  }),
  session: sessions({
    secure: process.env.NODE_ENV === "production",
    store: new RedisSessionStore({ client: redis }),
  }),
  login: login({ credentials }),
  authorization: authz.routes([authz.anyRequest().authenticated()]),
});

const port = Number(process.env.PORT ?? 3000);
serve({ fetch: handler, hostname: "127.0.0.1", port });
console.log(`listening on http://127.0.0.1:${port}/`);
