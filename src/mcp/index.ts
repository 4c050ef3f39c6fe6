/**
 * Capabilities as MCP tools: an MCP endpoint (Streamable HTTP) built on the
 * MCP SDK's server package, with Portcullis authenticating every request and
 * deciding every `tools/call` against the grant.
 *
 * Needs the optional peer `@modelcontextprotocol/server` 2:
 * `npm install @modelcontextprotocol/server`; without it the endpoint says so once on the
 * console and answers 503.
 *
 * @module portcullis/mcp
 */

export { type McpEndpoint, type McpEndpointOptions, mcpEndpoint } from "./mcp-endpoint.ts";
