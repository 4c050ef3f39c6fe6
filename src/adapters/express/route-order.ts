import type { Request } from "express";
import { warnOnce } from "../../core/warning.ts";

/** What this check reads of an Express 5 router layer. */
interface Layer {
  readonly handle?: unknown;
  readonly rawPath?: unknown;
  readonly route?: { readonly path?: unknown; readonly methods?: Record<string, unknown> };
}

// Routers nest; a deeper stack is someone's cycle, not an application.
const MAX_DEPTH = 16;
const SHOWN = 3;

/**
 * Express runs its stack in registration order, so a route (or a router with
 * routes) registered before this middleware answers without it, anonymous
 * callers included, and the chain never hears of those requests. Looks at the
 * stack that holds `middleware` and warns once if anything answers before it.
 */
export function warnIfRoutesBefore(req: Request, middleware: unknown): void {
  let root: unknown;
  try {
    root = (req.app as { router?: unknown } | undefined)?.router;
  } catch {
    return; // Express 4's app.router throws: its stack is elsewhere, and it is not supported
  }
  const found = locate(stackOf(root), middleware, 0);
  if (found === undefined) return;
  // Mounted at a path, the middleware guards only what lies under it.
  const mount = found.stack[found.index]?.rawPath;
  const guarded = (path: unknown): boolean =>
    Array.isArray(path)
      ? path.some(guarded)
      : typeof mount !== "string" ||
        mount === "/" ||
        typeof path !== "string" || // a pattern: it may well match under the mount
        path === mount ||
        path.startsWith(`${mount.replace(/\/$/, "")}/`);
  const early = found.stack
    .slice(0, found.index)
    .filter((layer) => guarded(layer?.route?.path ?? layer?.rawPath))
    .flatMap((layer) => describe(layer, 0));
  if (early.length === 0) return;
  const shown = early.slice(0, SHOWN).join(", ");
  const more = early.length > SHOWN ? ` and ${early.length - SHOWN} more` : "";
  warnOnce(
    "PORTCULLIS_ROUTE_BEFORE_CHAIN",
    `${shown}${more} ${early.length === 1 ? "was" : "were"} registered before expressMiddleware, so Express answers ${early.length === 1 ? "it" : "them"} without the chain (no authorization, anonymous callers included); register app.use(expressMiddleware(chain)) before any route or router`,
  );
}

function stackOf(router: unknown): readonly Layer[] | undefined {
  const stack = (router as { stack?: unknown } | null | undefined)?.stack;
  return Array.isArray(stack) ? (stack as Layer[]) : undefined;
}

function locate(
  stack: readonly Layer[] | undefined,
  middleware: unknown,
  depth: number,
): { stack: readonly Layer[]; index: number } | undefined {
  if (stack === undefined || depth > MAX_DEPTH) return undefined;
  for (const [index, layer] of stack.entries()) {
    if (layer?.handle === middleware) return { stack, index };
    const inner = locate(stackOf(layer?.handle), middleware, depth + 1);
    if (inner !== undefined) return inner;
  }
  return undefined;
}

/** The routes a layer answers: a route itself, or a mounted router that holds any. */
function describe(layer: Layer, depth: number): string[] {
  const route = layer?.route;
  if (route !== undefined && route !== null) {
    const methods = Object.keys(route.methods ?? {})
      .map((method) => (method === "_all" ? "ALL" : method.toUpperCase()))
      .join(",");
    return [`${methods || "ALL"} ${String(route.path)}`];
  }
  const inner = stackOf(layer?.handle);
  if (inner === undefined || depth > MAX_DEPTH) return [];
  if (!inner.some((child) => describe(child, depth + 1).length > 0)) return [];
  const mount = typeof layer.rawPath === "string" ? layer.rawPath : "/";
  return [`the router at ${mount}`];
}
