export { type BrowserDenialOptions, browserDenials, isNavigation } from "./browser-denials.ts";
export { Chain } from "./chain.ts";
export { newChain, newHandler, type SecurityOptions } from "./new-chain.ts";
