import {
  AUTHORIZATION_VERIFIED,
  bindAuthentication,
  createAuthentication,
  ENDPOINT_AUTHENTICATES,
} from "../core/authentication.ts";
import { addChallenge, challenge, unauthorizedResponse } from "../core/challenge.ts";
import { contextFrom } from "../core/context.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import { directLeg, type Middleware } from "../core/handler.ts";
import { rejectUnknownKeys } from "../core/options.ts";
import {
  mustPasswordCredentials,
  type PasswordCredentials,
  refusedResponse,
} from "./credentials.ts";

/**
 * Options of `basicAuth`.
 *
 * @example
 * ```ts
 * import { basicAuth, newHandler } from "portcullis";
 *
 * const handler = newHandler(app.fetch, {
 *   // An authenticator: API clients may send Basic, browsers keep their session.
 *   authentication: basicAuth({ credentials, realm: "api", required: false }),
 *   authorization,
 * });
 * ```
 */
export interface BasicAuthOptions {
  /**
   * The users, password encoder and failure throttle:
   * `passwordCredentials({ findUser })`. Give `login` the same object, so Basic
   * guesses and form logins spend one per-user and per-client budget.
   */
  readonly credentials: PasswordCredentials;
  /**
   * Realm in the `WWW-Authenticate` challenge.
   *
   * @default "portcullis"
   */
  readonly realm?: string | undefined;
  /**
   * `true`: a guard; requests without valid Basic credentials get 401.
   * `false`: an authenticator in the chain; requests without a Basic
   * `Authorization` header go on (anonymous, or as a session made them), while
   * wrong or malformed Basic credentials still get 401. In this mode the Basic
   * challenge is not offered to browser page navigations (`Sec-Fetch-Mode:
   * navigate`), so a site that signs users in with a form does not pop up the
   * browser's Basic dialog on every 401.
   *
   * @default true
   */
  readonly required?: boolean | undefined;
}

/** Longest `Authorization` value read; RFC 7617 credentials are short. */
const MAX_HEADER_LENGTH = 4096;
const utf8 = new TextDecoder("utf-8", { fatal: true });
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * HTTP Basic authentication (RFC 7617) against `credentials`. A malformed
 * header is a failed login (401), never an error. Wrong guesses count against
 * the credentials' throttle like form logins: once a username's or a client's
 * budget is spent the answer is 429 with `Retry-After` (no password is
 * checked, the right one included), and a failing attempt store answers 503.
 */
export function basicAuth(options: BasicAuthOptions): Middleware {
  rejectUnknownKeys("basicAuth", options, ["credentials", "realm", "required"]);
  const credentials = mustPasswordCredentials("basicAuth", options?.credentials);
  const realm = options.realm ?? "portcullis";
  let offered: string;
  try {
    if (typeof realm !== "string") throw new TypeError("realm must be a string");
    offered = challenge("Basic", { realm, charset: "UTF-8" });
  } catch (cause) {
    throw new InvalidOptionsError("basicAuth realm must be a string without control characters", {
      cause,
    });
  }
  const required = options.required ?? true;
  if (typeof required !== "boolean")
    throw new InvalidOptionsError("basicAuth required must be a boolean");

  return directLeg((next) => (request, ...rest) => {
    if (required || request.headers.get("sec-fetch-mode") !== "navigate")
      addChallenge(request, offered);
    // An earlier authenticator (an agent's client credentials) verified the header, or the
    // endpoint authenticates its callers itself and answers in its own protocol.
    const context = contextFrom(request);
    if (
      context.get(AUTHORIZATION_VERIFIED) === true ||
      context.get(ENDPOINT_AUTHENTICATES) === true
    )
      return next(request, ...rest);
    const header = request.headers.get("authorization");
    if (header === null || !/^basic(?: |$)/i.test(header)) {
      return required ? unauthorizedResponse(request) : next(request, ...rest);
    }
    const presented = parseBasic(header);
    if (presented === undefined) return unauthorizedResponse(request);
    return credentials
      .check(request, presented.username, presented.password)
      .then((check): Response | Promise<Response> => {
        if (check.outcome === "throttled" || check.outcome === "unavailable")
          return refusedResponse(check);
        if (check.outcome !== "authenticated") return unauthorizedResponse(request);
        bindAuthentication(request, createAuthentication(check.user.name, check.user.authorities));
        return next(request, ...rest);
      });
  });
}

/** Parses `Basic <base64(user:pass)>`; `undefined` for anything malformed. */
export function parseBasic(header: string): { username: string; password: string } | undefined {
  if (header.length > MAX_HEADER_LENGTH) return undefined;
  const token = header.slice(5).trim();
  if (!BASE64.test(token)) return undefined;
  let decoded: string;
  try {
    const binary = atob(token);
    if (PRINTABLE_ASCII.test(binary)) {
      // Its own UTF-8 decoding, with no control character: nothing to decode or check.
      decoded = binary;
    } else {
      const bytes = new Uint8Array(binary.length);
      for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
      decoded = utf8.decode(bytes);
      // biome-ignore lint/suspicious/noControlCharactersInRegex: RFC 7617 forbids control characters in both parts.
      if (/[\u0000-\u001f\u007f]/.test(decoded)) return undefined;
    }
  } catch {
    return undefined;
  }
  const colon = decoded.indexOf(":");
  if (colon <= 0) return undefined;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
