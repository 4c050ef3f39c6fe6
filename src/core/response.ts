import type { CheckedFields } from "./checked-fields.ts";
import { FieldList } from "./field-list.ts";

/**
 * Applies `edit` to `response`'s headers and returns the response to hand on.
 *
 * Responses from `Response.redirect()`, `Response.error()` or `fetch()` have
 * immutable headers. When editing throws, the edit is retried on a copy that
 * shares the original body stream (`new Response(response.body, response)`):
 * nothing is read or buffered, so a streaming body keeps streaming. `edit` may
 * therefore run twice and must only set what is absent (see `setIfAbsent`).
 *
 * Responses that cannot be rebuilt (status outside 200-599, such as a 101
 * WebSocket upgrade or a network error) are returned unchanged: a copy would
 * throw, or lose the runtime's upgrade handle.
 */
export function withHeaders(response: Response, edit: (headers: Headers) => void): Response {
  try {
    edit(response.headers);
    return response;
  } catch (error) {
    if (response.status < 200 || response.status > 599) return response;
    let copy: Response;
    try {
      copy = new Response(response.body, response);
    } catch {
      throw error; // not an immutability problem (a consumed body, say): report the first failure
    }
    edit(copy.headers);
    return copy;
  }
}

/** Adds each of `fields` the headers do not carry yet: map work only on a `FieldList`. */
export function setAbsent(headers: Headers, fields: CheckedFields): void {
  if (headers instanceof FieldList) {
    headers.addAbsent(fields);
    return;
  }
  const { names, values } = fields;
  // A `has` per field: listing the runtime's headers sorts them, again after every change, and
  // cost more than the questions once a few legs had added their fields.
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    if (!headers.has(name)) headers.set(name, values[i] as string);
  }
}

/** Sets `name` to `value` unless the response already carries `name` (names are lower-case). */
export function setIfAbsent(headers: Headers, name: string, value: string): void {
  if (!headers.has(name)) headers.set(name, value);
}
