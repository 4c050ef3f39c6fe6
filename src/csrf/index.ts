export { type CsrfOptions, csrf, csrfToken } from "./csrf.ts";
