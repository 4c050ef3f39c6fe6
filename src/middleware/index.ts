export { type BasicAuthOptions, basicAuth, parseBasic } from "./basic-auth.ts";
export { Chain } from "./chain.ts";
export { requireAuthenticated, requireAuthority, requireRole } from "./guards.ts";
