// The literal `require*` legs (`portcullis/middleware`): a chain leg that answers 401/403 from the
// request's authentication alone. `guard.ts` is the other kind: `authz.guard` around an
// application function, deciding with a hierarchy and the call's target.
import { authenticationFrom, isAuthenticated } from "../core/authentication.ts";
import { forbiddenResponse, unauthorizedResponse } from "../core/challenge.ts";
import { InvalidOptionsError } from "../core/errors.ts";
import type { Middleware } from "../core/handler.ts";

/** Denies anonymous callers with 401; everyone else goes on. */
export function requireAuthenticated(): Middleware {
  return (next) =>
    async (request, ...rest) =>
      isAuthenticated(request) ? next(request, ...rest) : unauthorizedResponse(request);
}

/**
 * Allows callers holding `role`, compared literally: no role hierarchy is
 * consulted, so an ADMIN is denied by `requireRole("STAFF")`. For a
 * hierarchy-aware check next to a route, use `authz.routes([anyRequest().hasRole(r)], { hierarchy })`.
 */
export function requireRole(role: string): Middleware {
  return requireHeld("requireRole", role);
}

/** Allows callers holding `authority`, compared literally (no hierarchy). */
export function requireAuthority(authority: string): Middleware {
  return requireHeld("requireAuthority", authority);
}

function requireHeld(guard: string, wanted: string): Middleware {
  if (typeof wanted !== "string" || wanted.trim() === "") {
    throw new InvalidOptionsError(`${guard} needs a non-empty name`);
  }
  return (next) =>
    async (request, ...rest) => {
      if (!isAuthenticated(request)) return unauthorizedResponse(request);
      const auth = authenticationFrom(request);
      return auth?.authorities.includes(wanted) ? next(request, ...rest) : forbiddenResponse();
    };
}
