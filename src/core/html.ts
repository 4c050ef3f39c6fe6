/**
 * The pages the library renders itself (approval outcomes, the authorization
 * endpoint's error page, the browser denial page) are written with `html`:
 * every value put into the template is escaped, unless it is markup `html`
 * made. Nothing a client or an application passes in can become markup.
 */

let markup: (text: string) => Markup;

/** Markup made by `html`: the only thing `html` inserts without escaping. */
export class Markup {
  readonly #text: string;
  private constructor(text: string) {
    this.#text = text;
  }
  static {
    markup = (text) => new Markup(text);
  }
  /** The markup; an object of another kind posing as one is escaped like any value. */
  static textOf(value: unknown): string | undefined {
    return typeof value === "object" && value !== null && #text in value ? value.#text : undefined;
  }
  toString(): string {
    return this.#text;
  }
}

/** A value of an `html` template: text (escaped), a number, or markup from another `html`. */
export type HtmlValue = string | number | Markup;

/** A template of markup whose every value is escaped (markup from `html` itself excepted). */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): Markup {
  let out = strings[0] as string;
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    out += Markup.textOf(value) ?? escapeHtml(String(value));
    out += strings[i + 1] as string;
  }
  return markup(out);
}

const SPECIAL = /[&<>"']/g;
const ENTITY: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text made safe in element content and in quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(SPECIAL, (c) => ENTITY[c] as string);
}

/** An HTML page nobody may cache. */
export function htmlResponse(
  page: Markup,
  init: {
    readonly status?: number;
    readonly headers?: ConstructorParameters<typeof Headers>[0];
  } = {},
): Response {
  const headers = new Headers(init.headers);
  headers.set("content-type", "text/html; charset=utf-8");
  if (!headers.has("cache-control")) headers.set("cache-control", "no-store");
  return new Response(page.toString(), { status: init.status ?? 200, headers });
}
