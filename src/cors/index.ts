export { CORS_DEFAULTS, type CorsOptions, type CorsOriginFunction, cors } from "./cors.ts";
