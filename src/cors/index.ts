/**
 * The CORS leg: `cors` answers preflights and sets the CORS headers for the origins you allow.
 *
 * @module portcullis/cors
 */
export { CORS_DEFAULTS, type CorsOptions, type CorsOriginFunction, cors } from "./cors.ts";
