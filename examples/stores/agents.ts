import pg from "pg";
import { agentAuth } from "portcullis/agentauth";
import { importKeySet } from "portcullis/jwt";
import { MemoryClientStore } from "portcullis/oauth2";
import { migrate, PostgresGrantStore, PostgresReplayStore } from "portcullis/stores/postgres";
import {
  createRedisClient,
  RedisDeviceCodeStore,
  RedisLoginAttemptStore,
  RedisPendingRequestStore,
} from "portcullis/stores/redis";

const { REDIS_URL, DATABASE_URL, ISSUER, SIGNING_JWK, RESEARCH_KEY } = process.env;
if (!REDIS_URL || !DATABASE_URL || !ISSUER || !SIGNING_JWK || !RESEARCH_KEY)
  throw new Error("set REDIS_URL, DATABASE_URL, ISSUER, SIGNING_JWK and RESEARCH_KEY");

const redis = createRedisClient(REDIS_URL); // survives Redis outages (see Redis stores)
redis.connect().catch(() => {}); // requests answer 503 until Redis is up
const pool = new pg.Pool({
  connectionString: DATABASE_URL,
  connectionTimeoutMillis: 1000,
  query_timeout: 1000,
});
pool.on("error", () => {}); // a broken idle connection must not end the process
await migrate(pool); // or: psql -f node_modules/portcullis/src/stores/postgres/migration.sql

// The agents' credentials: a shared ClientStore of your own in production.
const clients = new MemoryClientStore();
await clients.register({ clientId: "key_research", kind: "api_key", secret: RESEARCH_KEY });

/** The agent endpoints: mount `agents.route` behind the chain, as in the agents quick start. */
export const agents = await agentAuth({
  issuer: ISSUER, // the same public URL on every instance
  clients,
  capabilities: [
    {
      name: "get_time",
      description: "Tells the time.",
      handler: () => ({ now: new Date().toISOString() }),
    },
  ],
  // The same signing key on every instance: an Ed25519 private JWK (it holds its public half).
  keys: await importKeySet({
    keys: [{ kid: "2026-01", alg: "EdDSA", privateKey: JSON.parse(SIGNING_JWK) }],
  }),
  stores: {
    grants: new PostgresGrantStore({ pool }),
    replay: new PostgresReplayStore({ pool }),
    deviceCodes: new RedisDeviceCodeStore({ client: redis }),
    pending: new RedisPendingRequestStore({ client: redis }),
    userCodeAttempts: new RedisLoginAttemptStore({
      client: redis,
      prefix: "portcullis:usercodes:",
    }),
  },
});
