/**
 * Test support: legs of someone else's, written as a user writes them. Not part of the package.
 */
import type { Middleware } from "../../src/core/handler.ts";

/**
 * A leg that sets `fields` on whatever the rest of the chain answers, then
 * appends each of `cookies` as its own `Set-Cookie`.
 */
export function decorating(
  fields: Readonly<Record<string, string>>,
  cookies: readonly string[] = [],
): Middleware {
  return (next) =>
    async (request, ...rest) => {
      const response = await next(request, ...rest);
      for (const [name, value] of Object.entries(fields)) response.headers.set(name, value);
      for (const cookie of cookies) response.headers.append("set-cookie", cookie);
      return response;
    };
}
