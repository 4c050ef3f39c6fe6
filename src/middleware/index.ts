/**
 * The chain and the literal per-route guards: `Chain`, `requireAuthenticated`, `requireRole`,
 * `requireAuthority` and `basicAuth`. The Go library's `middleware` package by name; each lives
 * in the room of its concept (chain, authz, login).
 *
 * @module portcullis/middleware
 */
export { requireAuthenticated, requireAuthority, requireRole } from "../authz/require.ts";
export { Chain } from "../chain/chain.ts";
export { type BasicAuthOptions, basicAuth, parseBasic } from "../login/basic-auth.ts";
