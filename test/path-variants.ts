/**
 * Spellings of the protected path `/admin/x` that routers and proxies are known
 * to read differently. Each one must be refused (`normalizePath` gives
 * `undefined`, the chain answers 400) or normalized to exactly `/admin/x`, so it
 * gets the plain path's decision.
 */
export interface PathVariant {
  readonly label: string;
  readonly raw: string;
  /** What `normalizePath(raw)` must return. */
  readonly normalized: "/admin/x" | undefined;
  /**
   * Set when the WHATWG URL parser turns `raw` into a path outside `/admin`: a
   * Fetch router then routes that other path, so its own decision applies.
   */
  readonly urlParserGives?: string;
}

const MAX_PATH_LENGTH = 8192;

export const PROTECTED_PATH_VARIANTS: readonly PathVariant[] = [
  { label: "upper case", raw: "/ADMIN/x", normalized: "/admin/x" },
  { label: "mixed case", raw: "/Admin/X", normalized: "/admin/x" },
  { label: "leading double slash", raw: "//admin/x", normalized: "/admin/x" },
  { label: "inner double slash", raw: "/admin//x", normalized: "/admin/x" },
  { label: "trailing slash", raw: "/admin/x/", normalized: "/admin/x" },
  { label: "encoded letter", raw: "/%61dmin/x", normalized: "/admin/x" },
  { label: "encoded upper-case letter", raw: "/%41DMIN/x", normalized: "/admin/x" },
  { label: "double-encoded letter", raw: "/%2561dmin/x", normalized: undefined },
  { label: "encoded slash (upper hex)", raw: "/admin%2Fx", normalized: undefined },
  { label: "encoded slash (lower hex)", raw: "/admin%2fx", normalized: undefined },
  { label: "encoded dot-dot (lower hex)", raw: "/public/%2e%2e/admin/x", normalized: undefined },
  { label: "encoded dot-dot (upper hex)", raw: "/public/%2E%2E/admin/x", normalized: undefined },
  { label: "half-encoded dot-dot", raw: "/public/.%2e/admin/x", normalized: undefined },
  { label: "dot-dot segment", raw: "/public/../admin/x", normalized: undefined },
  { label: "dot segment", raw: "/admin/./x", normalized: undefined },
  {
    label: "dot segment under /public",
    raw: "/public/./admin/x",
    normalized: undefined,
    urlParserGives: "/public/admin/x",
  },
  { label: "trailing dot segment", raw: "/admin/x/.", normalized: undefined },
  { label: "dot-dot with path parameter", raw: "/public/..;/admin/x", normalized: undefined },
  { label: "path parameter", raw: "/admin;jsessionid=1/x", normalized: undefined },
  { label: "encoded semicolon", raw: "/admin%3bjsessionid=1/x", normalized: undefined },
  { label: "backslash dot-dot", raw: "/public\\..\\admin/x", normalized: undefined },
  { label: "encoded backslash", raw: "/admin/x%5c", normalized: undefined },
  { label: "encoded backslash (upper hex)", raw: "/admin/x%5C", normalized: undefined },
  { label: "encoded NUL", raw: "/admin/x%00", normalized: undefined },
  { label: "raw NUL", raw: "/admin/x\u0000", normalized: undefined },
  { label: "encoded newline", raw: "/admin/x%0a", normalized: undefined },
  { label: "raw tab", raw: "/admin/x\t", normalized: undefined },
  { label: "encoded DEL", raw: "/admin/x%7f", normalized: undefined },
  { label: "invalid escape %zz", raw: "/admin/x%zz", normalized: undefined },
  { label: "truncated escape %4", raw: "/admin/x%4", normalized: undefined },
  { label: "truncated escape before a slash", raw: "/admin/%4/x", normalized: undefined },
  { label: "invalid UTF-8 byte", raw: "/admin/x%ff", normalized: undefined },
  { label: "overlong UTF-8 slash", raw: "/admin%c0%afx", normalized: undefined },
  { label: "truncated UTF-8 sequence", raw: "/admin/x%c3", normalized: undefined },
  { label: "raw non-ASCII", raw: "/admin/x\u00e9", normalized: undefined },
  {
    label: "longer than MAX_PATH_LENGTH",
    raw: `/admin/x/${"a".repeat(MAX_PATH_LENGTH)}`,
    normalized: undefined,
  },
];
