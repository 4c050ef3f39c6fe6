export * as authz from "./authz/index.ts";
export { newChain, newHandler, type SecurityOptions } from "./chain/index.ts";
export * from "./core/index.ts";
export * from "./csrf/index.ts";
export * from "./login/index.ts";
export * from "./middleware/index.ts";
export * from "./session/index.ts";
