import { InvalidOptionsError } from "./errors.ts";

/**
 * A compiled path pattern. `*` matches within one segment (`/files/*.css`),
 * `**` as a whole segment matches zero or more segments (`/admin/**` matches
 * `/admin` and everything below it). Matching is on the normalized raw path,
 * before any router parses it, so a route template (`/users/:id`,
 * `/users/{id}`, Next.js's `/users/[id]`) could never match a request and is
 * refused when compiled, as is syntax other routers give a meaning this
 * matcher does not have (`/files/*path`: a segment of `*` and a name; `(.*)`, `+`, `{a,b}`, `[abc]`).
 * Matching costs time linear in the path's length times the pattern's.
 */
export type PathMatcher = (path: string) => boolean;

export function compilePattern(pattern: string): PathMatcher {
  const segments = parsePattern(pattern);
  const hasWildcard = segments.some((s) => s.includes("*"));
  const literal = `/${segments.join("/")}`;
  if (!hasWildcard) return (path) => path === literal;

  const last = segments.length - 1;
  if (segments[last] === "**" && !segments.slice(0, last).some((s) => s.includes("*"))) {
    // The common `/prefix/**` shape: a string prefix test.
    const base = `/${segments.slice(0, last).join("/")}`;
    if (base === "/") return () => true;
    const prefix = `${base}/`;
    return (path) => path === base || path.startsWith(prefix);
  }

  const tokens = segments.map(compileSegment);
  return (path) => accepts(tokens, runTokens(tokens, splitPath(path)));
}

/**
 * Whether every path `narrow` matches is matched by `broad` too. Exact: it
 * looks for a path `narrow` matches and `broad` does not (see `uncoveredPath`).
 */
export function patternCovers(broad: string, narrow: string): boolean {
  return uncoveredPath(broad, narrow) === undefined;
}

/**
 * A path `narrow` matches and `broad` does not, or `undefined` when there is
 * none. Among the segments a token of `narrow` matches, the one with its `*`s
 * replaced by a character that no literal of `broad` holds is matched by the
 * fewest tokens of `broad` (a literal of `broad` can never take that
 * character), and matching fewer segments never lets `broad` match more. So
 * only those paths need trying: each glob of `narrow` as that one segment,
 * each `**` as that character repeated 0, 1, 2, ... times, walked breadth-first
 * together with the set of positions `broad` can be at, until no new pair turns
 * up. Patterns are configuration, not client input.
 */
export function uncoveredPath(broad: string, narrow: string): string | undefined {
  const a = parsePattern(broad);
  const b = parsePattern(narrow);
  const fresh = freshCharacter(a.join("/"));
  const tokens = a.map(compileSegment);
  const steps = b.map((s) => (s === "**" ? "**" : s.replaceAll("*", fresh)));
  type Node = { at: number; states: Uint8Array; path: readonly string[] };
  const seen = new Set<string>();
  const queue: Node[] = [{ at: 0, states: closure(tokens, initial(tokens)), path: [] }];
  for (let head = 0; head < queue.length; head++) {
    const { at, states, path } = queue[head] as Node;
    const key = `${at}:${states.join("")}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (at === steps.length) {
      if (!accepts(tokens, states)) return `/${path.join("/")}`;
      continue;
    }
    const step = steps[at] as string;
    if (step === "**") {
      queue.push({ at: at + 1, states, path });
      queue.push({ at, states: advance(tokens, states, fresh), path: [...path, fresh] });
    } else {
      queue.push({ at: at + 1, states: advance(tokens, states, step), path: [...path, step] });
    }
  }
  return undefined;
}

/** Validates `pattern` and returns its segments, lower-cased, empty ones dropped. */
function parsePattern(pattern: string): string[] {
  if (typeof pattern !== "string" || pattern.charCodeAt(0) !== 0x2f) {
    throw new InvalidOptionsError(`a path pattern must start with "/": ${JSON.stringify(pattern)}`);
  }
  const quoted = JSON.stringify(pattern);
  if (/[?#\\\s\p{Cc}]/u.test(pattern)) {
    throw new InvalidOptionsError(
      `a path pattern cannot hold "?", "#", "\\", white space or control characters: ${quoted}`,
    );
  }
  // Request paths holding these are refused before matching, or decoded: such a pattern could never match.
  if (pattern.includes("%")) {
    throw new InvalidOptionsError(
      `${quoted} holds "%": paths are matched after their escapes are decoded, so write the character itself`,
    );
  }
  if (pattern.includes(";")) {
    throw new InvalidOptionsError(
      `${quoted} holds ";": requests whose path holds ";" are refused before any rule, so it could never match`,
    );
  }
  // Paths are lower-cased and stripped of empty segments before matching; patterns likewise.
  const segments = pattern
    .toLowerCase()
    .split("/")
    .filter((s) => s !== "");
  segments.forEach((s, index) => {
    const before = segments.slice(0, index).join("/");
    const instead = `write "/${[...segments.slice(0, index), "*", ...segments.slice(index + 1)].join("/")}" (one segment) or "/${before}${before === "" ? "" : "/"}**" (any depth) instead`;
    if (s === "." || s === "..") {
      throw new InvalidOptionsError(`a path pattern cannot hold dot segments: ${quoted}`);
    }
    if (s.includes("**") && s !== "**") {
      throw new InvalidOptionsError(`"**" must stand alone as a segment: ${quoted}`);
    }
    if (/^\{[^}]*,[^}]*\}$/.test(s)) {
      throw new InvalidOptionsError(
        `${quoted}: "${s}" lists alternatives, which patterns do not support: write one rule for each alternative`,
      );
    }
    if (/^:[a-z_]|^\{[^}]*\}$|^\[[^\]]*\]$|^<[^>]*>$/.test(s)) {
      throw new InvalidOptionsError(
        `${quoted} is a route template, and templates never occur in a request path: ${instead}`,
      );
    }
    if (/^\*[a-z_$][a-z0-9_$]*$/.test(s)) {
      throw new InvalidOptionsError(
        `${quoted}: "*" followed by a name is a named wildcard in other routers (Express 5), which patterns do not support; here "*" matches text within one segment and "**" any number of segments: ${instead}`,
      );
    }
    const syntax = /[()[\]{}+|]/.exec(s);
    if (syntax !== null) {
      throw new InvalidOptionsError(
        `${quoted}: "${syntax[0]}" is regular-expression or glob syntax (groups, repetition, alternatives, character classes), which patterns do not support; a pattern is literal text with "*" (any text within one segment) and "**" (any number of segments): ${instead}, or one rule for each alternative`,
      );
    }
  });
  return segments;
}

/** A character none of `text` holds that can occur in a normalized path segment. */
function freshCharacter(text: string): string {
  for (const c of "abcdefghijklmnopqrstuvwxyz0123456789") if (!text.includes(c)) return c;
  for (let code = 0xe0; ; code++) {
    const c = String.fromCharCode(code);
    if (c.toLowerCase() === c && !text.includes(c)) return c;
  }
}

type Token = "**" | ((segment: string) => boolean);

function compileSegment(segment: string): Token {
  if (segment === "**") return "**";
  if (segment === "*") return () => true;
  if (!segment.includes("*")) return (s) => s === segment;
  return (s) => globMatches(segment, s);
}

/**
 * `*` in `glob` matches any text: greedy, returning to the last `*` on a
 * mismatch, so at most |glob| * |text| steps (no regular expression runs on
 * the client's path).
 */
function globMatches(glob: string, text: string): boolean {
  let g = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    const c = glob.charCodeAt(g);
    if (c === 0x2a) {
      star = g++;
      resume = t;
    } else if (g < glob.length && c === text.charCodeAt(t)) {
      g++;
      t++;
    } else if (star >= 0) {
      g = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (glob.charCodeAt(g) === 0x2a) g++;
  return g === glob.length;
}

function splitPath(path: string): string[] {
  return path === "/" ? [] : path.slice(1).split("/");
}

// The pattern as an automaton over segments: position i means "token i comes next"; a `**` at i
// may be skipped or take a segment and stay. Sets of positions are walked in step, so a path of
// n segments costs n * tokens segment tests, whatever the number of `**`.

function initial(tokens: readonly Token[]): Uint8Array {
  const states = new Uint8Array(tokens.length + 1);
  states[0] = 1;
  return states;
}

function closure(tokens: readonly Token[], states: Uint8Array): Uint8Array {
  for (let i = 0; i < tokens.length; i++)
    if (states[i] === 1 && tokens[i] === "**") states[i + 1] = 1;
  return states;
}

function advance(
  tokens: readonly Token[],
  states: Uint8Array,
  segment: string,
  into: Uint8Array = new Uint8Array(tokens.length + 1),
): Uint8Array {
  into.fill(0);
  for (let i = 0; i < tokens.length; i++) {
    if (states[i] !== 1) continue;
    const token = tokens[i] as Token;
    if (token === "**") into[i] = 1;
    else if (token(segment)) into[i + 1] = 1;
  }
  return closure(tokens, into);
}

function runTokens(tokens: readonly Token[], segments: readonly string[]): Uint8Array {
  let states: Uint8Array = closure(tokens, initial(tokens));
  let spare: Uint8Array = new Uint8Array(tokens.length + 1);
  for (const segment of segments) {
    const next = advance(tokens, states, segment, spare);
    spare = states;
    states = next;
    if (!states.includes(1)) break;
  }
  return states;
}

function accepts(tokens: readonly Token[], states: Uint8Array): boolean {
  return states[tokens.length] === 1;
}
