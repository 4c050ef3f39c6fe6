import { MissingPeerError } from "./errors.ts";

/**
 * `error`, from loading the optional peer `packageName`, as the one-line
 * `MissingPeerError` when it says the package itself is not installed (Node's
 * `ERR_MODULE_NOT_FOUND` or `MODULE_NOT_FOUND`, Bun's and Deno's "Cannot find
 * package/module"); any other failure, a broken install of the package or a
 * module it lacks included, is handed back as it was.
 */
export function missingPeer(error: unknown, importPath: string, packageName: string): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : "";
  const notFound =
    code === "ERR_MODULE_NOT_FOUND" ||
    code === "MODULE_NOT_FOUND" ||
    /cannot find (package|module)|not found/i.test(message);
  if (!notFound) return error;
  // Only the package itself: a module missing inside it is that package's problem.
  const named = message.includes(`'${packageName}'`) || message.includes(`"${packageName}"`);
  return named ? new MissingPeerError(importPath, packageName, { cause: error }) : error;
}
