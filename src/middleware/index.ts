/**
 * The chain and the literal per-route guards: `Chain`, `requireAuthenticated`, `requireRole`,
 * `requireAuthority` and `basicAuth`.
 *
 * @module portcullis/middleware
 */
export { type BasicAuthOptions, basicAuth, parseBasic } from "./basic-auth.ts";
export { Chain } from "./chain.ts";
export { requireAuthenticated, requireAuthority, requireRole } from "./guards.ts";
