// `portcullis/middleware`, the Go library's `middleware` package by name: the chain, the literal
// guards and Basic, each kept in the room of its concept (chain, authz, login).
export { requireAuthenticated, requireAuthority, requireRole } from "../authz/require.ts";
export { Chain } from "../chain/chain.ts";
export { type BasicAuthOptions, basicAuth, parseBasic } from "../login/basic-auth.ts";
