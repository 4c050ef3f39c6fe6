/**
 * Capability-token costs, side by side in one process: our verifier and the
 * whole execute endpoint against raw `jose.jwtVerify` of the same tokens with
 * the same key and algorithm. Every run gives each contender the same fresh
 * tokens; execute consumes them (each is single-use).
 */
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import * as dpop from "dpop";
import { generateKeyPair, jwtVerify } from "jose";
import pg from "pg";
import {
  authz,
  basicAuth,
  createPasswordEncoder,
  csrf,
  type Handler,
  login,
  newHandler,
  passwordCredentials,
  sessions,
} from "portcullis";
import { agentAuth, CAPABILITY_TOKEN_TYPE } from "portcullis/agentauth";
import { importKeySet, jwtVerifier } from "portcullis/jwt";
import { mcpEndpoint } from "portcullis/mcp";
import { MemoryClientStore } from "portcullis/oauth2";
import { migrate, PostgresGrantStore, PostgresReplayStore } from "portcullis/stores/postgres";
import { RedisGrantStore, RedisReplayStore } from "portcullis/stores/redis";
import { createClient } from "redis";

const ISSUER = "https://bench.example";
const EXECUTE = `${ISSUER}/capability/execute`;
const RUNS = 7;
const PER_RUN = 4_000;
const IN_FLIGHT = 16;

type Operation = (i: number) => Promise<unknown>;
/** Builds a contender's operation over this run's tokens (untimed), then it is timed. */
type Contender = readonly [name: string, prepare: (tokens: readonly string[]) => Operation];

/** Operations a second, and the process's CPU time (every thread) per operation in µs. */
async function rate(operation: Operation, iterations: number): Promise<[number, number]> {
  let next = 0;
  const worker = async () => {
    while (next < iterations) await operation(next++);
  };
  const cpu = process.cpuUsage();
  const start = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const used = process.cpuUsage(cpu);
  return [
    iterations / ((performance.now() - start) / 1000),
    (used.user + used.system) / iterations,
  ];
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1] as number;
}

/** A goal: the contender at `index`, its ratio to the first contender, at least `target`. */
type Goal = readonly [label: string, index: number, target: number];

/**
 * Runs the contenders interleaved and prints each one's throughput and CPU
 * time per operation beside the first contender's (ratios: the first's cost
 * over this one's), then each goal's figure beside its target.
 */
async function sideBySide(
  title: string,
  mint: (count: number) => Promise<string[]>,
  contenders: readonly Contender[],
  goals: readonly Goal[] = [],
): Promise<void> {
  const warm = await mint(500);
  for (const [, prepare] of contenders) await rate(prepare(warm), warm.length);
  const samples = contenders.map(() => [] as number[]);
  const cpuSamples = contenders.map(() => [] as number[]);
  // Ratios per run, to the first contender of the same run: steadier than ratios of medians.
  const ratioSamples = contenders.map(() => [] as number[]);
  const cpuRatioSamples = contenders.map(() => [] as number[]);
  for (let run = 0; run < RUNS; run++) {
    const tokens = await mint(PER_RUN);
    const runOps: number[] = [];
    const runCpu: number[] = [];
    for (let c = 0; c < contenders.length; c++) {
      const operation = (contenders[c] as Contender)[1](tokens);
      const [ops, cpu] = await rate(operation, tokens.length);
      runOps.push(ops);
      runCpu.push(cpu);
      samples[c]?.push(ops);
      cpuSamples[c]?.push(cpu);
    }
    for (let c = 0; c < contenders.length; c++) {
      ratioSamples[c]?.push((runOps[c] as number) / (runOps[0] as number));
      cpuRatioSamples[c]?.push((runCpu[0] as number) / (runCpu[c] as number));
    }
  }
  const medians = samples.map(median);
  const cpus = cpuSamples.map(median);
  const ratios = ratioSamples.map(median);
  const cpuRatios = cpuRatioSamples.map(median);
  console.log(`\n${title}`);
  console.log(
    `${"contender".padEnd(52)} ${"ops/s".padStart(9)} ${"µs/op".padStart(8)} ${"ratio".padStart(7)} ${"CPU µs/op".padStart(10)} ${"CPU ratio".padStart(10)}`,
  );
  contenders.forEach(([name], c) => {
    const ops = medians[c] as number;
    console.log(
      `${name.padEnd(52)} ${Math.round(ops).toString().padStart(9)} ${(1e6 / ops).toFixed(2).padStart(8)} ${(ratios[c] as number).toFixed(3).padStart(7)} ${(cpus[c] as number).toFixed(1).padStart(10)} ${(cpuRatios[c] as number).toFixed(3).padStart(10)}`,
    );
  });
  if (goals.length === 0) return;
  console.log(
    `${"goal (ratio to the first line)".padEnd(52)} ${"target".padStart(9)} ${"ops/s".padStart(8)} ${"CPU".padStart(7)}`,
  );
  for (const [label, index, target] of goals)
    console.log(
      `${label.padEnd(52)} ${`>= ${target}`.padStart(9)} ${(ratios[index] as number).toFixed(3).padStart(8)} ${(cpuRatios[index] as number).toFixed(3).padStart(7)}`,
    );
}

/** An agentAuth with one trivial capability and one active grant for "agent-1". */
async function benchAgents(
  keys: Awaited<ReturnType<typeof importKeySet>>,
  stores?: Parameters<typeof agentAuth>[0]["stores"],
  dpopOptions?: Parameters<typeof agentAuth>[0]["dpop"],
) {
  const agents = await agentAuth({
    ...(dpopOptions === undefined ? {} : { dpop: dpopOptions }),
    issuer: ISSUER,
    clients: new MemoryClientStore(),
    keys,
    tokenTtlSeconds: 3600,
    capabilities: [{ name: "ping", description: "Answers pong.", handler: () => "pong" }],
    mcp: {},
    ...(stores === undefined ? {} : { stores }),
  });
  await agents.runtime.grants.approve(
    {
      grantId: "g1",
      principalId: "agent-1",
      status: "active",
      capabilities: ["ping"],
      approvedBy: "alice",
      createdAt: Date.now(),
      expiresAt: Date.now() + 86_400_000,
    },
    { perApprover: 100, perPrincipal: 10_000 },
  );
  return agents;
}

/** `count` fresh capability tokens for the bench grant, for execute or for `audience`. */
async function mintTokens(
  agents: Awaited<ReturnType<typeof benchAgents>>,
  count: number,
  audience?: string,
): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    const minted = await agents.runtime.tokens.mint({
      principalId: "agent-1",
      grantId: "g1",
      capabilities: ["ping"],
      ...(audience === undefined ? {} : { audience }),
    });
    tokens.push(minted.token);
  }
  return tokens;
}

/** `setting` names the Request/Response classes in use, for the table titles. */
export async function agentBenchmarks(setting = "Node's own Request and Response"): Promise<void> {
  console.log(`\ncapability tokens, with ${setting}`);
  for (const alg of ["EdDSA", "ES256"] as const) {
    const { publicKey, privateKey } = await generateKeyPair(alg);
    const keys = await importKeySet({ keys: [{ kid: "k1", alg, privateKey, publicKey }] });
    const agents = await benchAgents(keys);
    const mint = (count: number) => mintTokens(agents, count);
    const options = {
      algorithms: [alg],
      issuer: ISSUER,
      audience: EXECUTE,
      typ: CAPABILITY_TOKEN_TYPE,
    };
    const verify = jwtVerifier({ keys, typ: CAPABILITY_TOKEN_TYPE, issuer: ISSUER });
    const body = JSON.stringify({ capability: "ping" });
    // Its own instance (and replay store): execute spends each token before the quick start sees it.
    const quickStart = await quickStartHandler(await benchAgents(keys));
    // Tokens issued within the partial second it was made in would predate its replay store.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await sideBySide(
      `${alg} (median of ${RUNS} interleaved runs of ${PER_RUN}, ${IN_FLIGHT} in flight)`,
      mint,
      [
        [
          "raw jose.jwtVerify",
          (tokens) => (i) => jwtVerify(tokens[i] as string, publicKey, options),
        ],
        [
          "portcullis/jwt jwtVerifier (target >= 0.9)",
          (tokens) => (i) => verify(tokens[i] as string, { audience: EXECUTE }),
        ],
        [
          "floor: jose verify + read body + build a Response",
          // What any Fetch handler that verifies a bearer token pays at least.
          (tokens) => {
            const requests = tokens.map((token) => executeRequest(token, body));
            return async (i) => {
              const request = requests[i] as Request;
              const token = (request.headers.get("authorization") as string).slice(7);
              await jwtVerify(token, publicKey, options);
              JSON.parse(await request.text());
              return new Response('{"data":"pong"}', {
                headers: { "content-type": "application/json" },
              });
            };
          },
        ],
        [
          "agentauth execute, memory stores (target >= 0.8)",
          // The requests are built untimed, as a server adapter hands them over;
          // execute reads the body, verifies, consumes the jti, loads the grant,
          // runs the handler and builds the response.
          (tokens) => {
            const requests = tokens.map((token) => executeRequest(token, body));
            return async (i) => {
              const response = await agents.execute(requests[i] as Request);
              if (response.status !== 200) throw new Error(`execute answered ${response.status}`);
            };
          },
        ],
        [
          "agents quick start: newHandler(router), then execute",
          (tokens) => {
            const requests = tokens.map((token) => executeRequest(token, body));
            return async (i) => {
              const response = await quickStart(requests[i] as Request);
              if (response.status !== 200)
                throw new Error(`quick start answered ${response.status}`);
            };
          },
        ],
      ],
      [
        ["execute / raw jose.jwtVerify", 3, 0.8],
        ["quick start path / raw jose.jwtVerify", 4, 0.6],
      ],
    );
  }
}

/**
 * Execute with a DPoP-bound token and its proof (RFC 9449) beside execute with
 * a bearer token and beside raw `jose.jwtVerify`, in one run: what sender
 * constraint costs (a second signature check, the proof's id recorded). Proofs
 * are made untimed, as a client makes them.
 */
export async function dpopBenchmarks(): Promise<void> {
  console.log("\nDPoP-bound capability tokens (execute, memory stores)");
  for (const alg of ["EdDSA", "ES256"] as const) {
    const { publicKey, privateKey } = await generateKeyPair(alg);
    const keys = await importKeySet({ keys: [{ kid: "k1", alg, privateKey, publicKey }] });
    const bearer = await benchAgents(keys);
    const bound = await benchAgents(keys, undefined, {});
    const holder = await dpop.generateKeyPair(alg === "EdDSA" ? "Ed25519" : "ES256");
    const jkt = await dpop.calculateThumbprint(holder.publicKey);
    // Each bound token with its proof, and a bearer token of the same grant.
    const pairs = new Map<string, { proof: string; bearerToken: string }>();
    const mint = async (count: number) => {
      const tokens: string[] = [];
      for (let i = 0; i < count; i++) {
        const base = { principalId: "agent-1", grantId: "g1", capabilities: ["ping"] };
        const { token } = await bound.runtime.tokens.mint({ ...base, jkt });
        const proof = await dpop.generateProof(holder, EXECUTE, "POST", undefined, token);
        const bearerToken = (await bearer.runtime.tokens.mint(base)).token;
        pairs.set(token, { proof, bearerToken });
        tokens.push(token);
      }
      return tokens;
    };
    const options = {
      algorithms: [alg],
      issuer: ISSUER,
      audience: EXECUTE,
      typ: CAPABILITY_TOKEN_TYPE,
    };
    const body = JSON.stringify({ capability: "ping" });
    const run =
      (handler: (request: Request) => Promise<Response>, requests: Request[]) =>
      async (i: number) => {
        const response = await handler(requests[i] as Request);
        if (response.status !== 200) throw new Error(`execute answered ${response.status}`);
      };
    await sideBySide(
      `${alg} (median of ${RUNS} interleaved runs of ${PER_RUN}, ${IN_FLIGHT} in flight)`,
      mint,
      [
        [
          "raw jose.jwtVerify",
          (tokens) => (i) => jwtVerify(tokens[i] as string, publicKey, options),
        ],
        [
          "agentauth execute, Bearer",
          (tokens) =>
            run(
              bearer.execute,
              tokens.map((token) => executeRequest(pairs.get(token)?.bearerToken as string, body)),
            ),
        ],
        [
          "agentauth execute, DPoP-bound token and proof",
          (tokens) =>
            run(
              bound.execute,
              tokens.map((token) => {
                const request = executeRequest(token, body, "DPoP");
                request.headers.set("dpop", pairs.get(token)?.proof as string);
                return request;
              }),
            ),
        ],
      ],
    );
    pairs.clear();
  }
}

/**
 * An MCP `tools/call` beside execute and raw `jose.jwtVerify`, in one run: the
 * same token check, grant read and handler, with the MCP SDK's server parsing
 * and answering JSON-RPC around it. Each call gets a fresh token, as execute
 * does, though tokens for the MCP endpoint could be reused.
 */
export async function mcpBenchmarks(): Promise<void> {
  const alg = "EdDSA";
  const { publicKey, privateKey } = await generateKeyPair(alg);
  const keys = await importKeySet({ keys: [{ kid: "k1", alg, privateKey, publicKey }] });
  const agents = await benchAgents(keys);
  const mcp = await mcpEndpoint(agents);
  const options = { algorithms: [alg], issuer: ISSUER, typ: CAPABILITY_TOKEN_TYPE };
  const body = JSON.stringify({ capability: "ping" });
  const call = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "ping", arguments: {} },
  });
  const bareSdk = createMcpHandler(() => {
    const server = new McpServer({ name: "bench", version: "1.0.0" });
    server.registerTool("ping", { description: "Answers pong." }, () => ({
      content: [{ type: "text", text: '"pong"' }],
    }));
    return server;
  });
  // Tokens for the MCP endpoint are reused until they expire: one pool, each verified every call.
  const mcpTokens = await mintTokens(agents, PER_RUN, mcp.url);
  const toolsCall = (token: string) =>
    new Request(mcp.url, {
      method: "POST",
      headers: {
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2025-11-25",
        authorization: `Bearer ${token}`,
      },
      body: call,
    });
  await sideBySide(
    `MCP tools/call, ${alg} (median of ${RUNS} interleaved runs of ${PER_RUN}, ${IN_FLIGHT} in flight)`,
    (count) => mintTokens(agents, count),
    [
      [
        "raw jose.jwtVerify",
        (tokens) => (i) =>
          jwtVerify(tokens[i] as string, publicKey, { ...options, audience: EXECUTE }),
      ],
      [
        "agentauth execute, memory stores",
        (tokens) => {
          const requests = tokens.map((token) => executeRequest(token, body));
          return async (i) => {
            const response = await agents.execute(requests[i] as Request);
            if (response.status !== 200) throw new Error(`execute answered ${response.status}`);
          };
        },
      ],
      [
        // The floor of any tools/call served by the SDK: its own server and transport per request.
        "floor: the MCP SDK alone (no authentication)",
        (tokens) => {
          const requests = tokens.map((_, i) =>
            toolsCall(mcpTokens[i % mcpTokens.length] as string),
          );
          return async (i) => {
            const response = await bareSdk.fetch(requests[i] as Request);
            if (response.status !== 200) throw new Error(`bare SDK answered ${response.status}`);
            await response.text();
          };
        },
      ],
      [
        "mcp tools/call, memory stores (target >= 0.7 of execute)",
        (tokens) => {
          // Built untimed, as a server adapter hands them over.
          const requests = tokens.map((_, i) =>
            toolsCall(mcpTokens[i % mcpTokens.length] as string),
          );
          return async (i) => {
            const response = await mcp.handler(requests[i] as Request);
            if (response.status !== 200) throw new Error(`tools/call answered ${response.status}`);
            await response.text();
          };
        },
      ],
    ],
  );
}

/**
 * The agents quick start's chain (docs/11-agents.md) around its router: the
 * sessions, CSRF, login, the agents' authenticator and Basic, the rules; the
 * router answers the MCP endpoint, then the agent endpoints.
 */
async function quickStartHandler(
  agents: Awaited<ReturnType<typeof benchAgents>>,
): Promise<Handler> {
  const mcp = await mcpEndpoint(agents);
  const credentials = passwordCredentials({
    findUser: () => undefined,
    passwordEncoder: createPasswordEncoder(),
  });
  const router = async (request: Request): Promise<Response> =>
    (await mcp.route(request)) ?? new Response("not found", { status: 404 });
  return newHandler(router, {
    clientAddress: () => "127.0.0.1",
    session: sessions({ secure: false }),
    csrf: csrf(),
    login: login({ credentials, failureRedirect: "/login?error" }),
    browserDenials: { signInPath: "/login" },
    authentication: [agents.authenticator, basicAuth({ credentials, required: false })],
    authorization: authz.routes([
      authz.match("GET", "/login").permitAll(),
      authz.match("GET", "/.well-known/agent-configuration").permitAll(),
      authz.match("GET", "/.well-known/oauth-authorization-server").permitAll(),
      authz.match("GET", "/.well-known/jwks.json").permitAll(),
      authz.match("GET", "/.well-known/oauth-protected-resource/**").permitAll(),
      authz.match("POST", "/oauth/device_authorization").permitAll(),
      authz.match("POST", "/oauth/token").permitAll(),
      authz.match("GET", "/capability/list").permitAll(),
      authz.match("POST", "/capability/execute").permitAll(),
      authz.match(["POST", "GET", "DELETE"], "/mcp").permitAll(),
      authz.match(["GET", "POST"], "/agent/approve").authenticated(),
      authz.match("POST", "/agent/review").authenticated(),
    ]),
  });
}

function executeRequest(token: string, body: string, scheme = "Bearer"): Request {
  return new Request(EXECUTE, {
    method: "POST",
    headers: { authorization: `${scheme} ${token}`, "content-type": "application/json" },
    body,
  });
}

/** Execute with each kind of store, side by side: the price of sharing replay and grants. */
export async function storeBenchmarks(): Promise<void> {
  const { publicKey, privateKey } = await generateKeyPair("EdDSA");
  const keys = await importKeySet({ keys: [{ kid: "k1", alg: "EdDSA", privateKey, publicKey }] });
  const redis = createClient({ url: process.env.PORTCULLIS_REDIS_URL ?? "redis://127.0.0.1:6379" });
  await redis.connect();
  const schema = `portcullis_bench_${crypto.randomUUID().replace(/-/g, "")}`;
  const pool = new pg.Pool({
    connectionString: process.env.PORTCULLIS_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test",
    options: `-c search_path=${schema}`,
    max: IN_FLIGHT,
  });
  await pool.query(`CREATE SCHEMA ${schema}`);
  await migrate(pool);
  const prefix = `portcullis-bench:${crypto.randomUUID()}:`;
  const memory = await benchAgents(keys);
  const onRedis = await benchAgents(keys, {
    grants: new RedisGrantStore({ client: redis, prefix: `${prefix}grant:` }),
    replay: new RedisReplayStore({ client: redis, prefix: `${prefix}jti:` }),
  });
  const onPostgres = await benchAgents(keys, {
    grants: new PostgresGrantStore({ pool }),
    replay: new PostgresReplayStore({ pool }),
  });
  const mint = (count: number) => mintTokens(memory, count);
  const body = JSON.stringify({ capability: "ping" });
  const options = {
    algorithms: ["EdDSA"],
    issuer: ISSUER,
    audience: EXECUTE,
    typ: CAPABILITY_TOKEN_TYPE,
  };
  const executeOn =
    (agents: typeof memory): Contender[1] =>
    (tokens) => {
      const requests = tokens.map((token) => executeRequest(token, body));
      return async (i) => {
        const response = await agents.execute(requests[i] as Request);
        if (response.status !== 200) throw new Error(`execute answered ${response.status}`);
      };
    };
  try {
    await sideBySide(
      `execute by store, EdDSA (median of ${RUNS} interleaved runs of ${PER_RUN}, ${IN_FLIGHT} in flight)`,
      mint,
      [
        [
          "raw jose.jwtVerify",
          (tokens) => (i) => jwtVerify(tokens[i] as string, publicKey, options),
        ],
        ["execute, memory stores", executeOn(memory)],
        ["execute, Redis replay + grants", executeOn(onRedis)],
        ["execute, PostgreSQL replay + grants", executeOn(onPostgres)],
      ],
    );
  } finally {
    const keysLeft = await redis.keys(`${prefix}*`);
    if (keysLeft.length > 0) await redis.del(keysLeft);
    await redis.quit();
    await pool.query(`DROP SCHEMA ${schema} CASCADE`);
    await pool.end();
  }
}
