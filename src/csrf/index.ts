export { type CsrfOptions, csrf, csrfToken } from "./middleware.ts";
