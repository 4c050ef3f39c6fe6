import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// The rooms of src/ and the one direction they depend in. Each line reads bottom to top: a room
// may import the rooms below it on any line (transitively), never one beside or above it.
// `a | b` is one step of rooms that do not import each other.
const ORDER = [
  // core is the floor and imports no room.
  "core < jwt < oauth2 < agentauth < mcp",
  // The legs: csrf reads the session; login reads the session and the CSRF leg's verdict.
  "core < session < csrf < login < chain",
  "core < headers | cors | ratelimit | authz < chain",
  // The hosts: the Node engine serves the adapters of Node frameworks only; the Hono and
  // Next.js adapters are web-standard and never reach it.
  "chain < adapters/node/engine < adapters/node | adapters/express | adapters/fastify | adapters/koa",
  "chain < adapters/hono | adapters/next",
  // The Node adapter also carries the Node transport of oauth2's client metadata documents
  // (it takes only that room's types).
  "oauth2 < adapters/node",
  // Faces: portcullis/middleware keeps the Go package's names; the root re-exports the rooms a
  // web application needs (the agent rooms and the stores are subpaths only).
  "authz | chain | login < middleware",
  "authz | chain | core | cors | csrf | headers | login | middleware | ratelimit | session < (root)",
];

// Shared stores sit beside the rooms: they run on core and take from the rooms they store for
// nothing but types (the store interfaces and records). No room imports a store.
const STORES: Record<string, readonly string[]> = {
  "stores/redis": ["session", "ratelimit", "oauth2", "agentauth"],
  "stores/postgres": ["oauth2", "agentauth"],
};

// Rooms whose files are open to the rooms above them: core is the building blocks every leg is
// made of (`portcullis/core` is their public face), and the Node engine has no index of its own.
const OPEN_ROOMS = new Set(["core", "adapters/node/engine"]);
// Faces re-export names from the files that hold them.
const FACES = new Set(["middleware", "(root)"]);
// The agent rooms' imports of each other are held to the same rule by their own suite.
const CHECKED_ELSEWHERE = new Set(["jwt", "oauth2", "agentauth", "mcp"]);
// Inner files reached on purpose, each with the reason it is not in the room's index.
const INNER_IMPORTS: Record<string, string> = {
  "chain/new-chain.ts -> login/endpoint.ts":
    "newChain places the login endpoint in its chain; loginMiddleware is wiring, not a public name",
  "login/login.ts -> csrf/csrf.ts":
    "login asks the CSRF leg whether this request's token was verified; not a public name",
  "csrf/csrf.ts -> session/sessions.ts":
    "the CSRF refusal says, outside production, that the browser dropped a Secure session cookie; not a public name",
  "chain/browser-denials.ts -> session/sessions.ts":
    "the default 403 page says, outside production, that the browser dropped a Secure session cookie; not a public name",
};

const SRC = join(import.meta.dirname, "..", "src");

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") && !name.endsWith(".test.ts") ? [path] : [];
  });
}

/** The room of a path relative to src/. */
function roomOf(path: string): string {
  const parts = path.split("/");
  if (parts.length === 1) return "(root)";
  if (parts[0] === "adapters" && parts[1] === "node" && parts[2] === "engine" && parts.length > 3)
    return "adapters/node/engine";
  if (parts[0] === "adapters" || parts[0] === "stores") return `${parts[0]}/${parts[1]}`;
  return parts[0] as string;
}

interface Edge {
  readonly from: string;
  readonly to: string;
  /** Erased at run time: `import type`, or every name marked `type`. */
  readonly typeOnly: boolean;
}

function imports(path: string): Edge[] {
  const text = readFileSync(path, "utf8");
  const from = relative(SRC, path);
  const target = (spec: string) => relative(SRC, resolve(dirname(path), spec));
  const found: Edge[] = [];
  const statement = /^(?:import|export)\s+(type\s+)?([^;]*?)\s*from\s+["'](\.[^"']+)["']/gms;
  for (const [, type, names, spec] of text.matchAll(statement)) {
    const list = (names as string).replace(/^\{|\}$/g, "").split(",");
    const allTyped = list.every((name) => name.trim() === "" || /^type\s/.test(name.trim()));
    found.push({ from, to: target(spec as string), typeOnly: type !== undefined || allTyped });
  }
  const bare = /^import\s+["'](\.[^"']+)["']|\bimport\(\s*["'](\.[^"']+)["']\s*\)/gm;
  for (const [, side, dynamic] of text.matchAll(bare))
    found.push({ from, to: target((side ?? dynamic) as string), typeOnly: false });
  return found;
}

/** For each room, every room below it on some line of ORDER. */
function below(): Map<string, Set<string>> {
  const direct = new Map<string, Set<string>>();
  for (const line of ORDER) {
    const steps = line.split("<").map((step) => step.split("|").map((room) => room.trim()));
    for (let i = 1; i < steps.length; i++) {
      for (const upper of steps[i] as string[]) {
        const set = direct.get(upper) ?? new Set();
        for (const lower of steps[i - 1] as string[]) set.add(lower);
        direct.set(upper, set);
      }
    }
  }
  const closed = new Map<string, Set<string>>();
  const walk = (room: string, seen: Set<string>): Set<string> => {
    for (const lower of direct.get(room) ?? []) {
      if (!seen.has(lower)) {
        seen.add(lower);
        walk(lower, seen);
      }
    }
    return seen;
  };
  for (const room of direct.keys()) closed.set(room, walk(room, new Set()));
  return closed;
}

const files = sources(SRC);
const edges = files.flatMap(imports).filter((edge) => roomOf(edge.from) !== roomOf(edge.to));
const placed = new Set([
  ...ORDER.flatMap((line) => line.split(/[<|]/).map((room) => room.trim())),
  ...Object.keys(STORES),
]);
const show = (edge: Edge) => `${edge.from} -> ${edge.to}`;

describe("rooms", () => {
  it("reads the imports between rooms", () => {
    expect(edges.map(show)).toContain("chain/new-chain.ts -> csrf/index.ts");
    expect(edges).toContainEqual({
      from: "stores/redis/grant-store.ts",
      to: "agentauth/index.ts",
      typeOnly: true,
    });
    expect(roomOf("adapters/node/engine/request.ts")).toBe("adapters/node/engine");
    expect(roomOf("adapters/node/index.ts")).toBe("adapters/node");
  });

  it("places every room of src/ in the order", () => {
    const rooms = new Set(files.map((path) => roomOf(relative(SRC, path))));
    expect([...rooms].filter((room) => !placed.has(room))).toEqual([]);
  });

  it("no room imports a room beside or above its own", () => {
    const order = below();
    const upward = edges.filter((edge) => {
      const from = roomOf(edge.from);
      return !(from in STORES) && !order.get(from)?.has(roomOf(edge.to));
    });
    expect(upward.map(show)).toEqual([]);
  });

  it("stores run on core and take only types from the rooms they store for", () => {
    const wrong = edges.filter((edge) => {
      const allowed = STORES[roomOf(edge.from)];
      if (allowed === undefined) return false;
      const to = roomOf(edge.to);
      return to !== "core" && !(edge.typeOnly && allowed.includes(to));
    });
    expect(wrong.map(show)).toEqual([]);
  });

  it("no room imports another room's inner files, but for the reasons listed", () => {
    const inner = edges.filter(
      (edge) =>
        !edge.to.endsWith("/index.ts") &&
        !OPEN_ROOMS.has(roomOf(edge.to)) &&
        !FACES.has(roomOf(edge.from)) &&
        !CHECKED_ELSEWHERE.has(roomOf(edge.from)),
    );
    const unlisted = inner.filter((edge) => !(show(edge) in INNER_IMPORTS));
    expect(unlisted.map(show)).toEqual([]);
    // A listed reason that no import needs any more goes.
    const used = new Set(inner.map(show));
    expect(Object.keys(INNER_IMPORTS).filter((pair) => !used.has(pair))).toEqual([]);
  });

  it("keeps portcullis/middleware a face of re-exports over the chain, authz and login", () => {
    expect(readdirSync(join(SRC, "middleware"))).toEqual(["index.ts"]);
    const code = readFileSync(join(SRC, "middleware", "index.ts"), "utf8")
      .replace(/^\/\/.*$/gm, "")
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .trim();
    const statements = code.split(/;\s*/).filter((statement) => statement !== "");
    for (const statement of statements) expect(statement).toMatch(/^export \{[^}]*\} from "/);
    expect(existsSync(join(SRC, "node"))).toBe(false);
  });
});
