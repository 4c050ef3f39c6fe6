/**
 * Where one contender's instructions go: `npx tsx bench/profile.ts <contender> [requests]`
 * runs it under callgrind (as `BENCH_MODE=instructions` does), counts `requests`
 * signed-in requests after a warm-up, and prints callgrind_annotate's summary by
 * function. Code the JIT compiler made has no symbols: it shows as addresses.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { profileHeaders, sendInSequence, signInCookie } from "./profiles.ts";
import { signsIn, variantOf } from "./servers.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SERVERS = fileURLToPath(new URL("servers.ts", import.meta.url));
const DIST =
  process.env.BENCH_DIST_DIR ?? join(ROOT, "node_modules", ".cache", "portcullis-bench-dist");

const name = process.argv[2] ?? "portcullis-node";
const requests = Number(process.argv[3] ?? 3000);
const dir = mkdtempSync(join(tmpdir(), "portcullis-profile-"));
const child = spawn(
  "taskset",
  [
    "-c",
    process.env.BENCH_CORE ?? "1",
    "valgrind",
    "--tool=callgrind",
    "--smc-check=all-non-file",
    "--instr-atstart=no",
    "--dump-instr=no",
    ...(process.env.VALGRIND_EXTRA ?? "").split(" ").filter((arg) => arg !== ""),
    `--callgrind-out-file=${join(dir, "callgrind.out")}`,
    process.execPath,
    "--expose-gc",
    ...(process.env.NODE_EXTRA ?? "").split(" ").filter((arg) => arg !== ""),
    "--import",
    "tsx",
    SERVERS,
    name,
  ],
  {
    cwd: ROOT,
    env: { ...process.env, PORTCULLIS_BENCH_DIST: DIST, NODE_ENV: "production" },
    stdio: ["ignore", "pipe", process.env.PROFILE_STDERR === "1" ? "inherit" : "ignore"],
  },
);
let out = "";
const port = await new Promise<number>((resolve) => {
  // Everything the server prints (`NODE_EXTRA=--trace-opt`, say) is kept beside the dumps.
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    const match = /PORT (\d+)/.exec(out);
    if (match) resolve(Number(match[1]));
  });
});
const { variant } = variantOf(name);
let cookie = "sid=k2JbX9qR4mT7vW1yZ3aC6eG8iL0nP5sU2xA4cE7gH9j";
if (signsIn(variant) && variant.profile === "browser") {
  cookie = await signInCookie(`http://127.0.0.1:${port}`, name);
}
const headers = profileHeaders(variant.profile, cookie);
const drive = (count: number) => sendInSequence(port, headers, count, name);
const pid = String(child.pid);
await drive(Number(process.env.BENCH_WARM ?? 3000));
process.kill(child.pid as number, "SIGUSR2"); // a full collection, then as many requests, as socket.ts does
await drive(Number(process.env.BENCH_WARM ?? 3000));
spawnSync("callgrind_control", ["--instr=on", pid]);
await drive(200);
spawnSync("callgrind_control", ["--zero", pid]);
await drive(requests);
spawnSync("callgrind_control", ["--dump", pid]);
child.kill("SIGKILL");
writeFileSync(join(dir, "stdout.txt"), out);
const dumps = readdirSync(dir).filter((file) => /^callgrind\.out\.\d/.test(file));
for (const file of dumps) {
  const out = spawnSync("callgrind_annotate", ["--threshold=99", join(dir, file)], {
    encoding: "utf8",
  });
  console.log(`${file}\n${out.stdout.split("\n").slice(0, 70).join("\n")}`);
}
console.log(`dumps in ${dir}`);
