import type * as McpServerPackage from "@modelcontextprotocol/server";
import { missingPeer } from "../core/peer.ts";

/** The MCP SDK's server package, an optional peer dependency. */
export type McpSdk = typeof McpServerPackage;

let loading: Promise<McpSdk> | undefined;

/**
 * The MCP SDK's server package, loaded when the first endpoint is built rather
 * than with `portcullis/mcp` itself: an application that lacks it is told in
 * one line which package to install (`MissingPeerError`), not with a
 * module-not-found stack. Once per process.
 */
export function loadMcpSdk(): Promise<McpSdk> {
  loading ??= import("@modelcontextprotocol/server").catch((error: unknown) => {
    throw missingPeer(error, "portcullis/mcp", "@modelcontextprotocol/server");
  });
  return loading;
}
