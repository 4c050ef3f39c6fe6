/**
 * The default Content Security Policy, in one home: the headers leg starts
 * from it, and the pages the agent endpoints answer with carry it themselves
 * (they sit on other rooms than the headers leg and must not depend on it
 * being in the chain).
 */

/**
 * The default policy: everything from the page's own origin only, no plugins,
 * no `<base>` or form hijacking, framing by the same origin only (matching
 * `X-Frame-Options: SAMEORIGIN`), no inline scripts or `on*=` attributes;
 * styles and fonts may also come over HTTPS (and fonts and images as `data:`)
 * and inline styles are allowed, because most pages and CSS frameworks need
 * them and they cannot run script.
 *
 * `upgrade-insecure-requests` is added for requests served over HTTPS only:
 * on a plain-HTTP page (local development) it would send the page's own
 * subresources to an HTTPS port nothing listens on. Set it to `true` to send it
 * always, or `false` never.
 */
export const DEFAULT_CSP_DIRECTIVES: Readonly<Record<string, readonly string[]>> = frozen({
  "default-src": ["'self'"],
  "base-uri": ["'self'"],
  "font-src": ["'self'", "https:", "data:"],
  "form-action": ["'self'"],
  "frame-ancestors": ["'self'"],
  "img-src": ["'self'", "data:"],
  "object-src": ["'none'"],
  "script-src": ["'self'"],
  "script-src-attr": ["'none'"],
  "style-src": ["'self'", "https:", "'unsafe-inline'"],
});

/**
 * The default policy with some directives replaced, as a header value;
 * `upgrade-insecure-requests` when the page is served over HTTPS, as the
 * headers leg adds it by default. The sources are the caller's own, never a
 * request's: they are not checked here.
 */
export function defaultPolicyWith(
  replaced: Readonly<Record<string, readonly string[]>>,
  https: boolean,
): string {
  const directives = { ...DEFAULT_CSP_DIRECTIVES, ...replaced };
  const parts = Object.entries(directives).map(([name, sources]) => `${name} ${sources.join(" ")}`);
  if (https) parts.push("upgrade-insecure-requests");
  return parts.join("; ");
}

// Frozen to the sources: every page that carries the policy reads this one object.
function frozen(directives: Record<string, string[]>): Readonly<Record<string, readonly string[]>> {
  for (const sources of Object.values(directives)) Object.freeze(sources);
  return Object.freeze(directives);
}
