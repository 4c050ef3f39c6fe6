import { CheckedFields } from "../core/checked-fields.ts";
import { bindValue, type ContextSource, contextFrom, createContextKey } from "../core/context.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { directLeg, type Middleware, onAnswer } from "../core/handler.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { setAbsent, withHeaders } from "../core/response.ts";
import { urlAsSent } from "../core/url-as-sent.ts";
import { type CompiledCsp, type ContentSecurityPolicyOptions, compileCsp } from "./csp.ts";
import { compilePermissionsPolicy, type PermissionsPolicyFeatures } from "./permissions-policy.ts";
import { headerValue, oneOf } from "./validate.ts";

/**
 * The `strictTransportSecurity` option of `securityHeaders`.
 *
 * @example
 * ```ts
 * import { securityHeaders } from "portcullis";
 *
 * const headers = securityHeaders({
 *   strictTransportSecurity: { maxAge: 63_072_000, preload: true }, // two years, preload list
 * });
 * ```
 */
export interface StrictTransportSecurityOptions {
  /**
   * Seconds browsers keep to HTTPS.
   *
   * @default 31_536_000 (one year)
   */
  readonly maxAge?: number;
  /**
   * Covers every subdomain too.
   *
   * @default true
   */
  readonly includeSubDomains?: boolean;
  /**
   * Asks for inclusion in browsers' built-in HSTS lists; hard to undo, so
   * opt-in. Needs `maxAge` of at least a year and `includeSubDomains`.
   *
   * @default false
   */
  readonly preload?: boolean;
}

export type ReferrerPolicyToken =
  | "no-referrer"
  | "no-referrer-when-downgrade"
  | "origin"
  | "origin-when-cross-origin"
  | "same-origin"
  | "strict-origin"
  | "strict-origin-when-cross-origin"
  | "unsafe-url";

/**
 * Options of `securityHeaders`. Every header can be set to `false` to leave it
 * out; a header the downstream handler already set is never overwritten.
 * `SECURITY_HEADERS_DEFAULTS` holds every default.
 *
 * @example
 * ```ts
 * import { newHandler, securityHeaders } from "portcullis";
 *
 * const handler = newHandler(app.fetch, {
 *   headers: securityHeaders({
 *     xFrameOptions: "DENY",
 *     referrerPolicy: "strict-origin-when-cross-origin",
 *     permissionsPolicy: { camera: [], geolocation: ["self"] },
 *     trustForwardedProto: true, // TLS ends at a proxy that sets X-Forwarded-Proto
 *   }),
 *   authorization,
 * });
 * ```
 */
export interface SecurityHeadersOptions {
  /**
   * `Content-Security-Policy`.
   *
   * @default { useDefaults: true, nonce: false, reportOnly: false } (`DEFAULT_CSP_DIRECTIVES`, enforced)
   */
  readonly contentSecurityPolicy?: ContentSecurityPolicyOptions | false;
  /**
   * `Strict-Transport-Security`, sent only on requests served over HTTPS.
   *
   * @default { maxAge: 31_536_000, includeSubDomains: true, preload: false } (`max-age=31536000; includeSubDomains`)
   */
  readonly strictTransportSecurity?: StrictTransportSecurityOptions | false;
  /**
   * Treat a request as HTTPS when the last `X-Forwarded-Proto` value (the one
   * the nearest proxy wrote) is `https`. Turn on only behind a proxy that sets
   * that header; otherwise a client could claim HTTPS. Governs HSTS and the
   * default `upgrade-insecure-requests`.
   *
   * @default false (only the scheme of `request.url` counts)
   */
  readonly trustForwardedProto?: boolean;
  /**
   * `X-Content-Type-Options: nosniff`.
   *
   * @default true
   */
  readonly xContentTypeOptions?: boolean;
  /**
   * `X-Frame-Options`, for browsers without CSP `frame-ancestors`.
   *
   * @default "SAMEORIGIN"
   */
  readonly xFrameOptions?: "SAMEORIGIN" | "DENY" | false;
  /**
   * `Referrer-Policy`; a list gives fallbacks, last preferred.
   *
   * @default "no-referrer"
   */
  readonly referrerPolicy?: ReferrerPolicyToken | readonly ReferrerPolicyToken[] | false;
  /**
   * `Cross-Origin-Opener-Policy`.
   *
   * @default "same-origin"
   */
  readonly crossOriginOpenerPolicy?:
    | "same-origin"
    | "same-origin-allow-popups"
    | "noopener-allow-popups"
    | "unsafe-none"
    | false;
  /**
   * `Cross-Origin-Resource-Policy`.
   *
   * @default "same-origin"
   */
  readonly crossOriginResourcePolicy?: "same-origin" | "same-site" | "cross-origin" | false;
  /**
   * `Cross-Origin-Embedder-Policy`. Off by default because `require-corp`
   * breaks every cross-origin image or script that does not opt in.
   *
   * @default false (not sent)
   */
  readonly crossOriginEmbedderPolicy?: "require-corp" | "credentialless" | "unsafe-none" | false;
  /**
   * `Origin-Agent-Cluster: ?1`.
   *
   * @default true
   */
  readonly originAgentCluster?: boolean;
  /**
   * `X-DNS-Prefetch-Control`.
   *
   * @default "off"
   */
  readonly xDnsPrefetchControl?: "off" | "on" | false;
  /**
   * `X-Permitted-Cross-Domain-Policies` (Adobe clients).
   *
   * @default "none"
   */
  readonly xPermittedCrossDomainPolicies?:
    | "none"
    | "master-only"
    | "by-content-type"
    | "all"
    | false;
  /**
   * `X-XSS-Protection: 0`: turns off the legacy XSS auditor, which itself
   * opened cross-site leaks. Only `"0"` is offered.
   *
   * @default "0"
   */
  readonly xXssProtection?: "0" | false;
  /**
   * `Permissions-Policy`, as features and their allowlists.
   *
   * @default false (not sent)
   */
  readonly permissionsPolicy?: PermissionsPolicyFeatures | false;
}

/** The defaults of every `securityHeaders` option, as documented on `SecurityHeadersOptions`. */
export const SECURITY_HEADERS_DEFAULTS = Object.freeze({
  contentSecurityPolicy: Object.freeze({ useDefaults: true, nonce: false, reportOnly: false }),
  strictTransportSecurity: Object.freeze({
    maxAge: 31_536_000,
    includeSubDomains: true,
    preload: false,
  }),
  trustForwardedProto: false,
  xContentTypeOptions: true,
  xFrameOptions: "SAMEORIGIN",
  referrerPolicy: "no-referrer",
  crossOriginOpenerPolicy: "same-origin",
  crossOriginResourcePolicy: "same-origin",
  crossOriginEmbedderPolicy: false,
  originAgentCluster: true,
  xDnsPrefetchControl: "off",
  xPermittedCrossDomainPolicies: "none",
  xXssProtection: "0",
  permissionsPolicy: false,
} as const) satisfies Required<SecurityHeadersOptions>;

const OPTION_NAMES = Object.keys(SECURITY_HEADERS_DEFAULTS);

const REFERRER_POLICIES: readonly ReferrerPolicyToken[] = [
  "no-referrer",
  "no-referrer-when-downgrade",
  "origin",
  "origin-when-cross-origin",
  "same-origin",
  "strict-origin",
  "strict-origin-when-cross-origin",
  "unsafe-url",
];

const CSP_NONCE = createContextKey<string>("portcullis.cspNonce");

/**
 * The CSP nonce of this request (`<script nonce="…">`), or `undefined` when the
 * headers leg did not run or nonces are off.
 */
export function cspNonce(source: ContextSource): string | undefined {
  return contextFrom(source).get(CSP_NONCE);
}

/**
 * Security headers (chain leg 1, outermost): added to every response that
 * passes through, denials and preflight answers included, unless the
 * downstream set the header itself. The header list is validated and
 * serialized when the leg is built; a bad value throws `InvalidOptionsError`.
 */
export function securityHeaders(options: SecurityHeadersOptions = {}): Middleware {
  if (typeof options !== "object" || options === null) {
    throw new InvalidOptionsError("securityHeaders: options must be an object");
  }
  rejectUnknownKeys("securityHeaders", options, OPTION_NAMES);
  const o = { ...SECURITY_HEADERS_DEFAULTS, ...withoutUndefined(options) };

  const names: string[] = [];
  const values: string[] = [];
  const add = (name: string, value: string) => {
    names.push(name);
    values.push(headerValue(name, value));
  };
  if (flag("xContentTypeOptions", o.xContentTypeOptions)) add("x-content-type-options", "nosniff");
  if (o.xFrameOptions !== false) {
    add("x-frame-options", oneOf("xFrameOptions", o.xFrameOptions, ["SAMEORIGIN", "DENY"]));
  }
  if (o.referrerPolicy !== false) add("referrer-policy", referrerPolicy(o.referrerPolicy));
  if (o.crossOriginOpenerPolicy !== false) {
    add(
      "cross-origin-opener-policy",
      oneOf("crossOriginOpenerPolicy", o.crossOriginOpenerPolicy, [
        "same-origin",
        "same-origin-allow-popups",
        "noopener-allow-popups",
        "unsafe-none",
      ]),
    );
  }
  if (o.crossOriginResourcePolicy !== false) {
    add(
      "cross-origin-resource-policy",
      oneOf("crossOriginResourcePolicy", o.crossOriginResourcePolicy, [
        "same-origin",
        "same-site",
        "cross-origin",
      ]),
    );
  }
  if (o.crossOriginEmbedderPolicy !== false) {
    add(
      "cross-origin-embedder-policy",
      oneOf("crossOriginEmbedderPolicy", o.crossOriginEmbedderPolicy, [
        "require-corp",
        "credentialless",
        "unsafe-none",
      ]),
    );
  }
  if (flag("originAgentCluster", o.originAgentCluster)) add("origin-agent-cluster", "?1");
  if (o.xDnsPrefetchControl !== false) {
    add(
      "x-dns-prefetch-control",
      oneOf("xDnsPrefetchControl", o.xDnsPrefetchControl, ["off", "on"]),
    );
  }
  if (o.xPermittedCrossDomainPolicies !== false) {
    add(
      "x-permitted-cross-domain-policies",
      oneOf("xPermittedCrossDomainPolicies", o.xPermittedCrossDomainPolicies, [
        "none",
        "master-only",
        "by-content-type",
        "all",
      ]),
    );
  }
  if (o.xXssProtection !== false) {
    add("x-xss-protection", oneOf("xXssProtection", o.xXssProtection, ["0"]));
  }
  if (o.permissionsPolicy !== false) {
    add("permissions-policy", compilePermissionsPolicy(o.permissionsPolicy));
  }

  const csp: CompiledCsp | undefined =
    o.contentSecurityPolicy === false ? undefined : compileCsp(o.contentSecurityPolicy);
  if (csp !== undefined) {
    for (const piece of [...csp.https, ...csp.http]) headerValue("contentSecurityPolicy", piece);
  }
  const hsts =
    o.strictTransportSecurity === false ? undefined : hstsValue(o.strictTransportSecurity);
  const trustForwardedProto = flag("trustForwardedProto", o.trustForwardedProto);
  // Only these depend on the request's scheme; skip the check when neither is sent.
  const needsScheme =
    hsts !== undefined || (csp !== undefined && csp.https.join() !== csp.http.join());
  // Everything but a nonce is known now: the answers' fields are checked once, here.
  const constant = new CheckedFields(names.map((name, i) => [name, values[i] as string]));
  const schemeFields = (https: boolean) => {
    const fields: [string, string][] = [];
    if (csp !== undefined && !csp.nonce)
      fields.push([csp.name, (https ? csp.https : csp.http)[0] as string]);
    if (https && hsts !== undefined) fields.push(["strict-transport-security", hsts]);
    return new CheckedFields(fields);
  };
  const overHttps = schemeFields(true);
  const overHttp = schemeFields(false);
  const nonces = csp?.nonce ? nonceSource() : undefined;

  return directLeg((next) => (request, ...rest) => {
    let nonce: string | undefined;
    if (nonces !== undefined) {
      nonce = nonces();
      bindValue(request, CSP_NONCE, nonce);
    }
    return onAnswer(next(request, ...rest), (response) => {
      const https = needsScheme && isHttps(request, trustForwardedProto);
      return withHeaders(response, (headers) => {
        setAbsent(headers, constant);
        setAbsent(headers, https ? overHttps : overHttp);
        if (nonce !== undefined && csp !== undefined && !headers.has(csp.name)) {
          const pieces = https ? csp.https : csp.http;
          headers.set(csp.name, pieces.join(` 'nonce-${nonce}'`));
        }
      });
    });
  });
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));
const NONCE_BYTES = 16;
const POOL_NONCES = 256;

/**
 * 128-bit nonces, hex-encoded (a subset of CSP's base64-value). Web Crypto is
 * asked for 256 nonces' worth of bytes at a time: a call costs microseconds
 * whatever its size. Each byte is used once, and the pool belongs to one leg.
 */
function nonceSource(): () => string {
  const pool = new Uint8Array(NONCE_BYTES * POOL_NONCES);
  let offset = pool.length;
  return () => {
    if (offset === pool.length) {
      crypto.getRandomValues(pool);
      offset = 0;
    }
    let nonce = "";
    for (let end = offset + NONCE_BYTES; offset < end; offset++) {
      nonce += HEX[pool[offset] as number];
    }
    return nonce;
  };
}

function isHttps(request: Request, trustForwardedProto: boolean): boolean {
  if (urlAsSent(request).startsWith("https:")) return true;
  if (!trustForwardedProto) return false;
  const forwarded = request.headers.get("x-forwarded-proto");
  if (forwarded === null) return false;
  const last = forwarded.slice(forwarded.lastIndexOf(",") + 1);
  return last.trim().toLowerCase() === "https";
}

function hstsValue(options: StrictTransportSecurityOptions): string {
  if (typeof options !== "object" || options === null) {
    throw new InvalidOptionsError(
      "securityHeaders: strictTransportSecurity must be an object or false",
    );
  }
  rejectUnknownKeys("securityHeaders: strictTransportSecurity", options, [
    "maxAge",
    "includeSubDomains",
    "preload",
  ]);
  const defaults = SECURITY_HEADERS_DEFAULTS.strictTransportSecurity;
  const maxAge = options.maxAge ?? defaults.maxAge;
  const includeSubDomains = flag(
    "strictTransportSecurity.includeSubDomains",
    options.includeSubDomains ?? defaults.includeSubDomains,
  );
  const preload = flag("strictTransportSecurity.preload", options.preload ?? defaults.preload);
  if (!Number.isSafeInteger(maxAge) || maxAge < 0) {
    throw new InvalidOptionsError(
      "securityHeaders: strictTransportSecurity.maxAge must be a whole number of seconds",
    );
  }
  if (preload && (maxAge < 31_536_000 || !includeSubDomains)) {
    throw new InvalidOptionsError(
      "securityHeaders: HSTS preload needs maxAge >= 31536000 and includeSubDomains",
    );
  }
  return `max-age=${maxAge}${includeSubDomains ? "; includeSubDomains" : ""}${preload ? "; preload" : ""}`;
}

function referrerPolicy(value: ReferrerPolicyToken | readonly ReferrerPolicyToken[]): string {
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list) || list.length === 0) {
    throw new InvalidOptionsError("securityHeaders: referrerPolicy must name at least one policy");
  }
  return list.map((token) => oneOf("referrerPolicy", token, REFERRER_POLICIES)).join(", ");
}

function flag(option: string, value: unknown): boolean {
  if (typeof value !== "boolean") {
    throw new InvalidOptionsError(`securityHeaders: ${option} must be a boolean`);
  }
  return value;
}

function withoutUndefined<T extends object>(options: T): Partial<T> {
  const copy: Partial<T> = {};
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined) (copy as Record<string, unknown>)[key] = value;
  }
  return copy;
}
