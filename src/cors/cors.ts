import { CheckedFields } from "../core/checked-fields.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { directLeg, type Middleware, onAnswer } from "../core/handler.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import { parseOrigin } from "../core/origin.ts";
import { problemResponse } from "../core/problem.ts";
import { setAbsent, setIfAbsent, withHeaders } from "../core/response.ts";

/** Decides whether `origin` may read responses; only `true` allows (a truthy non-boolean does not). */
export type CorsOriginFunction = (origin: string, request: Request) => boolean | Promise<boolean>;

/**
 * Options of `cors`.
 *
 * @example
 * ```ts
 * import { cors, csrf, newHandler } from "portcullis";
 *
 * const handler = newHandler(app.fetch, {
 *   cors: cors({
 *     origin: ["https://app.example.com", "https://admin.example.com"],
 *     credentials: true, // the front end sends the session cookie
 *     exposedHeaders: ["RateLimit"],
 *   }),
 *   // The same origins may send state-changing requests.
 *   csrf: csrf({ trustedOrigins: ["https://app.example.com", "https://admin.example.com"] }),
 *   authorization,
 * });
 * ```
 */
export interface CorsOptions {
  /**
   * Which origins may read responses. Required; no default.
   * - an exact serialized origin (`"https://app.example.com"`) or a list of
   *   them: `scheme://host[:port]`, http or https, no path or trailing slash,
   *   default port left out, non-ASCII hosts in punycode. Matched exactly,
   *   ignoring case; subdomains, other ports and other schemes do not match;
   * - `"*"`: any origin, answered with `Access-Control-Allow-Origin: *`;
   *   refused with `credentials`;
   * - a function, called with the request's `Origin` header once it has the
   *   shape `scheme://host[:port]`.
   * `Origin: null` (sandboxed frames, `file:` pages, some redirects) is never
   * allowed, except under `"*"`.
   */
  readonly origin: string | readonly string[] | CorsOriginFunction;
  /**
   * Let allowed origins send cookies and HTTP authentication and read the
   * answer (`Access-Control-Allow-Credentials: true`).
   *
   * @default false
   */
  readonly credentials?: boolean;
  /**
   * Methods a preflight may ask for, compared case-sensitively as Fetch does
   * (write `PATCH`: browsers send a lower-case `patch` as it is, and it does
   * not match). Upper-cased when the leg is built.
   *
   * @default ["GET", "HEAD", "PUT", "PATCH", "POST", "DELETE"]
   */
  readonly methods?: readonly string[];
  /**
   * Request headers a preflight may ask for, compared ignoring case; a
   * preflight asking for another is refused. An explicit list rather than
   * reflecting whatever is asked. `"*"` allows any (never `Authorization`,
   * which browsers require by name), and is refused with `credentials`.
   *
   * @default ["Content-Type", "Authorization", "X-CSRF-Token"]
   */
  readonly allowedHeaders?: readonly string[] | "*";
  /**
   * Response headers, beyond the CORS-safelisted ones, that scripts of an
   * allowed origin may read. `"*"` is refused with `credentials`.
   *
   * @default [] (only the safelisted ones)
   */
  readonly exposedHeaders?: readonly string[] | "*";
  /**
   * Seconds a browser may cache a preflight answer (Chromium caps it at 7200).
   *
   * @default 600
   */
  readonly maxAge?: number;
}

/** The defaults of the optional `cors` options, as documented on `CorsOptions`. */
export const CORS_DEFAULTS = Object.freeze({
  credentials: false,
  methods: Object.freeze(["GET", "HEAD", "PUT", "PATCH", "POST", "DELETE"]),
  allowedHeaders: Object.freeze(["Content-Type", "Authorization", "X-CSRF-Token"]),
  exposedHeaders: Object.freeze([] as string[]),
  maxAge: 600,
} as const) satisfies Required<Omit<CorsOptions, "origin">>;

const OPTION_NAMES = ["origin", ...Object.keys(CORS_DEFAULTS)];
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Fetch forbids these methods outright; listing them would suggest they work.
const FORBIDDEN_METHODS = new Set(["CONNECT", "TRACE", "TRACK"]);
// The shape of a serialized origin, any scheme: no path, query, userinfo or spaces.
const ORIGIN_SHAPE = /^[a-z][a-z0-9+.-]*:\/\/[^/?#@\s\\]+$/i;
const PREFLIGHT_VARY = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers";

/**
 * CORS (chain leg 2). Answers a preflight (`OPTIONS` with `Origin` and
 * `Access-Control-Request-Method`) itself, never passing it on: `204` with the
 * allow headers when the origin, method and headers are allowed, otherwise a
 * `403` problem without CORS headers. A bare `OPTIONS` goes on down the chain.
 *
 * Other requests always go on: CORS decides which origins may read a
 * response, not who may act. An allowed origin gets
 * `Access-Control-Allow-Origin` (its exact origin, or `*` under `"*"`) and the
 * credentials and expose headers on whatever comes back, later legs' 401, 403
 * and 429 included, so it can read its error. A refused origin gets no CORS
 * header and its browser withholds the response. Except under `"*"`, every
 * response carries `Vary: Origin`, appended to any existing `Vary`.
 */
export function cors(options: CorsOptions): Middleware {
  if (typeof options !== "object" || options === null) {
    throw new InvalidOptionsError("cors: options with an `origin` are required");
  }
  rejectUnknownKeys("cors", options, OPTION_NAMES);
  const credentials = options.credentials ?? CORS_DEFAULTS.credentials;
  if (typeof credentials !== "boolean") {
    throw new InvalidOptionsError("cors: credentials must be a boolean");
  }
  const allow = originPolicy(options.origin, credentials);
  const methods = methodList(options.methods ?? CORS_DEFAULTS.methods);
  const allowedHeaders = headerList(
    "allowedHeaders",
    options.allowedHeaders ?? CORS_DEFAULTS.allowedHeaders,
    credentials,
  );
  const exposedHeaders = headerList(
    "exposedHeaders",
    options.exposedHeaders ?? CORS_DEFAULTS.exposedHeaders,
    credentials,
  );
  const maxAge = options.maxAge ?? CORS_DEFAULTS.maxAge;
  if (!Number.isSafeInteger(maxAge) || maxAge < 0) {
    throw new InvalidOptionsError("cors: maxAge must be a whole number of seconds");
  }

  const wildcard = allow === "*";
  const allowedHeaderNames =
    allowedHeaders === "*" ? undefined : new Set(allowedHeaders.map((h) => h.toLowerCase()));
  const allowMethods = [...methods].join(", ");
  const allowHeaders = allowedHeaders === "*" ? "*" : allowedHeaders.join(", ");
  const exposeHeaders = exposedHeaders === "*" ? "*" : exposedHeaders.join(", ");
  const maxAgeValue = String(maxAge);
  // With a list of origins, the fields an allowed origin's answer gets are known now: checked
  // once here, added per request as map work.
  const answerFields = (value: string): [string, string][] => {
    const fields: [string, string][] = [["access-control-allow-origin", value]];
    if (credentials) fields.push(["access-control-allow-credentials", "true"]);
    if (exposeHeaders !== "") fields.push(["access-control-expose-headers", exposeHeaders]);
    return fields;
  };
  const fieldsByOrigin =
    allow instanceof Set
      ? new Map([...allow].map((value) => [value, new CheckedFields(answerFields(value))]))
      : undefined;

  return directLeg((next) => (request, ...rest) => {
    const origin = request.headers.get("origin");
    const requestMethod =
      request.method === "OPTIONS" && origin !== null
        ? request.headers.get("access-control-request-method")
        : null;

    if (requestMethod !== null) return preflight(request, origin as string, requestMethod);

    // Decided before the downstream runs, so a slow or throwing decision cannot follow its side effects.
    let decided: string | undefined | Promise<string | undefined>;
    if (origin !== null) decided = allowedOriginOf(allow, origin, request);
    else if (wildcard) decided = "*";
    if (decided instanceof Promise)
      return decided.then((allowedOrigin) => decorate(next(request, ...rest), allowedOrigin));
    return decorate(next(request, ...rest), decided);
  });

  async function preflight(
    request: Request,
    origin: string,
    requestMethod: string,
  ): Promise<Response> {
    const decided = allowedOriginOf(allow, origin, request);
    const allowedOrigin = decided instanceof Promise ? await decided : decided;
    if (
      allowedOrigin === undefined ||
      !methods.has(requestMethod) ||
      !headersAllowed(request.headers.get("access-control-request-headers"), allowedHeaderNames)
    ) {
      return problemResponse(403, {
        detail: "The cross-origin request is not allowed.",
        headers: { vary: PREFLIGHT_VARY },
      });
    }
    const headers = new Headers({
      "access-control-allow-origin": allowedOrigin,
      "access-control-allow-methods": allowMethods,
      "access-control-max-age": maxAgeValue,
      vary: PREFLIGHT_VARY,
    });
    if (allowHeaders !== "") headers.set("access-control-allow-headers", allowHeaders);
    if (credentials) headers.set("access-control-allow-credentials", "true");
    return new Response(null, { status: 204, headers });
  }

  function decorate(
    answer: Response | Promise<Response>,
    allowedOrigin: string | undefined,
  ): Response | Promise<Response> {
    return onAnswer(answer, (response) =>
      withHeaders(response, (headers) => {
        if (!wildcard) addVaryOrigin(headers);
        if (allowedOrigin === undefined) return;
        const fields = fieldsByOrigin?.get(allowedOrigin);
        if (fields !== undefined) {
          setAbsent(headers, fields);
          return;
        }
        setIfAbsent(headers, "access-control-allow-origin", allowedOrigin);
        if (credentials) setIfAbsent(headers, "access-control-allow-credentials", "true");
        if (exposeHeaders !== "")
          setIfAbsent(headers, "access-control-expose-headers", exposeHeaders);
      }),
    );
  }
}

type OriginPolicy = "*" | ReadonlySet<string> | CorsOriginFunction;

function originPolicy(origin: CorsOptions["origin"], credentials: boolean): OriginPolicy {
  if (typeof origin === "function") return origin;
  if (origin === "*") {
    if (credentials) {
      throw new InvalidOptionsError(
        'cors: origin "*" cannot be combined with credentials; list the allowed origins',
      );
    }
    return "*";
  }
  const list = typeof origin === "string" ? [origin] : origin;
  if (!Array.isArray(list) || list.length === 0) {
    throw new InvalidOptionsError(
      'cors: origin must be an origin, a non-empty list of origins, "*" or a function',
    );
  }
  const set = new Set<string>();
  for (const entry of list) set.add(serializedOrigin(entry));
  return set;
}

/** The canonical, lower-case form of a configured origin; throws on anything else. */
function serializedOrigin(entry: unknown): string {
  if (typeof entry !== "string") throw new InvalidOptionsError("cors: origins must be strings");
  if (entry === "*") {
    throw new InvalidOptionsError('cors: "*" must be the whole origin option, not a list entry');
  }
  if (entry.includes("*")) {
    throw new InvalidOptionsError(
      `cors: ${JSON.stringify(entry)}: origins have no wildcards; list each origin or pass a function`,
    );
  }
  return parseOrigin("cors", entry);
}

/**
 * The value for `Access-Control-Allow-Origin`, or `undefined` when `origin` is
 * refused; a promise only when an async origin function has to be waited for.
 */
function allowedOriginOf(
  allow: OriginPolicy,
  origin: string,
  request: Request,
): string | undefined | Promise<string | undefined> {
  if (allow === "*") return "*";
  if (typeof allow !== "function") {
    const lower = origin.toLowerCase();
    return allow.has(lower) ? lower : undefined;
  }
  if (!ORIGIN_SHAPE.test(origin)) return undefined; // "null" and malformed values never reach the function
  const verdict = allow(origin, request);
  if (typeof verdict === "boolean") return verdict ? origin : undefined;
  return Promise.resolve(verdict).then((v) => (v === true ? origin : undefined));
}

function methodList(methods: readonly string[]): ReadonlySet<string> {
  if (!Array.isArray(methods) || methods.length === 0) {
    throw new InvalidOptionsError("cors: methods must be a non-empty list");
  }
  const set = new Set<string>();
  for (const method of methods) {
    if (typeof method !== "string" || !TOKEN.test(method)) {
      throw new InvalidOptionsError(`cors: ${JSON.stringify(method)} is not a method name`);
    }
    const upper = method.toUpperCase();
    if (FORBIDDEN_METHODS.has(upper)) {
      throw new InvalidOptionsError(`cors: browsers never send ${upper}; remove it from methods`);
    }
    set.add(upper);
  }
  return set;
}

function headerList(
  option: string,
  value: readonly string[] | "*",
  credentials: boolean,
): readonly string[] | "*" {
  if (value === "*") {
    if (credentials) {
      throw new InvalidOptionsError(
        `cors: ${option} "*" is taken literally by browsers when credentials are on; list the headers`,
      );
    }
    return "*";
  }
  if (!Array.isArray(value)) {
    throw new InvalidOptionsError(`cors: ${option} must be a list of header names or "*"`);
  }
  for (const name of value) {
    if (typeof name !== "string" || !TOKEN.test(name)) {
      throw new InvalidOptionsError(
        `cors: ${option} has an invalid header name ${JSON.stringify(name)}`,
      );
    }
  }
  return Object.freeze([...value]);
}

/** Every header a preflight asks for is allowed; `allowed` undefined means `"*"`. */
function headersAllowed(
  requested: string | null,
  allowed: ReadonlySet<string> | undefined,
): boolean {
  if (requested === null) return true;
  for (const part of requested.split(",")) {
    const name = part.trim().toLowerCase();
    if (name === "") continue;
    if (!TOKEN.test(name)) return false;
    if (allowed !== undefined && !allowed.has(name)) return false;
  }
  return true;
}

const VARY_ORIGIN = new CheckedFields([["vary", "Origin"]]);

/** Appends `Origin` to `Vary` unless it, or `*`, is already there. */
function addVaryOrigin(headers: Headers): void {
  const vary = headers.get("vary");
  if (vary === null) {
    setAbsent(headers, VARY_ORIGIN);
    return;
  }
  if (vary.trim() === "") {
    headers.set("vary", "Origin");
    return;
  }
  for (const part of vary.split(",")) {
    const token = part.trim().toLowerCase();
    if (token === "origin" || token === "*") return;
  }
  headers.set("vary", `${vary}, Origin`);
}
