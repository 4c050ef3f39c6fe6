export { newChain, newHandler, type SecurityOptions } from "./new-chain.ts";
