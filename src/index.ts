export * as authz from "./authz/index.ts";
export { newChain, newHandler, type SecurityOptions } from "./chain/index.ts";
export * from "./core/index.ts";
export * from "./middleware/index.ts";
