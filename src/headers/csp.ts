import { DEFAULT_CSP_DIRECTIVES } from "../core/content-security-policy.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { kebabCase } from "./validate.ts";

export { DEFAULT_CSP_DIRECTIVES };

/**
 * One CSP directive: a list of source expressions (`["'self'", "https:"]`, or
 * one space-separated string), `true` for a directive without a value
 * (`upgrade-insecure-requests`, `block-all-mixed-content`, a bare `sandbox`),
 * or `false`/`null` to drop a default directive.
 */
export type CspDirectiveValue = readonly string[] | string | boolean | null;

/**
 * Directives keyed by name, in kebab-case (`"script-src"`) or camelCase
 * (`scriptSrc`). Unknown names are refused, so a typo cannot silently drop a
 * restriction.
 */
export type CspDirectives = Readonly<Record<string, CspDirectiveValue>>;

/**
 * The `contentSecurityPolicy` option of `securityHeaders`.
 *
 * @example
 * ```ts
 * import { cspNonce, securityHeaders } from "portcullis";
 *
 * const headers = securityHeaders({
 *   contentSecurityPolicy: {
 *     directives: { "connect-src": ["'self'", "https://api.example.com"] },
 *     nonce: true, // read it in the page with cspNonce(request)
 *   },
 * });
 * ```
 */
export interface ContentSecurityPolicyOptions {
  /**
   * Directives merged over `DEFAULT_CSP_DIRECTIVES` (or used alone when
   * `useDefaults` is false).
   *
   * @default none — the defaults apply unchanged
   */
  readonly directives?: CspDirectives;
  /**
   * Start from `DEFAULT_CSP_DIRECTIVES`.
   *
   * @default true
   */
  readonly useDefaults?: boolean;
  /**
   * A fresh nonce per request (128 bits from Web Crypto, 32 hex digits), added as
   * `'nonce-…'` to `script-src` and `style-src` (to `default-src` for either
   * that is absent) and readable downstream with `cspNonce(request)`. Browsers
   * ignore `'unsafe-inline'` in a directive that carries a nonce, so inline
   * styles then need the nonce too.
   *
   * @default false
   */
  readonly nonce?: boolean;
  /**
   * Send `Content-Security-Policy-Report-Only` instead, to try a policy out.
   * `upgrade-insecure-requests` is left out there (browsers ignore it in
   * report-only policies).
   *
   * @default false
   */
  readonly reportOnly?: boolean;
}

const KNOWN_DIRECTIVES = new Set([
  "base-uri",
  "block-all-mixed-content",
  "child-src",
  "connect-src",
  "default-src",
  "fenced-frame-src",
  "font-src",
  "form-action",
  "frame-ancestors",
  "frame-src",
  "img-src",
  "manifest-src",
  "media-src",
  "object-src",
  "report-to",
  "report-uri",
  "require-trusted-types-for",
  "sandbox",
  "script-src",
  "script-src-attr",
  "script-src-elem",
  "style-src",
  "style-src-attr",
  "style-src-elem",
  "trusted-types",
  "upgrade-insecure-requests",
  "webrtc",
  "worker-src",
]);

const VALUELESS = new Set(["upgrade-insecure-requests", "block-all-mixed-content", "sandbox"]);

// Keywords that only mean something quoted; unquoted they name a host called "self".
const BARE_KEYWORDS = new Set([
  "self",
  "none",
  "unsafe-inline",
  "unsafe-eval",
  "unsafe-hashes",
  "strict-dynamic",
  "report-sample",
  "wasm-unsafe-eval",
]);

// Visible ASCII without `;` (directive separator) and `,` (policy separator).
const SOURCE = /^[\x21-\x2b\x2d-\x3a\x3c-\x7e]+$/;
const QUOTED = /^'[A-Za-z0-9+/=_-]+'$/;

/** A compiled policy: the header name and either a fixed value or the pieces a nonce is put between. */
export interface CompiledCsp {
  readonly name: "content-security-policy" | "content-security-policy-report-only";
  /** The policy for HTTPS requests, split where the nonce goes (one piece without nonces). */
  readonly https: readonly string[];
  /** The policy for plain-HTTP requests, split the same way. */
  readonly http: readonly string[];
  readonly nonce: boolean;
}

/** Validates and serializes the policy once, when the leg is built. */
export function compileCsp(options: ContentSecurityPolicyOptions): CompiledCsp {
  if (typeof options !== "object" || options === null) {
    throw new InvalidOptionsError(
      "securityHeaders: contentSecurityPolicy must be an object or false",
    );
  }
  rejectUnknownKeys("securityHeaders: contentSecurityPolicy", options, [
    "directives",
    "useDefaults",
    "nonce",
    "reportOnly",
  ]);
  const useDefaults = options.useDefaults ?? true;
  const nonce = options.nonce ?? false;
  const reportOnly = options.reportOnly ?? false;
  for (const [key, value] of Object.entries({ useDefaults, nonce, reportOnly })) {
    if (typeof value !== "boolean") {
      throw new InvalidOptionsError(
        `securityHeaders: contentSecurityPolicy.${key} must be a boolean`,
      );
    }
  }

  const directives = new Map<string, readonly string[]>();
  if (useDefaults) {
    for (const [name, sources] of Object.entries(DEFAULT_CSP_DIRECTIVES))
      directives.set(name, sources);
  }
  // undefined: the default (HTTPS requests only); true/false: always/never.
  let upgrade: boolean | undefined = useDefaults ? undefined : false;
  const seen = new Set<string>();
  const given = options.directives ?? {};
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    throw new InvalidOptionsError(
      "securityHeaders: contentSecurityPolicy.directives must be an object",
    );
  }
  for (const [key, value] of Object.entries(given)) {
    const name = kebabCase(key);
    if (!KNOWN_DIRECTIVES.has(name)) {
      throw new InvalidOptionsError(
        `securityHeaders: unknown CSP directive ${JSON.stringify(key)}`,
      );
    }
    if (seen.has(name)) {
      throw new InvalidOptionsError(`securityHeaders: CSP directive ${name} is given twice`);
    }
    seen.add(name);
    if (name === "upgrade-insecure-requests") {
      if (value !== null && typeof value !== "boolean") {
        throw new InvalidOptionsError(
          "securityHeaders: upgrade-insecure-requests takes true or false",
        );
      }
      upgrade = value === true;
      continue;
    }
    if (value === false || value === null) directives.delete(name);
    else if (value === true) {
      if (!VALUELESS.has(name)) {
        throw new InvalidOptionsError(`securityHeaders: CSP directive ${name} needs sources`);
      }
      directives.set(name, []);
    } else directives.set(name, sources(name, value));
  }
  if (reportOnly) upgrade = false;
  if (directives.size === 0 && upgrade !== true) {
    throw new InvalidOptionsError(
      "securityHeaders: the CSP has no directives; pass false to omit it",
    );
  }

  const targets = new Set<string>();
  if (nonce) {
    for (const kind of ["script-src", "style-src"]) {
      const target = directives.has(kind) ? kind : "default-src";
      if (!directives.has(target)) continue;
      if (directives.get(target)?.includes("'none'")) {
        throw new InvalidOptionsError(
          `securityHeaders: a nonce in ${target} 'none' would allow scripts the policy forbids`,
        );
      }
      targets.add(target);
    }
    if (targets.size === 0) {
      throw new InvalidOptionsError(
        "securityHeaders: CSP nonces need script-src, style-src or default-src",
      );
    }
  }

  return {
    name: reportOnly ? "content-security-policy-report-only" : "content-security-policy",
    https: serialize(directives, targets, upgrade !== false),
    http: serialize(directives, targets, upgrade === true),
    nonce,
  };
}

function sources(name: string, value: CspDirectiveValue): readonly string[] {
  const list = typeof value === "string" ? value.split(/[ \t]+/).filter((s) => s !== "") : value;
  if (!Array.isArray(list) || list.length === 0) {
    throw new InvalidOptionsError(
      `securityHeaders: CSP directive ${name} needs a non-empty list of sources (use "'none'" to allow nothing)`,
    );
  }
  for (const source of list) {
    if (typeof source !== "string" || !SOURCE.test(source)) {
      throw new InvalidOptionsError(
        `securityHeaders: CSP directive ${name} has an invalid source ${JSON.stringify(source)}`,
      );
    }
    if (BARE_KEYWORDS.has(source.toLowerCase())) {
      throw new InvalidOptionsError(
        `securityHeaders: CSP keyword ${source} in ${name} must be quoted: "'${source}'"`,
      );
    }
    if (source.startsWith("'") && !QUOTED.test(source)) {
      throw new InvalidOptionsError(
        `securityHeaders: CSP directive ${name} has a malformed quoted source ${source}`,
      );
    }
    if (/^'nonce-/i.test(source)) {
      throw new InvalidOptionsError(
        "securityHeaders: a fixed CSP nonce protects nothing; use contentSecurityPolicy.nonce: true",
      );
    }
  }
  if (list.length > 1 && list.includes("'none'")) {
    throw new InvalidOptionsError(
      `securityHeaders: 'none' in ${name} is ignored next to other sources; use it alone`,
    );
  }
  return Object.freeze([...list]);
}

/** The policy split at the nonce insertion points: join the pieces with ` 'nonce-…'`. */
function serialize(
  directives: ReadonlyMap<string, readonly string[]>,
  nonceTargets: ReadonlySet<string>,
  upgrade: boolean,
): readonly string[] {
  const pieces: string[] = [];
  let current = "";
  let separator = "";
  for (const [name, list] of directives) {
    current += separator + (list.length === 0 ? name : `${name} ${list.join(" ")}`);
    separator = "; ";
    if (nonceTargets.has(name)) {
      pieces.push(current);
      current = "";
    }
  }
  if (upgrade) current += `${separator}upgrade-insecure-requests`;
  pieces.push(current);
  return Object.freeze(pieces);
}
