/** Stable codes carried by every error Portcullis throws. */
export type ErrorCode =
  | "ERR_PORTCULLIS"
  | "ERR_INVALID_OPTIONS"
  | "ERR_NO_AUTHENTICATION"
  | "ERR_AUTHENTICATION_REQUIRED"
  | "ERR_ACCESS_DENIED"
  | "ERR_BODY_READ"
  | "ERR_STORE_UNAVAILABLE"
  | "ERR_STORE_FULL"
  | "ERR_JWT_INVALID"
  | "ERR_DPOP_PROOF_INVALID"
  | "ERR_DPOP_NONCE_REQUIRED"
  | "ERR_CLIENT_METADATA"
  | "ERR_MISSING_PEER";

/** Base class: `code` is stable across releases, `message` is for humans. */
export class PortcullisError extends Error {
  static code: ErrorCode = "ERR_PORTCULLIS";
  readonly code: ErrorCode = "ERR_PORTCULLIS";

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A security-relevant option is missing or malformed; thrown when a middleware is built, never per request. */
export class InvalidOptionsError extends PortcullisError {
  static override code = "ERR_INVALID_OPTIONS" as const;
  override readonly code = "ERR_INVALID_OPTIONS" as const;
}

/** Nothing bound an authentication to this request: the chain did not run before this code. */
export class NoAuthenticationError extends PortcullisError {
  static override code = "ERR_NO_AUTHENTICATION" as const;
  override readonly code = "ERR_NO_AUTHENTICATION" as const;
}

/** The caller is anonymous and the operation needs an authenticated principal (HTTP 401). */
export class AuthenticationRequiredError extends PortcullisError {
  static override code = "ERR_AUTHENTICATION_REQUIRED" as const;
  override readonly code = "ERR_AUTHENTICATION_REQUIRED" as const;
  readonly status = 401;
}

/** The caller is authenticated but not allowed (HTTP 403). */
export class AccessDeniedError extends PortcullisError {
  static override code = "ERR_ACCESS_DENIED" as const;
  override readonly code = "ERR_ACCESS_DENIED" as const;
  readonly status = 403;
}

/**
 * A store failed or did not answer in time, so the request cannot be served
 * safely (HTTP 503). `status` and `statusCode` let Express, Koa and Fastify
 * answer 503 on their own when it escapes a route handler.
 */
export class StoreUnavailableError extends PortcullisError {
  static override code: "ERR_STORE_UNAVAILABLE" | "ERR_STORE_FULL" = "ERR_STORE_UNAVAILABLE";
  override readonly code: "ERR_STORE_UNAVAILABLE" | "ERR_STORE_FULL" = "ERR_STORE_UNAVAILABLE";
  readonly status = 503;
  readonly statusCode = 503;
  readonly expose = false;
}

/** Whose entries a full store counted: one person's, one client's, or everyone's (its capacity). */
export type StoreQuotaKind = "person" | "client" | "store";

/** What a full store held when it refused, for the warning line: never whose entries they were. */
export interface StoreFullness {
  /** The store, as the warning names it: `"the authorization code store"`. */
  readonly store: string;
  /** Whose entries were counted. */
  readonly quota: StoreQuotaKind;
  /** Entries held against that quota when the newcomer was refused, when the store knows. */
  readonly held?: number;
  /** The quota, when the store knows. */
  readonly limit?: number;
}

/**
 * A store refused a new entry because a quota is used up: one person's, one
 * client's, or the store's whole capacity. Not a fault: the party over its
 * quota is answered 503 (or its protocol's equivalent) and everyone else goes
 * on; it is logged as one warning line with the figures, never as a failure.
 * A `StoreUnavailableError`, so whatever answers that answers this too.
 */
export class StoreFullError extends StoreUnavailableError {
  static override code = "ERR_STORE_FULL" as const;
  override readonly code = "ERR_STORE_FULL" as const;
  readonly store: string;
  readonly quota: StoreQuotaKind;
  readonly held: number | undefined;
  readonly limit: number | undefined;

  constructor(fullness: StoreFullness) {
    const { store, quota, held, limit } = fullness;
    const figures =
      held === undefined || limit === undefined ? "" : `: ${held} of ${limit} entries held`;
    super(`${store} is full${figures} ${quota === "store" ? "in all" : `per ${quota}`}`);
    this.store = store;
    this.quota = quota;
    this.held = held;
    this.limit = limit;
  }
}

/**
 * The request body could not be read: the client went away mid-body or sent
 * a malformed one (bad chunked encoding). The client's doing, so it answers
 * 400 (or nothing, when nobody is left to answer) and is not logged as a failure.
 */
export class BodyReadError extends PortcullisError {
  static override code = "ERR_BODY_READ" as const;
  override readonly code = "ERR_BODY_READ" as const;
  readonly status = 400;
}

/** Whether `error`, or an error it was caused by, is a `BodyReadError`. */
export function isBodyReadError(error: unknown): boolean {
  for (let depth = 0; depth < 5 && error instanceof Error; depth++) {
    if (error instanceof BodyReadError) return true;
    error = error.cause;
  }
  return false;
}

/**
 * A JWT failed verification: malformed, oversized, forged, expired, of the
 * wrong type, issuer or audience. Every failure, whatever the library below
 * threw, surfaces as this one error; `reason` says which check failed, for logs
 * only (never sent to the client, which learns only that the token is invalid).
 */
export class JwtInvalidError extends PortcullisError {
  static override code = "ERR_JWT_INVALID" as const;
  override readonly code = "ERR_JWT_INVALID" as const;
  readonly reason: JwtFailureReason;

  constructor(reason: JwtFailureReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

/** Which check a token failed. */
export type JwtFailureReason =
  | "malformed"
  | "too_large"
  | "header"
  | "unknown_key"
  | "signature"
  | "claims"
  | "expired"
  | "not_yet_valid";

/**
 * A DPoP proof (RFC 9449) failed verification: malformed, oversized, forged,
 * for another method, URL, token or key, too old, from the future. Every
 * failure, whatever the library below threw, surfaces as this one error;
 * `reason` says which check failed, for logs only.
 */
export class DpopProofInvalidError extends PortcullisError {
  static override code = "ERR_DPOP_PROOF_INVALID" as const;
  override readonly code = "ERR_DPOP_PROOF_INVALID" as const;
  readonly reason: DpopFailureReason;

  constructor(reason: DpopFailureReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

/** Which check a DPoP proof failed. */
export type DpopFailureReason =
  | "malformed"
  | "too_large"
  | "header"
  | "key"
  | "signature"
  | "claims"
  | "htm"
  | "htu"
  | "iat"
  | "ath"
  | "jkt";

/**
 * A DPoP proof carried no nonce, a stale one or a forged one where a current
 * server nonce is required: the client should retry once with the nonce it is
 * sent (`use_dpop_nonce`).
 */
export class DpopNonceRequiredError extends PortcullisError {
  static override code = "ERR_DPOP_NONCE_REQUIRED" as const;
  override readonly code = "ERR_DPOP_NONCE_REQUIRED" as const;
}

/**
 * A client id that is a URL (a Client ID Metadata Document) could not be used:
 * the URL is malformed, its host is or resolves to an address the server must
 * not reach, the fetch failed, or the document is invalid. `reason` says which,
 * for logs and for the authorization endpoint's answer (`invalid_client` or an
 * error page); the message never repeats the document's content.
 */
export class ClientMetadataError extends PortcullisError {
  static override code = "ERR_CLIENT_METADATA" as const;
  override readonly code = "ERR_CLIENT_METADATA" as const;
  readonly reason: ClientMetadataFailureReason;

  constructor(reason: ClientMetadataFailureReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

/** Why a client metadata document was refused. */
export type ClientMetadataFailureReason =
  | "invalid_client_id"
  | "address_refused"
  | "unresolvable"
  | "busy"
  | "timeout"
  | "fetch_failed"
  | "redirect_refused"
  | "invalid_content_type"
  | "too_large"
  | "invalid_document"
  | "client_id_mismatch"
  | "auth_method_refused";

/**
 * An import path needs an optional peer dependency the application has not
 * installed (`@modelcontextprotocol/server` for `portcullis/mcp`, `redis` for
 * `createRedisClient`). The message is one line naming the package and the
 * command that installs it.
 */
export class MissingPeerError extends PortcullisError {
  static override code = "ERR_MISSING_PEER" as const;
  override readonly code = "ERR_MISSING_PEER" as const;
  /** The package to install. */
  readonly packageName: string;

  constructor(importPath: string, packageName: string, options?: { cause?: unknown }) {
    super(
      `${importPath} needs ${packageName}, which is not installed: npm install ${packageName}`,
      options,
    );
    this.packageName = packageName;
  }
}

/** Every error Portcullis throws, for exhaustive handling by `code`. */
export type PortcullisErrors =
  | InvalidOptionsError
  | NoAuthenticationError
  | AuthenticationRequiredError
  | AccessDeniedError
  | StoreUnavailableError
  | StoreFullError
  | BodyReadError
  | JwtInvalidError
  | DpopProofInvalidError
  | DpopNonceRequiredError
  | ClientMetadataError
  | MissingPeerError;

/** Whether `error` is one Portcullis threw (narrowing to the union, so `switch (error.code)` is exhaustive). */
export function isPortcullisError(error: unknown): error is PortcullisErrors {
  return error instanceof PortcullisError;
}
