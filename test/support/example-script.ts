import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** One of the example scripts (`npm run agent`, `mcp-agent`, `mcp-desktop`) as a child process. */
export interface ScriptRun {
  readonly child: ChildProcess;
  /** Everything it wrote so far, stdout and stderr together. */
  output(): string;
  readonly exited: Promise<number | null>;
  /** The first match of `pattern` in its output, once it appears; throws if it exits first. */
  waitFor(pattern: RegExp): Promise<RegExpExecArray>;
}

/** Runs `script` (a path under the repository) against the service at `base`. */
export function runExampleScript(script: string, base: string, ...args: string[]): ScriptRun {
  const child = spawn(
    process.execPath,
    ["--conditions=source", "--import", "tsx", script, ...args],
    {
      cwd: ROOT,
      env: { ...process.env, PORTCULLIS_URL: base },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  const collect = (chunk: Buffer) => {
    output += chunk.toString("utf8");
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  return {
    child,
    output: () => output,
    exited,
    async waitFor(pattern) {
      for (;;) {
        const match = pattern.exec(output);
        if (match !== null) return match;
        if (child.exitCode !== null)
          throw new Error(`${script} exited ${child.exitCode}:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}
