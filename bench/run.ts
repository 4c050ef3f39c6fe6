import { inProcess } from "./in-process.ts";

console.log(`portcullis benchmarks — node ${process.version}, ${new Date().toISOString()}`);
await inProcess();
