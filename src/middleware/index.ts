export { Chain } from "../chain/chain.ts";
export { type BasicAuthOptions, basicAuth, parseBasic } from "./basic-auth.ts";
export { requireAuthenticated, requireAuthority, requireRole } from "./guards.ts";
