import { type BodyFailure, readFormBody } from "../core/body.ts";
import type { OAuthFailure } from "./wire.ts";

/** The parameters of a form-encoded OAuth request, each present at most once and never empty. */
export type OAuthParameters = ReadonlyMap<string, string>;

/**
 * Reads an `application/x-www-form-urlencoded` body (RFC 6749 §3.2, RFC 8628
 * §3.1). Anything else, a body over `maxBytes`, and a parameter given twice are
 * `invalid_request`; a parameter with an empty value counts as omitted.
 */
export async function readOAuthParameters(
  request: Request,
  maxBytes: number,
): Promise<OAuthParameters | (OAuthFailure & { readonly status?: number })> {
  const form = await readFormBody(request, maxBytes);
  if (!form.ok) return invalidBody(form.failure, maxBytes);
  const out = new Map<string, string>();
  for (const [name, value] of form.value) {
    if (out.has(name))
      return {
        error: "invalid_request",
        // Named only when the name is plain: the description goes back to the client verbatim.
        description: PLAIN_NAME.test(name)
          ? `the parameter ${name} is repeated`
          : "a parameter is repeated",
      };
    out.set(name, value);
  }
  for (const [name, value] of out) if (value === "") out.delete(name);
  return out;
}

const PLAIN_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

export function isFailure(value: unknown): value is OAuthFailure & { readonly status?: number } {
  return typeof value === "object" && value !== null && "error" in value;
}

function invalidBody(
  failure: BodyFailure,
  maxBytes: number,
): OAuthFailure & { readonly status?: number } {
  switch (failure) {
    case "media_type":
      return {
        error: "invalid_request",
        description: "the body must be application/x-www-form-urlencoded",
      };
    case "too_large":
      return {
        error: "invalid_request",
        description: `the body is larger than ${maxBytes} bytes`,
        status: 413,
      };
    case "unreadable":
      return { error: "invalid_request", description: "the body could not be read" };
    case "malformed":
      return { error: "invalid_request", description: "the body is not UTF-8" };
  }
}
