export { type BasicAuthOptions, type BasicAuthUser, basicAuth, parseBasic } from "./basic-auth.ts";
export { Chain } from "./chain.ts";
export { requireAuthenticated, requireAuthority, requireRole } from "./guards.ts";
