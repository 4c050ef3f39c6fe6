// A Node adapter's lazy request knows its URL as it put it together (`scheme://host` and the
// target as sent) before the runtime parses and serializes it. The scheme and whether a `?`
// is present are the same in both, so a leg asking only that need not pay for the parse.
export const URL_AS_SENT: unique symbol = Symbol("portcullis.urlAsSent");

/**
 * The request's URL for questions about its scheme or whether it has a query:
 * unparsed when the adapter that built the request kept it so, else `request.url`.
 * Anything finer (the path, the query's values) must read `request.url`.
 */
export function urlAsSent(request: Request): string {
  return (request as { [URL_AS_SENT]?: string })[URL_AS_SENT] ?? request.url;
}
