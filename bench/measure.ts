import type { Handler } from "portcullis";

export interface Contender {
  readonly name: string;
  readonly handler: Handler;
  /** Builds the request for iteration `i`; a fresh one each time, as a server would. */
  readonly request: (i: number) => Request;
}

export interface Result {
  readonly name: string;
  readonly opsPerSecond: number;
  readonly microsPerOp: number;
}

/** Runs `handler` `iterations` times with `concurrency` requests in flight, returns ops/s. */
async function once(
  contender: Contender,
  iterations: number,
  concurrency: number,
): Promise<number> {
  let next = 0;
  const worker = async () => {
    while (next < iterations) {
      const i = next++;
      const response = await contender.handler(contender.request(i));
      await response.arrayBuffer();
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return iterations / ((performance.now() - start) / 1000);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/**
 * Measures contenders side by side: each run visits every contender in turn, so
 * drift in machine load hits all of them alike; the median of the runs is kept.
 */
export async function compare(
  contenders: readonly Contender[],
  { runs = 7, iterations = 20_000, concurrency = 16 } = {},
): Promise<Result[]> {
  for (const c of contenders) await once(c, Math.min(iterations, 5_000), concurrency); // warm-up
  const samples = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  for (let run = 0; run < runs; run++) {
    for (const c of contenders) samples.get(c.name)?.push(await once(c, iterations, concurrency));
  }
  return contenders.map((c) => {
    const ops = median(samples.get(c.name) ?? []);
    return { name: c.name, opsPerSecond: ops, microsPerOp: 1e6 / ops };
  });
}

export function printTable(title: string, results: readonly Result[], baseline: Result): void {
  console.log(`\n${title}`);
  console.log(
    `${"contender".padEnd(44)} ${"req/s".padStart(10)} ${"µs/req".padStart(8)} ${"ratio".padStart(7)} ${"+µs/req".padStart(8)}`,
  );
  for (const r of results) {
    const ratio = r.opsPerSecond / baseline.opsPerSecond;
    const extra = r.microsPerOp - baseline.microsPerOp;
    console.log(
      `${r.name.padEnd(44)} ${Math.round(r.opsPerSecond).toString().padStart(10)} ${r.microsPerOp.toFixed(2).padStart(8)} ${ratio.toFixed(3).padStart(7)} ${extra.toFixed(2).padStart(8)}`,
    );
  }
}
