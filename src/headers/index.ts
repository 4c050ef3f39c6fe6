/**
 * The security-headers leg: `securityHeaders` with its defaults, the Content Security Policy and
 * its per-request nonce.
 *
 * @module portcullis/headers
 */
export {
  type ContentSecurityPolicyOptions,
  type CspDirectives,
  type CspDirectiveValue,
  DEFAULT_CSP_DIRECTIVES,
} from "./csp.ts";
export type { PermissionsPolicyFeatures } from "./permissions-policy.ts";
export {
  cspNonce,
  type ReferrerPolicyToken,
  SECURITY_HEADERS_DEFAULTS,
  type SecurityHeadersOptions,
  type StrictTransportSecurityOptions,
  securityHeaders,
} from "./security-headers.ts";
