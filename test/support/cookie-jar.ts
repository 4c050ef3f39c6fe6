/**
 * Test support: a minimal browser-like cookie jar for driving a Fetch handler
 * (or a server over the socket) through several requests. Not part of the package.
 */

/** One parsed `Set-Cookie` line; attribute names are lower-cased, flags map to `""`. */
export interface SetCookie {
  readonly name: string;
  readonly value: string;
  readonly attributes: ReadonlyMap<string, string>;
  readonly raw: string;
}

/** Parses one `Set-Cookie` header value (RFC 6265 §5.2, leniently). */
export function parseSetCookie(line: string): SetCookie {
  const [pair = "", ...rest] = line.split(";");
  const eq = pair.indexOf("=");
  const name = (eq < 0 ? "" : pair.slice(0, eq)).trim();
  const value = (eq < 0 ? pair : pair.slice(eq + 1)).trim();
  const attributes = new Map<string, string>();
  for (const part of rest) {
    const at = part.indexOf("=");
    const key = (at < 0 ? part : part.slice(0, at)).trim().toLowerCase();
    if (key === "") continue;
    attributes.set(key, at < 0 ? "" : part.slice(at + 1).trim());
  }
  return { name, value, attributes, raw: line };
}

/** Every `Set-Cookie` of `response`, each parsed separately. */
export function setCookiesOf(response: Response): SetCookie[] {
  return response.headers.getSetCookie().map(parseSetCookie);
}

/** True when the cookie line tells the browser to delete the cookie. */
export function isDeletion(cookie: SetCookie): boolean {
  const maxAge = cookie.attributes.get("max-age");
  if (maxAge !== undefined && Number(maxAge) <= 0) return true;
  const expires = cookie.attributes.get("expires");
  return expires !== undefined && Date.parse(expires) <= Date.now();
}

/** Name → value, updated from responses; produces the `Cookie` request header. */
export class CookieJar {
  readonly #cookies = new Map<string, string>();

  /** Applies every `Set-Cookie` of `response` and returns them parsed. */
  store(response: Response): SetCookie[] {
    const cookies = setCookiesOf(response);
    for (const cookie of cookies) {
      if (isDeletion(cookie)) this.#cookies.delete(cookie.name);
      else this.#cookies.set(cookie.name, cookie.value);
    }
    return cookies;
  }

  get(name: string): string | undefined {
    return this.#cookies.get(name);
  }

  set(name: string, value: string): void {
    this.#cookies.set(name, value);
  }

  delete(name: string): void {
    this.#cookies.delete(name);
  }

  /** The `Cookie` header a browser would send, or `undefined` when the jar is empty. */
  header(): string | undefined {
    if (this.#cookies.size === 0) return undefined;
    return [...this.#cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }

  copy(): CookieJar {
    const jar = new CookieJar();
    for (const [name, value] of this.#cookies) jar.set(name, value);
    return jar;
  }
}
