// One soak target: the full chain on node:http, configured from the environment.
// Started by soak/run.ts as a child process (two of them where a store is shared).
import { createServer } from "node:http";
import { createClient } from "redis";
import { nodeListener } from "../src/adapters/node/index.ts";
import {
  authz,
  createPasswordEncoder,
  login,
  MemoryRateLimitStore,
  MemorySessionStore,
  mustAuthentication,
  newChain,
  type PasswordEncoder,
  passwordCredentials,
  rateLimit,
  sessions,
} from "../src/index.ts";
import { RedisLoginAttemptStore, RedisSessionStore } from "../src/stores/redis/index.ts";

const env = process.env;
const kind = env.SOAK_STORE ?? "memory";
const prefix = env.SOAK_PREFIX ?? "soak:";

let checks = 0;
const base = createPasswordEncoder({ logN: 10 });
// Counts password verifications: the figure the login throttle must bound.
const encoder: PasswordEncoder = {
  hash: (password) => base.hash(password),
  verify: (password, encoded) => {
    checks++;
    return base.verify(password, encoded);
  },
  needsRehash: (encoded) => base.needsRehash(encoded),
};
const alice = { name: "alice", authorities: ["USER"], passwordHash: await encoder.hash("right") };

let redis: ReturnType<typeof createClient> | undefined;
if (kind === "redis") {
  redis = createClient({ url: env.SOAK_REDIS_URL ?? "redis://127.0.0.1:6379" });
  // No error listener of our own: the stores must keep a Redis outage from ending the process.
  await redis.connect();
}

const sessionStore = redis
  ? new RedisSessionStore({ client: redis, prefix: `${prefix}session:` })
  : new MemorySessionStore();
const attemptStore = redis
  ? new RedisLoginAttemptStore({ client: redis, prefix: `${prefix}login:` })
  : undefined;

const chain = newChain({
  trustProxy: 1,
  rateLimit: rateLimit({
    rules: [{ name: "ping", match: "/soak/ping", limit: 1_000_000, windowMs: 600_000 }],
    store: new MemoryRateLimitStore({ maxEntries: Number(env.SOAK_RATE_MAX ?? 1000) }),
  }),
  session: sessions({
    secure: false,
    store: sessionStore,
  }),
  login: login({
    credentials: passwordCredentials({
      findUser: (name) => (name === "alice" ? alice : undefined),
      passwordEncoder: encoder,
      ...(attemptStore ? { throttle: { store: attemptStore } } : {}),
    }),
  }),
  authorization: authz.routes([
    authz.match("GET", "/soak/**").permitAll(),
    authz.match("GET", "/me").authenticated(),
  ]),
  onError: () => {},
});

const server = createServer(
  nodeListener(chain, (req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    res.setHeader("content-type", "application/json");
    if (path === "/soak/stats") {
      res.end(JSON.stringify({ checks }));
    } else if (path === "/soak/ping") res.end("{}");
    else if (path === "/me") res.end(JSON.stringify({ name: mustAuthentication(req).name }));
    else {
      res.statusCode = 404;
      res.end("{}");
    }
  }),
);
server.listen(Number(env.PORT ?? 0), "127.0.0.1", () => {
  const address = server.address();
  console.log(`soak-server ${typeof address === "object" && address ? address.port : ""}`);
});
