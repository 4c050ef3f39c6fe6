import { formFields, formType, type UnreadableForm } from "./form.ts";
import { urlAsSent } from "./url-as-sent.ts";

/** Headers through which frameworks' method-override middleware let a client ask for another method. */
export const METHOD_OVERRIDE_HEADERS = [
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
] as const;

/** The form field and query parameter through which a client may ask for another method. */
export const METHOD_OVERRIDE_PARAMETER = "_method";

/** Form bodies larger than this are decided on their method and overrides outside the body. */
export const OVERRIDE_FORM_BYTES = 64 * 1024;

/**
 * The methods, upper-cased, that the request's override headers and
 * `_method` query parameters ask for: what a method-override middleware
 * mounted after the chain may dispatch the request as. Usually none.
 *
 * Read as generously as any such middleware reads them: a header value both
 * whole and as each of its comma-separated parts (Express's takes the first
 * part), and the query's `_method` under any percent-encoding of its name.
 */
export function overrideMethods(request: Request): string[] {
  const methods: string[] = [];
  for (const name of METHOD_OVERRIDE_HEADERS) {
    const value = request.headers.get(name);
    if (value === null) continue;
    add(methods, value);
    if (value.includes(",")) for (const part of value.split(",")) add(methods, part);
  }
  // Parsed only when the unparsed query could hold a `_method`, written plainly or escaped.
  const sent = urlAsSent(request);
  const query = sent.indexOf("?");
  if (
    query >= 0 &&
    (sent.includes(METHOD_OVERRIDE_PARAMETER, query) || sent.includes("%", query))
  ) {
    for (const value of new URL(request.url).searchParams.getAll(METHOD_OVERRIDE_PARAMETER))
      add(methods, value);
  }
  return methods;
}

/**
 * `overrideMethods`, and every `_method` field of a form body up to
 * `maxFormBytes` (frameworks differ in which of several they take). Answered
 * within the call when the request has no body; `unreadable` when the client
 * broke the form off (the caller answers 400: what it asked for is unknown).
 */
export function overrideMethodsWithForm(
  request: Request,
  maxFormBytes: number,
): string[] | Promise<string[] | UnreadableForm> {
  const methods = overrideMethods(request);
  // GET and HEAD carry no body in Fetch; asking would make some servers build their Request.
  if (request.method === "GET" || request.method === "HEAD" || request.body === null)
    return methods;
  // A body that is no form carries no field: answered now, without a promise.
  if (formType(request) === undefined) return methods;
  return formFields(request, METHOD_OVERRIDE_PARAMETER, maxFormBytes).then((fields) => {
    if (!Array.isArray(fields)) return fields;
    for (const field of fields) add(methods, field);
    return methods;
  });
}

function add(methods: string[], value: string): void {
  const method = value.trim().toUpperCase();
  if (method !== "" && !methods.includes(method)) methods.push(method);
}
