/**
 * Every `npx tsx …` command the README and the guides (docs/*.md) document,
 * run as written in a fresh copy of the repository: the tracked files only, so no dist/ (the package
 * resolves itself through its exports, which point at dist/ unless the
 * command asks for the `source` condition). Servers must start listening,
 * clients must reach the server they pair with, and the quick starts on
 * @hono/node-server must not warn that they see no client address.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "./processes.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
// The README and the guides, one text: the commands are read from both.
const readme = ["README.md", ...readdirSync(join(ROOT, "docs")).map((name) => join("docs", name))]
  .filter((path) => path.endsWith(".md"))
  .map((path) => readFileSync(join(ROOT, path), "utf8"))
  .join("\n");

/** The documented commands, `<a|b>` alternatives spelt out. */
function documentedCommands(): string[] {
  const inline = [...readme.matchAll(/`((?:[A-Z_]+=\S+ )*npx tsx [^`]+)`/g)].map(
    (m) => m[1] as string,
  );
  const shell = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) =>
    (m[1] as string)
      .split("\n")
      .filter((line) => line.startsWith("npx tsx "))
      .map((line) => line.replace(/\s+#.*$/, "")),
  );
  // "npx tsx server.ts" is the form for a project of one's own, not for this repository.
  return [...inline, ...shell]
    .filter((command) => command.includes("examples/"))
    .flatMap((command) => {
      const choice = /<([a-z|]+)>/.exec(command);
      if (choice === null) return [command];
      return (choice[1] as string).split("|").map((option) => command.replace(choice[0], option));
    });
}

// A client and the server it talks to; every other documented file is a server.
const PAIRED_SERVER: Record<string, string> = {
  "examples/agents-quickstart/agent.ts": "examples/agents-quickstart/server.ts",
  "examples/device/device.ts": "examples/device/server.ts",
};
const CLIENT_OUTPUT = /open http:\/\/127\.0\.0\.1:\d+\//;
// Documented ports, rewritten to the free port the test picked.
const DOCUMENTED_PORT = /(:|=)(3000|3001)\b/g;

let fresh: string;
const children: ChildProcess[] = [];

beforeAll(() => {
  mkdirSync(join(ROOT, "scratch"), { recursive: true });
  // Inside the repository, so node_modules is found one level up, as an installed clone has it.
  fresh = mkdtempSync(join(ROOT, "scratch", "fresh-"));
  const tracked = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" });
  for (const file of tracked.split("\0").filter(Boolean)) {
    mkdirSync(dirname(join(fresh, file)), { recursive: true });
    try {
      copyFileSync(join(ROOT, file), join(fresh, file));
    } catch {
      // A tracked file deleted in the working tree.
    }
  }
});

/** Stops the command's whole process group (bash, npx, tsx, node). */
function stop(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, "SIGTERM");
  } catch {
    // Already gone.
  }
}

afterAll(() => {
  for (const child of children) stop(child);
  rmSync(fresh, { recursive: true, force: true });
});

interface Run {
  output(): string;
  readonly child: ChildProcess;
}

function run(command: string, port: number): Run {
  const child = spawn("bash", ["-c", command.replace(DOCUMENTED_PORT, `$1${port}`)], {
    detached: true, // its own process group: npx, tsx and node are stopped with it
    cwd: fresh,
    env: {
      ...process.env,
      PORT: String(port),
      ALICE_PASSWORD: "a-local-password",
      RESEARCH_KEY: "0123456789abcdef0123456789abcdef",
      NEXT_TELEMETRY_DISABLED: "1",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  child.unref();
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  return { child, output: () => output };
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function until(what: string, done: () => Promise<boolean> | boolean, process: Run) {
  const deadline = Date.now() + 90_000;
  while (!(await done())) {
    if (process.child.exitCode !== null || Date.now() > deadline)
      throw new Error(`${what} (exit ${process.child.exitCode}):\n${process.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function startServer(command: string): Promise<{ port: number; server: Run }> {
  const port = await freePort();
  const server = run(command, port);
  await until(`${command} never listened`, () => listening(port), server);
  return { port, server };
}

const fileOf = (command: string) => /examples\/\S+\.ts/.exec(command)?.[0] as string;

describe("the README's and the guides' commands in a fresh clone", () => {
  const commands = documentedCommands();

  it("are found", () => {
    expect(commands.map(fileOf)).toEqual(
      expect.arrayContaining([
        "examples/quickstart/server.ts",
        "examples/express/server.ts",
        "examples/agents-quickstart/server.ts",
        "examples/agents-quickstart/agent.ts",
        "examples/device/device.ts",
        "examples/next/server.ts",
      ]),
    );
  });

  it.each(commands)("%s works as written", async (command) => {
    const file = fileOf(command);
    const pairedWith = PAIRED_SERVER[file];
    if (pairedWith === undefined) {
      const { port, server } = await startServer(command);
      if (file.endsWith("quickstart/server.ts")) {
        // A password check: the login throttle asks for the client's address.
        const auth = `Basic ${btoa("alice:wrong-password")}`;
        await fetch(`http://127.0.0.1:${port}/`, { headers: { authorization: auth } });
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(server.output()).not.toContain("PORTCULLIS_NO_CLIENT_ADDRESS");
      }
      stop(server.child);
      return;
    }
    const serverCommand = `npx tsx --conditions=source ${pairedWith}`;
    const { port, server } = await startServer(serverCommand);
    const client = run(command, port);
    await until(
      `${command} printed no approval URL`,
      () => CLIENT_OUTPUT.test(client.output()),
      client,
    );
    expect(client.output()).toContain(`http://127.0.0.1:${port}/`);
    stop(client.child);
    stop(server.child);
  });

  it("npm run agent finds the example on PORT, as npm start does", async () => {
    const { port, server } = await startServer("npm start");
    const agent = run("npm run agent -- get_time", port);
    await until(
      "npm run agent printed no approval URL",
      () => CLIENT_OUTPUT.test(agent.output()),
      agent,
    );
    expect(agent.output()).toContain(`open http://127.0.0.1:${port}/device?user_code=`);
    stop(agent.child);
    stop(server.child);
  });
});
