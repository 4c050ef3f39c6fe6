/**
 * Over the socket, measured honestly: each contender (bench/servers.ts) is a
 * real server in a process of its own pinned to one core, loaded by `wrk` in
 * a process of its own pinned to the other, so the load generator never
 * takes the server's CPU. Rounds are interleaved (every contender once per
 * round), so drift in the machine hits all alike; each figure is the median
 * of the rounds, with their spread. Beside requests per second, the server's
 * CPU time per request (user + system, from /proc) shows what a request costs
 * whatever the load generator manages. `BENCH_MODE=instructions` counts
 * instructions per request with callgrind instead: slow, but free of noise.
 *
 * Environment: BENCH_SOCKET_ROUNDS (7), BENCH_SOCKET_SECONDS (5),
 * BENCH_CONNECTIONS (16), BENCH_CONTENDERS (comma-separated names),
 * BENCH_DIST_DIR and BENCH_PREBUILT=1 (measure a build made elsewhere), BENCH_CORE,
 * BENCH_MODE (`throughput` | `instructions`), BENCH_REQUESTS (instructions
 * mode: measured requests, 6000: fewer let one garbage collection sway the count),
 * BENCH_NODE_FLAGS (more flags for the servers' node: `--no-concurrent-recompilation`
 * compiles hot functions on the main thread during the warm-up, so a machine busy with other
 * work cannot leave some of them unoptimized when counting starts; for comparing two builds).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { goalContenders, printGoals } from "./goals.ts";
import { PATH, profileHeaders, sendInSequence, signInCookie } from "./profiles.ts";
import { CONTENDER_NAMES, isContender, signsIn, variantOf } from "./servers.ts";

/** Instructions by callgrind: asked for, or the default when valgrind is there and wrk is not. */
const byInstructions = () =>
  process.env.BENCH_MODE === "instructions" ||
  (process.env.BENCH_MODE === undefined && have("valgrind") && !have("wrk"));

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SERVERS = fileURLToPath(new URL("servers.ts", import.meta.url));
/** Portcullis as published: compiled by tsc, not transpiled on the fly, like the peer stacks. */
const DIST =
  process.env.BENCH_DIST_DIR ?? join(ROOT, "node_modules", ".cache", "portcullis-bench-dist");
const CLK_TCK =
  Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;

const LABELS: Record<string, string> = {
  "bare-node": "bare node:http",
  "bare-express": "bare Express",
  "bare-fastify": "bare Fastify",
  "bare-koa": "bare Koa",
  "bare-hono": "bare Hono on @hono/node-server",
  "bare-fetch-hono-server": "bare Fetch handler on @hono/node-server",
  "bare-fetch-servefetch": "bare Fetch handler on serveFetch",
  "bare-fetch-servefetch-native": "bare Fetch handler on serveFetch, lightResponses: false",
  "portcullis-node": "Portcullis full chain on nodeListener",
  "portcullis-servefetch": "Portcullis full chain on serveFetch",
  "portcullis-servefetch-native": "Portcullis full chain on serveFetch, lightResponses: false",
  "portcullis-express": "Portcullis full chain on Express",
  "portcullis-fastify": "Portcullis full chain on Fastify",
  "portcullis-koa": "Portcullis full chain on Koa",
  "portcullis-hono": "Portcullis full chain on Hono (@hono/node-server)",
  "by-hand-node": "the same work by hand on node:http (reference)",
  "by-hand-express": "the same work by hand as Express middleware (reference)",
  "by-hand-servefetch": "the same work by hand before a Fetch handler on serveFetch (reference)",
  "by-hand-fetch-hono-server":
    "the same work by hand before a Fetch handler on @hono/node-server (Fetch-shaped reference)",
  "by-hand-fastify": "the same work by hand as a Fastify hook (reference)",
  "by-hand-koa": "the same work by hand as Koa middleware (reference)",
  "by-hand-hono": "the same work by hand as Hono middleware (reference)",
  "express-stack": "Express + helmet, cors, rate-limit, session, csrf-csrf",
  "fastify-stack": "Fastify + @fastify/helmet, cors, rate-limit, session, csrf",
  "hono-stack": "Hono + secure-headers, cors, rate-limiter, cookie session, csrf",
};

/** A contender's label: its server's, with the legs it runs and the profile it is sent. */
export function label(name: string): string {
  const [head = "", profile] = name.split("@");
  const [base = "", leg] = head.split(":");
  const legs = leg === undefined ? "" : leg === "empty" ? ", no legs" : `, ${leg} only`;
  return `${LABELS[base] ?? base}${legs}${profile === undefined ? "" : ` [${profile}]`}`;
}

/** Stacks, and chains that sign users in: checked for 401 without credentials. */
const GUARDED = (name: string) => {
  const { base, variant } = variantOf(name);
  if (base.startsWith("bare-")) return false;
  return base.endsWith("-stack") || signsIn(variant);
};
/** Whether the contender sets the security headers, checked once. */
const HEADERS = (name: string) => {
  const { base, variant } = variantOf(name);
  return !base.startsWith("bare-") && (base.endsWith("-stack") || variant.legs.has("headers"));
};
/** The profile a contender is sent: `@api` names get the API client's. */
const PROFILE = (name: string) => variantOf(name).variant.profile;
/** A session cookie's length for contenders with no sessions, so every request is as long. */
const NO_SESSION_COOKIE = "sid=k2JbX9qR4mT7vW1yZ3aC6eG8iL0nP5sU2xA4cE7gH9j";

function compile(): void {
  const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
  rmSync(DIST, { recursive: true, force: true });
  const result = spawnSync(
    process.execPath,
    [tsc, "-p", join(ROOT, "tsconfig.build.json"), "--outDir", DIST].concat([
      "--declaration",
      "false",
      "--declarationMap",
      "false",
      "--sourceMap",
      "false",
    ]),
    { encoding: "utf8" },
  );
  if (!existsSync(join(DIST, "index.js")))
    throw new Error(`tsc produced no build:\n${result.stdout}${result.stderr}`);
}

function have(command: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${command}`]).status === 0;
}

interface Running {
  readonly name: string;
  readonly child: ChildProcess;
  readonly port: number;
  readonly cookie: string;
}

/** Starts `name` pinned to `core`, optionally under a wrapper command (valgrind). */
async function start(name: string, core: string, wrapper: string[] = []): Promise<Running> {
  core = process.env.BENCH_CORE ?? core;
  const flags = (process.env.BENCH_NODE_FLAGS ?? "").split(" ").filter((flag) => flag !== "");
  const command = [
    ...wrapper,
    process.execPath,
    "--expose-gc",
    ...flags,
    "--import",
    "tsx",
    SERVERS,
    name,
  ];
  const child = spawn("taskset", ["-c", core, ...command], {
    cwd: ROOT,
    env: { ...process.env, PORTCULLIS_BENCH_DIST: DIST, NODE_ENV: "production" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = /PORT (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`${name} exited with ${code}`)));
  });
  try {
    return { name, child, port, cookie: await check(name, port) };
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
}

/** Signs in, checks the contender once, and answers its session cookie. */
async function check(name: string, port: number): Promise<string> {
  const url = `http://127.0.0.1:${port}`;
  const profile = PROFILE(name);
  let cookie = profile === "browser" ? NO_SESSION_COOKIE : "";
  if (GUARDED(name) && profile === "browser") {
    // A same-site sign-in: no Origin, which every CSRF defence here lets through.
    cookie = await signInCookie(url, name);
  }
  if (GUARDED(name)) {
    const { authorization: _, ...anonymously } = profileHeaders(profile, "");
    const anonymous = await fetch(`${url}${PATH}`, { headers: anonymously });
    if (anonymous.status !== 401)
      throw new Error(`${name}: ${PATH} without credentials answered ${anonymous.status}, not 401`);
  }
  const probe = await fetch(`${url}${PATH}`, { headers: profileHeaders(profile, cookie) });
  if (probe.status !== 200 || (await probe.text()) !== "ok")
    throw new Error(`${name}: ${PATH} answered ${probe.status}`);
  if (HEADERS(name) && probe.headers.get("x-content-type-options") !== "nosniff")
    throw new Error(`${name}: ${PATH} came without its security headers`);
  return cookie;
}

function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return Number(fields[11]) + Number(fields[12]); // utime + stime
}

interface Sample {
  readonly rate: number;
  readonly cpuMicros: number;
}

function wrk(target: Running, seconds: number, connections: number): Sample {
  const pid = target.child.pid as number;
  const before = cpuTicks(pid);
  const args = ["-c", "0", "wrk", "-t1", `-c${connections}`, `-d${seconds}s`];
  for (const [field, value] of Object.entries(profileHeaders(PROFILE(target.name), target.cookie)))
    args.push("-H", `${field}: ${value}`);
  args.push(`http://127.0.0.1:${target.port}${PATH}`);
  const result = spawnSync("taskset", args, { encoding: "utf8" });
  const after = cpuTicks(pid);
  const out = result.stdout;
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? Number.NaN);
  const rate = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
  if (!Number.isFinite(requests) || !Number.isFinite(rate))
    throw new Error(`${target.name}: wrk printed no figures:\n${out}${result.stderr}`);
  const bad = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
  const errors = /Socket errors: (.*)/.exec(out)?.[1];
  if (bad !== undefined || errors !== undefined)
    throw new Error(
      `${target.name}: ${bad ?? 0} non-2xx answers, socket errors: ${errors ?? "none"}`,
    );
  return { rate, cpuMicros: ((after - before) * 1e6) / CLK_TCK / requests };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const fmt = (value: number, digits = 0) =>
  value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

function contenders(): string[] {
  const chosen = process.env.BENCH_CONTENDERS?.split(",").filter((name) => name !== "");
  const names =
    chosen === undefined || chosen.length === 0
      ? byInstructions()
        ? goalContenders()
        : [...CONTENDER_NAMES]
      : chosen;
  for (const name of names) if (!isContender(name)) throw new Error(`no contender ${name}`);
  if (!names.includes("bare-node")) names.unshift("bare-node");
  return names;
}

/** The order contenders run in within a round: each next to what its ratios compare it with. */
const RUN_ORDER = [
  "portcullis-servefetch",
  "bare-fetch-servefetch",
  "bare-node",
  "portcullis-node",
  "by-hand-node",
  "bare-fetch-hono-server",
  "bare-fetch-servefetch-native",
  "portcullis-servefetch-native",
  "portcullis-koa",
  "by-hand-express",
  "bare-express",
  "express-stack",
  "portcullis-express",
  "portcullis-fastify",
  "fastify-stack",
  "bare-fastify",
  "bare-hono",
  "hono-stack",
  "portcullis-hono",
];

function runPosition(name: string): number {
  const at = RUN_ORDER.indexOf(name);
  return at < 0 ? RUN_ORDER.length : at;
}

/** Ratio lines for the targets the project holds itself to. */
function targets(
  ratio: (name: string, to: string) => string | undefined,
  title = "targets (median ratio [spread over rounds])",
  byInstructions = false,
): void {
  const rows: [string, string, string, number][] = [
    // By instructions the goal for nodeListener is stricter than by requests/s.
    [
      "full chain on nodeListener / bare node:http",
      "portcullis-node",
      "bare-node",
      byInstructions ? 0.45 : 0.4,
    ],
    ["full chain on serveFetch / bare node:http", "portcullis-servefetch", "bare-node", 0.35],
    ["bare Fetch on serveFetch / bare node:http", "bare-fetch-servefetch", "bare-node", 0.85],
    ["full chain on Express / Express stack", "portcullis-express", "express-stack", 2.5],
    ["full chain on Fastify / Fastify stack", "portcullis-fastify", "fastify-stack", 2.5],
    ["full chain on Hono / Hono stack", "portcullis-hono", "hono-stack", 2.5],
  ];
  console.log(`\n${title}`);
  for (const [label, name, to, goal] of rows) {
    const value = ratio(name, to);
    if (value !== undefined) console.log(`  ${label.padEnd(46)} ${value}   (target >= ${goal})`);
  }
  // What the same work costs with no library at all: the ceiling for the targets above.
  const references: [string, string, string][] = [
    ["by hand on node:http / bare node:http", "by-hand-node", "bare-node"],
    ["by hand in Express / Express stack", "by-hand-express", "express-stack"],
    ["bare Express / Express stack", "bare-express", "express-stack"],
  ];
  for (const [label, name, to] of references) {
    const value = ratio(name, to);
    if (value !== undefined)
      console.log(`  ${label.padEnd(46)} ${value}   (reference: no library)`);
  }
}

async function throughput(): Promise<void> {
  const rounds = Number(process.env.BENCH_SOCKET_ROUNDS ?? 7);
  const seconds = Number(process.env.BENCH_SOCKET_SECONDS ?? 5);
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);
  const names = contenders();
  const running: Running[] = [];
  try {
    for (const name of names) running.push(await start(name, "1"));
    for (const target of running) wrk(target, 2, connections); // warm-up: JIT, caches, pools
    const samples = new Map<string, Sample[]>(names.map((name) => [name, []]));
    // Each ratio's two sides run back to back, and every other round in reverse, so a burst
    // of noise on the shared machine falls on both sides of a ratio or cancels over the rounds.
    const order = [...running].sort((a, b) => runPosition(a.name) - runPosition(b.name));
    for (let round = 0; round < rounds; round++) {
      for (const target of round % 2 === 0 ? order : [...order].reverse())
        samples.get(target.name)?.push(wrk(target, seconds, connections));
      process.stderr.write(`round ${round + 1}/${rounds} done\n`);
    }
    const rates = (name: string) => (samples.get(name) ?? []).map((s) => s.rate);
    const cpu = (name: string) => median((samples.get(name) ?? []).map((s) => s.cpuMicros));
    const bare = median(rates("bare-node"));
    console.log(
      `\nOver the socket: wrk (1 thread, ${connections} connections) on core 0, each server alone on core 1; ${rounds} interleaved rounds x ${seconds} s; GET ${PATH}, signed in`,
    );
    console.log(
      `${"contender".padEnd(80)} ${"req/s".padStart(8)} ${"spread".padStart(17)} ${"vs bare".padStart(8)} ${"CPU µs/req".padStart(11)} ${"bare/CPU".padStart(9)}`,
    );
    for (const name of names) {
      const list = rates(name);
      const value = median(list);
      console.log(
        `${label(name).padEnd(80)} ${fmt(value).padStart(8)} ${`${fmt(Math.min(...list))}–${fmt(Math.max(...list))}`.padStart(17)} ${fmt(value / bare, 2).padStart(8)} ${fmt(cpu(name), 1).padStart(11)} ${fmt(cpu("bare-node") / cpu(name), 2).padStart(9)}`,
      );
    }
    // Ratios per round (both measured in the same round), then their median and spread.
    targets((name, to) => {
      const a = samples.get(name);
      const b = samples.get(to);
      if (a === undefined || b === undefined) return undefined;
      const per = a.map((s, i) => s.rate / (b[i]?.rate ?? Number.NaN));
      return `${fmt(median(per), 2)} [${fmt(Math.min(...per), 2)}–${fmt(Math.max(...per), 2)}]`;
    });
    printGoals(
      (name) => (samples.has(name) ? cpu(name) : undefined),
      "server CPU µs per request",
      1,
    );
  } finally {
    for (const target of running) target.child.kill();
  }
}

/** Sends `count` GETs one after another on one kept-alive connection. */
function drive(target: Running, count: number): Promise<void> {
  return sendInSequence(
    target.port,
    profileHeaders(PROFILE(target.name), target.cookie),
    count,
    target.name,
  );
}

function totalInstructions(file: string): number {
  const text = readFileSync(file, "utf8");
  const line = /^(?:totals|summary):\s+(\d+)/m.exec(text);
  // A thread that ran nothing while counting writes a dump without totals.
  return line === null ? 0 : Number(line[1]);
}

async function instructions(): Promise<void> {
  if (!have("valgrind") || !have("callgrind_control"))
    throw new Error("BENCH_MODE=instructions needs valgrind (Debian package valgrind)");
  const measured = Number(process.env.BENCH_REQUESTS ?? 6000);
  // Requests before the full collection, and as many after it.
  const warm = Number(process.env.BENCH_WARM ?? 2000);
  const names = contenders();
  const perRequest = new Map<string, number>();
  const allThreads = new Map<string, number>();
  for (const name of names) {
    const dir = mkdtempSync(join(tmpdir(), "portcullis-callgrind-"));
    const out = join(dir, "callgrind.out");
    const target = await start(name, "1", [
      "valgrind",
      "--tool=callgrind",
      "--smc-check=all-non-file",
      "--instr-atstart=no",
      // One count per thread: the main thread runs the requests; the others compile and
      // collect garbage concurrently, and under valgrind that work drags on for thousands of
      // requests (the JIT compiler still compiled the server's hot functions after 15 000).
      "--separate-threads=yes",
      `--callgrind-out-file=${out}`,
    ]);
    try {
      const pid = target.child.pid as number;
      await drive(target, warm);
      // A full collection halfway (servers.ts answers SIGUSR2 with one): a collection of the
      // old generation left over from the warm-up would otherwise land in the count or not,
      // by chance, and move it by ten thousand instructions a request.
      process.kill(pid, "SIGUSR2");
      // Then more requests, so that the collection's aftermath (sweeping, code it let go of
      // and compiled again) is behind the count too.
      await drive(target, warm);
      // Count only the measured requests: instrumentation is switched on (which retranslates
      // the code already run), a few requests settle it, the counters are zeroed, then dumped.
      spawnSync("callgrind_control", ["--instr=on", String(pid)]);
      await drive(target, 200);
      spawnSync("callgrind_control", ["--zero", String(pid)]);
      await drive(target, measured);
      spawnSync("callgrind_control", ["--dump", String(pid)]);
      spawnSync("callgrind_control", ["--instr=off", String(pid)]);
      // `--dump` writes callgrind.out.1 (one per thread that ran: .1-01, .1-02...); the bare
      // callgrind.out is only written at exit, which a killed server never reaches.
      const dumps = readdirSync(dir).filter((file) => /^callgrind\.out\.\d/.test(file));
      if (dumps.length === 0) throw new Error(`${name}: callgrind wrote no dump`);
      // `.1-01` is the main thread's.
      const main = dumps.find((file) => file.endsWith("-01")) ?? dumps[0];
      const mainThread = totalInstructions(join(dir, main as string));
      const total = dumps.reduce((sum, file) => sum + totalInstructions(join(dir, file)), 0);
      perRequest.set(name, mainThread / measured);
      allThreads.set(name, total / measured);
      process.stderr.write(
        `${name}: ${fmt(mainThread / measured)} instructions/request on the main thread, ${fmt(total / measured)} in all threads\n`,
      );
    } finally {
      target.child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const bare = perRequest.get("bare-node") as number;
  console.log(
    `\nInstructions per request (callgrind, ${warm} requests to warm up, a full collection, ${warm} more, ${measured} counted, one connection; the main thread, and all threads with the JIT compiler's and the concurrent GC's)`,
  );
  console.log(
    `${"contender".padEnd(80)} ${"main".padStart(10)} ${"bare/this".padStart(10)} ${"all threads".padStart(12)}`,
  );
  for (const name of names) {
    const value = perRequest.get(name) as number;
    console.log(
      `${label(name).padEnd(80)} ${fmt(value).padStart(10)} ${fmt(bare / value, 2).padStart(10)} ${fmt(allThreads.get(name) as number).padStart(12)}`,
    );
  }
  printGoals((name) => perRequest.get(name), "instructions per request (main thread)");
}

/** Runs the over-the-socket comparison (or the instruction counts) and prints the tables. */
export async function overSocket(): Promise<void> {
  for (const tool of byInstructions() ? ["taskset"] : ["wrk", "taskset"]) {
    if (!have(tool)) {
      console.log(
        `\nOver the socket: skipped, ${tool} is not installed (Debian: apt-get install ${tool === "wrk" ? "wrk" : "util-linux"}).`,
      );
      return;
    }
  }
  // BENCH_PREBUILT=1 measures the build already in BENCH_DIST_DIR (another commit's, say).
  if (process.env.BENCH_PREBUILT !== "1") compile();
  if (byInstructions()) await instructions();
  else await throughput();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await overSocket();
