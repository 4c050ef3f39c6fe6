/**
 * Capabilities as MCP tools: an MCP endpoint (Streamable HTTP) built on the
 * MCP SDK's server package, with Portcullis authenticating every request and
 * deciding every `tools/call` against the grant.
 *
 * @module portcullis/mcp
 */

export { type McpEndpoint, type McpEndpointOptions, mcpEndpoint } from "./mcp-endpoint.ts";
