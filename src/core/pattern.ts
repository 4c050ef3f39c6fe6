import { InvalidOptionsError } from "./errors.ts";

/**
 * A compiled path pattern. `*` matches within one segment (`/files/*.css`),
 * `**` as a whole segment matches zero or more segments (`/admin/**` matches
 * `/admin` and everything below it). Matching is on the normalized raw path,
 * before any router parses it, so a route template (`/users/:id`,
 * `/users/{id}`, Next.js's `/users/[id]`) could never match a request and is
 * refused when compiled.
 */
export type PathMatcher = (path: string) => boolean;

export function compilePattern(pattern: string): PathMatcher {
  if (typeof pattern !== "string" || pattern.charCodeAt(0) !== 0x2f) {
    throw new InvalidOptionsError(`a path pattern must start with "/": ${JSON.stringify(pattern)}`);
  }
  if (/[?#\\\s]/.test(pattern)) {
    throw new InvalidOptionsError(
      `a path pattern cannot hold "?", "#", "\\" or white space: ${JSON.stringify(pattern)}`,
    );
  }
  // Paths are lower-cased and stripped of empty segments before matching; patterns likewise.
  const segments = pattern
    .toLowerCase()
    .split("/")
    .filter((s) => s !== "");
  for (const s of segments) {
    if (s.includes("**") && s !== "**") {
      throw new InvalidOptionsError(
        `"**" must stand alone as a segment: ${JSON.stringify(pattern)}`,
      );
    }
    if (/^:[a-z_]|^\{[^}]*\}$|^\[[^\]]*\]$/.test(s)) {
      const fixed = segments.map((t) => (t === s ? "*" : t)).join("/");
      throw new InvalidOptionsError(
        `${JSON.stringify(pattern)} is a route template, and templates never occur in a request path: write "/${fixed}" (one segment) or "/${segments.slice(0, segments.indexOf(s)).join("/")}/**" (any depth) instead`,
      );
    }
    if (s === "." || s === "..")
      throw new InvalidOptionsError(
        `a path pattern cannot hold dot segments: ${JSON.stringify(pattern)}`,
      );
  }
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

  const parts = segments.map(compileSegment);
  return (path) => matchSegments(parts, 0, path === "/" ? [] : path.slice(1).split("/"), 0);
}

type Segment = "**" | ((segment: string) => boolean);

function compileSegment(segment: string): Segment {
  if (segment === "**") return "**";
  if (segment === "*") return () => true;
  if (!segment.includes("*")) return (s) => s === segment;
  const source = segment
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  const regex = new RegExp(`^${source}$`);
  return (s) => regex.test(s);
}

function matchSegments(
  parts: readonly Segment[],
  p: number,
  path: readonly string[],
  s: number,
): boolean {
  for (; p < parts.length; p++, s++) {
    const part = parts[p] as Segment;
    if (part === "**") {
      if (p === parts.length - 1) return true;
      for (let k = s; k <= path.length; k++) if (matchSegments(parts, p + 1, path, k)) return true;
      return false;
    }
    if (s >= path.length || !part(path[s] as string)) return false;
  }
  return s === path.length;
}
