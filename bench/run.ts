import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { agentBenchmarks, dpopBenchmarks, mcpBenchmarks, storeBenchmarks } from "./agents.ts";
import { inProcess } from "./in-process.ts";
import { memoryStoreBenchmarks } from "./memory-stores.ts";
import { schemaBenchmarks } from "./schema.ts";
import { overSocket } from "./socket.ts";

console.log(`portcullis benchmarks — node ${process.version}, ${new Date().toISOString()}`);
// BENCH_ONLY=agents runs only the capability-token benchmarks, BENCH_ONLY=stores the memory stores.
const only = process.env.BENCH_ONLY;
if (only === undefined || only === "chain") await inProcess();
if (only === undefined || only === "schema") schemaBenchmarks();
if (only === "mcp") await mcpBenchmarks();
if (only === undefined || only === "agents") {
  await agentBenchmarks();
  await dpopBenchmarks();
  await mcpBenchmarks();
  await storeBenchmarks();
  // In a child process: @hono/node-server's classes would replace this one's globals.
  execFileSync(
    process.execPath,
    ["--import", "tsx", fileURLToPath(new URL("agents-node-server.ts", import.meta.url))],
    {
      stdio: "inherit",
    },
  );
}
if (only === undefined || only === "agents" || only === "stores") await memoryStoreBenchmarks();
if ((only === undefined || only === "socket") && process.env.BENCH_SKIP_SOCKET !== "1")
  await overSocket();
