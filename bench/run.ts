import { inProcess } from "./in-process.ts";
import { overSocket } from "./socket.ts";

console.log(`portcullis benchmarks — node ${process.version}, ${new Date().toISOString()}`);
await inProcess();
if (process.env.BENCH_SKIP_SOCKET !== "1") await overSocket();
