import { urlAsSent } from "./url-as-sent.ts";

/** Headers through which frameworks' method-override middleware let a client ask for another method. */
export const METHOD_OVERRIDE_HEADERS = [
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
] as const;

/** The form field and query parameter through which a client may ask for another method. */
export const METHOD_OVERRIDE_PARAMETER = "_method";

/**
 * The methods, upper-cased, that the request's override headers and
 * `_method` query parameters ask for: what a method-override middleware
 * mounted after the chain may dispatch the request as. Usually none.
 */
export function overrideMethods(request: Request): string[] {
  const methods: string[] = [];
  for (const name of METHOD_OVERRIDE_HEADERS) {
    const value = request.headers.get(name);
    if (value !== null && value.trim() !== "") methods.push(value.trim().toUpperCase());
  }
  // Parsed only when the unparsed URL suggests a `_method` in the query; the parse decides.
  const sent = urlAsSent(request);
  const query = sent.indexOf("?");
  if (query >= 0 && sent.includes(METHOD_OVERRIDE_PARAMETER, query)) {
    for (const value of new URL(request.url).searchParams.getAll(METHOD_OVERRIDE_PARAMETER)) {
      if (value.trim() !== "") methods.push(value.trim().toUpperCase());
    }
  }
  return methods;
}
