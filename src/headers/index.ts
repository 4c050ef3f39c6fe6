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
