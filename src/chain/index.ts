export { type BrowserDenialOptions, browserDenials, isNavigation } from "./browser-denials.ts";
export { newChain, newHandler, type SecurityOptions } from "./new-chain.ts";
