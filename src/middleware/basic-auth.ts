import { bindAuthentication, createAuthentication } from "../core/authentication.ts";
import { addChallenge, quotedString, unauthorizedResponse } from "../core/challenge.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Middleware } from "../core/handler.ts";
import { timingSafeEqual } from "../core/timing-safe.ts";

/** A user as `basicAuth` looks it up. */
export interface BasicAuthUser {
  readonly name: string;
  readonly authorities: readonly string[];
  /** The stored credential handed to `verifyPassword` (a hash, with a password encoder). */
  readonly password: string;
}

export interface BasicAuthOptions {
  /** Looks a user up by the presented username; `undefined` when there is none. */
  readonly findUser: (
    username: string,
  ) => BasicAuthUser | undefined | Promise<BasicAuthUser | undefined>;
  /**
   * Checks a presented password against the stored one.
   * Default: constant-time equality, for stored secrets that are not hashed.
   */
  readonly verifyPassword?: (presented: string, stored: string) => boolean | Promise<boolean>;
  /**
   * Stored credential checked when the user does not exist, so an unknown user
   * costs as much as a wrong password. Default: a fixed string, enough for the
   * default `verifyPassword`; give a real hash when `verifyPassword` hashes.
   */
  readonly unknownUserPassword?: string;
  /** Realm in the `WWW-Authenticate` challenge. Default `"portcullis"`. */
  readonly realm?: string;
  /**
   * `true` (default): a guard; requests without valid Basic credentials get 401.
   * `false`: an authenticator in the chain; requests without a Basic
   * `Authorization` header go on (anonymous, or as a session made them), while
   * wrong or malformed Basic credentials still get 401. In this mode the Basic
   * challenge is not offered to browser page navigations (`Sec-Fetch-Mode:
   * navigate`), so a site that signs users in with a form does not pop up the
   * browser's Basic dialog on every 401.
   */
  readonly required?: boolean;
}

/** Longest `Authorization` value read; RFC 7617 credentials are short. */
const MAX_HEADER_LENGTH = 4096;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * HTTP Basic authentication (RFC 7617) with a pluggable user lookup and
 * password check. A malformed header is a failed login (401), never an error.
 */
export function basicAuth(options: BasicAuthOptions): Middleware {
  if (typeof options?.findUser !== "function") {
    throw new InvalidOptionsError("basicAuth needs a findUser function");
  }
  const verify = options.verifyPassword ?? timingSafeEqual;
  if (typeof verify !== "function")
    throw new InvalidOptionsError("basicAuth verifyPassword must be a function");
  const realm = options.realm ?? "portcullis";
  let challenge: string;
  try {
    challenge = `Basic realm=${quotedString(realm)}, charset="UTF-8"`;
  } catch (cause) {
    throw new InvalidOptionsError("basicAuth realm cannot carry control characters", { cause });
  }
  const required = options.required ?? true;
  const unknownUserPassword = options.unknownUserPassword ?? "portcullis-unknown-user";

  return (next) =>
    async (request, ...rest) => {
      if (required || request.headers.get("sec-fetch-mode") !== "navigate")
        addChallenge(request, challenge);
      const header = request.headers.get("authorization");
      if (header === null || !/^basic(?: |$)/i.test(header)) {
        return required ? unauthorizedResponse(request) : next(request, ...rest);
      }
      const credentials = parseBasic(header);
      if (credentials === undefined) return unauthorizedResponse(request);
      const user = await options.findUser(credentials.username);
      // Check a password either way, so an unknown name takes as long as a wrong password.
      const ok = await verify(credentials.password, user?.password ?? unknownUserPassword);
      if (user === undefined || ok !== true) return unauthorizedResponse(request);
      bindAuthentication(request, createAuthentication(user.name, user.authorities));
      return next(request, ...rest);
    };
}

/** Parses `Basic <base64(user:pass)>`; `undefined` for anything malformed. */
export function parseBasic(header: string): { username: string; password: string } | undefined {
  if (header.length > MAX_HEADER_LENGTH) return undefined;
  const token = header.slice(5).trim();
  if (!BASE64.test(token)) return undefined;
  let decoded: string;
  try {
    const binary = atob(token);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    decoded = utf8.decode(bytes);
  } catch {
    return undefined;
  }
  const colon = decoded.indexOf(":");
  if (colon <= 0) return undefined;
  const username = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: RFC 7617 forbids control characters in both parts.
  if (/[\u0000-\u001f\u007f]/.test(decoded)) return undefined;
  return { username, password };
}
