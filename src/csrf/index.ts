/**
 * CSRF protection: the `csrf` leg (tokens bound to the session, Fetch Metadata and `Origin`
 * checks) and `csrfToken` for forms.
 *
 * @module portcullis/csrf
 */
export { type CsrfOptions, csrf, csrfToken } from "./csrf.ts";
