export { requireAuthenticated, requireAuthority, requireRole } from "../authz/require.ts";
export { Chain } from "../chain/chain.ts";
export { type BasicAuthOptions, basicAuth, parseBasic } from "./basic-auth.ts";
