import type { CheckedFields } from "./checked-fields.ts";

/**
 * A `Headers` kept in a plain map: the legs decorate the pass-through answer
 * with a dozen constant fields per request, and the runtime's `Headers` pays
 * for conversions, brand checks and a sorted copy on every pass. Behaves as
 * `Headers` does for every method (names lower-cased, values trimmed and
 * checked, `set-cookie` kept apart, iteration sorted by name).
 */
// The interface gives the class the type of Headers, whose prototype it has (below).
export interface FieldList extends Headers {}

// Not a subclass: `super()` would build the runtime's own (unused) header list for every
// instance, two per request. `instanceof Headers` holds through the prototype set below, and
// every method of Headers is answered here, so nothing reaches the runtime's internal slots.
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: see above.
export class FieldList {
  readonly #fields = new Map<string, string>();
  readonly #cookies: string[] = [];
  // A parser's record read through until the list changes or is listed: most requests
  // have a dozen fields and the legs read three, so only those are checked. Until then
  // `#fields` holds the fields already read and checked.
  #source: ParsedFields | undefined;
  // Constant blocks added where absent (`addAbsent`), read through rather than copied in: the
  // legs add a dozen constant fields to every answer, and the map work cost more than the legs.
  // The map's fields shadow them, and an earlier block a later one; `append` or `delete` of a
  // name a block holds copies them in first.
  #blocks: CheckedFields[] | undefined;

  constructor(init?: Iterable<readonly [string, string]>) {
    if (init !== undefined) for (const [name, value] of init) this.append(name, value);
  }

  append(name: string, value: string): void {
    if (this.#source !== undefined) this.#takeAll();
    const key = fieldName(name);
    if (this.#blocks !== undefined && this.#fromBlocks(key) !== undefined) this.#settleBlocks();
    const normalized = fieldValue(value);
    if (key === "set-cookie") {
      this.#cookies.push(normalized);
      return;
    }
    const existing = this.#fields.get(key);
    const joiner = key === "cookie" ? COOKIE_JOINER : ", ";
    this.#fields.set(key, existing === undefined ? normalized : existing + joiner + normalized);
  }

  set(name: string, value: string): void {
    if (this.#source !== undefined) this.#takeAll();
    const key = fieldName(name);
    const normalized = fieldValue(value);
    if (key === "set-cookie") {
      this.#cookies.length = 0;
      this.#cookies.push(normalized);
      return;
    }
    this.#fields.set(key, normalized);
  }

  get(name: string): string | null {
    const key = fieldName(name);
    if (this.#source !== undefined) return key === "set-cookie" ? null : this.#readThrough(key);
    if (key === "set-cookie") return this.#cookies.length === 0 ? null : this.#cookies.join(", ");
    return this.#fields.get(key) ?? this.#fromBlocks(key) ?? null;
  }

  has(name: string): boolean {
    const key = fieldName(name);
    if (this.#source !== undefined) return key !== "set-cookie" && this.#readThrough(key) !== null;
    if (key === "set-cookie") return this.#cookies.length > 0;
    return this.#fields.has(key) || this.#fromBlocks(key) !== undefined;
  }

  delete(name: string): void {
    if (this.#source !== undefined) this.#takeAll();
    const key = fieldName(name);
    if (this.#blocks !== undefined && this.#fromBlocks(key) !== undefined) this.#settleBlocks();
    if (key === "set-cookie") this.#cookies.length = 0;
    else this.#fields.delete(key);
  }

  getSetCookie(): string[] {
    if (this.#source !== undefined) this.#takeAll();
    return [...this.#cookies];
  }

  *entries(): HeadersIterator<[string, string]> {
    if (this.#source !== undefined) this.#takeAll();
    this.#settleBlocks();
    const names = [...this.#fields.keys()];
    if (this.#cookies.length > 0) names.push("set-cookie");
    names.sort();
    for (const name of names) {
      if (name === "set-cookie") for (const cookie of this.#cookies) yield [name, cookie];
      else yield [name, this.#fields.get(name) as string];
    }
  }

  *keys(): HeadersIterator<string> {
    for (const [name] of this.entries()) yield name;
  }

  *values(): HeadersIterator<string> {
    for (const [, value] of this.entries()) yield value;
  }

  forEach(
    callback: (value: string, name: string, parent: Headers) => void,
    thisArg?: unknown,
  ): void {
    for (const [name, value] of this.entries()) callback.call(thisArg, value, name, this);
  }

  [Symbol.iterator](): HeadersIterator<[string, string]> {
    return this.entries();
  }

  /**
   * The fields a server's parser produced (lower-case names, values with
   * duplicates joined), checked as `append` would check them, without
   * rebuilding what is already in shape: each field when it is first read, all
   * of them once the list changes or is listed. Throws `TypeError` as `Headers`
   * would, when the field concerned is read. The record must not change after.
   */
  static parsed(fields: ParsedFields): FieldList {
    const list = new FieldList();
    for (const name in fields) {
      // Only a record of lower-case names, each a plain string, is read through.
      if (!isParsedName(name) || typeof fields[name] !== "string") {
        list.#source = fields;
        list.#takeAll();
        return list;
      }
    }
    list.#source = fields;
    return list;
  }

  /**
   * `key`'s field from the record (every value a string), checked as `append`
   * checks it and kept; `null` when the record has none. Throws as `append` would.
   */
  #readThrough(key: string): string | null {
    const known = this.#fields.get(key);
    if (known !== undefined) return known;
    const source = this.#source as ParsedFields;
    const value = source[key] as string | undefined;
    if (value === undefined || !Object.hasOwn(source, key)) return null;
    const checked = valueInShape(value) ? value : fieldValue(value);
    this.#fields.set(key, checked);
    return checked;
  }

  /** Takes every field of the record in, checked as `append` checks. */
  #takeAll(): void {
    const fields = this.#source as ParsedFields;
    this.#source = undefined;
    const map = this.#fields;
    map.clear();
    try {
      for (const name in fields) {
        if (name.charCodeAt(0) === 0x3a || !Object.hasOwn(fields, name)) continue; // HTTP/2 pseudo-headers
        const value = fields[name];
        if (value === undefined) continue;
        if (typeof value !== "string" || name === "set-cookie" || !inShape(name, value)) {
          for (const item of typeof value === "string" ? [value] : value) this.append(name, item);
        } else map.set(name, value);
      }
    } catch (error) {
      // A field `Headers` refuses: every later whole-list use refuses again, never half a list.
      map.clear();
      this.#cookies.length = 0;
      this.#source = fields;
      throw error;
    }
  }

  /** Adds each of `fields` this list does not hold yet; they were checked when made. */
  addAbsent(fields: CheckedFields): void {
    if (this.#source !== undefined) this.#takeAll();
    if (this.#blocks === undefined) this.#blocks = [fields];
    else this.#blocks.push(fields);
  }

  /** Calls `field` for every field but cookies, unsorted: for writing onto a native response. */
  forEachField(field: (name: string, value: string) => void): void {
    if (this.#source !== undefined) this.#takeAll();
    const map = this.#fields;
    const blocks = this.#blocks;
    // The names a block must not write: the map's few fields a block also holds, found by
    // asking the blocks about each of them rather than the map about every block field.
    let hidden: Set<string> | undefined;
    map.forEach((value, name) => {
      field(name, value);
      if (blocks !== undefined && this.#fromBlocks(name) !== undefined) {
        hidden ??= new Set();
        hidden.add(name);
      }
    });
    if (blocks === undefined) return;
    for (let b = 0; b < blocks.length; b++) {
      const block = blocks[b] as CheckedFields;
      const { names, values } = block;
      // Blocks of different legs rarely share a name: checked field by field only when they do.
      const overlaps = b > 0 && overlapsEarlier(blocks, b);
      for (let i = 0; i < names.length; i++) {
        const name = names[i] as string;
        if (hidden?.has(name) === true || (overlaps && shadowed(blocks, b, name))) continue;
        field(name, values[i] as string);
      }
    }
  }

  /** The value the blocks give `key`, the earliest block's. */
  #fromBlocks(key: string): string | undefined {
    const blocks = this.#blocks;
    if (blocks === undefined) return undefined;
    for (const block of blocks) {
      const value = block.byName.get(key);
      if (value !== undefined) return value;
    }
    return undefined;
  }

  /** Copies the blocks' fields the map does not hold into it, in order. */
  #settleBlocks(): void {
    const blocks = this.#blocks;
    if (blocks === undefined) return;
    this.#blocks = undefined;
    const map = this.#fields;
    for (const { names, values } of blocks) {
      for (let i = 0; i < names.length; i++) {
        const name = names[i] as string;
        if (!map.has(name)) map.set(name, values[i] as string);
      }
    }
  }

  /** The `Set-Cookie` values, in order. */
  cookies(): readonly string[] {
    if (this.#source !== undefined) this.#takeAll();
    return this.#cookies;
  }
}

/** Whether a block before the `index`th holds `name`. */
/** Whether the `index`th block shares a name with one before it; each pair is compared once. */
function overlapsEarlier(blocks: readonly CheckedFields[], index: number): boolean {
  const block = blocks[index] as CheckedFields;
  for (let b = 0; b < index; b++) {
    const earlier = blocks[b] as CheckedFields;
    let known = OVERLAPS.get(block);
    if (known === undefined) {
      known = new WeakMap();
      OVERLAPS.set(block, known);
    }
    let overlap = known.get(earlier);
    if (overlap === undefined) {
      overlap = block.names.some((name) => earlier.byName.has(name));
      known.set(earlier, overlap);
    }
    if (overlap) return true;
  }
  return false;
}

// Whether two blocks share a name, by block: blocks are made once per leg, so this stays small.
const OVERLAPS = new WeakMap<CheckedFields, WeakMap<CheckedFields, boolean>>();

function shadowed(blocks: readonly CheckedFields[], index: number, name: string): boolean {
  for (let b = 0; b < index; b++) if ((blocks[b] as CheckedFields).byName.has(name)) return true;
  return false;
}

Object.setPrototypeOf(FieldList.prototype, Headers.prototype);
// Node prints a Headers through its internal list; a list of ours prints its own fields.
Object.defineProperty(FieldList.prototype, Symbol.for("nodejs.util.inspect.custom"), {
  value(this: FieldList) {
    return Object.fromEntries(this.entries());
  },
  configurable: true,
  writable: true,
});
Object.defineProperty(FieldList.prototype, Symbol.toStringTag, {
  value: "Headers",
  configurable: true,
});

// Cookie lines are joined with "; " by runtimes that follow the current Fetch standard.
const COOKIE_JOINER = ((): string => {
  const probe = new Headers();
  probe.append("cookie", "a=1");
  probe.append("cookie", "b=2");
  return probe.get("cookie") === "a=1; b=2" ? "; " : ", ";
})();

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const LOWER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9a-z]+$/;
// Leading and trailing HTTP whitespace is trimmed; what remains is a byte string without NUL, CR
// or LF.
const EDGE_WHITESPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;
const FORBIDDEN_IN_VALUE = /[\0\r\n\u0100-\uffff]/;

// Names already checked, as given → lower-cased. Legs use a few dozen constant names; the
// cache stops growing at its bound and never evicts, so a flood of odd names cannot push
// those out (it only leaves the flood's own names to be checked each time).
const CHECKED_NAMES = new Map<string, string>();
const MAX_CHECKED_NAMES = 256;

/** A header name as `Headers` takes it, lower-cased; throws `TypeError` as it would. */
export function checkedName(name: string): string {
  return fieldName(name);
}

/** A header value as `Headers` keeps it, trimmed; throws `TypeError` as it would. */
export function checkedValue(value: string): string {
  return fieldValue(value);
}

function fieldName(name: string): string {
  if (typeof name === "string") {
    const known = CHECKED_NAMES.get(name);
    if (known !== undefined) return known;
  }
  const text = String(name);
  if (!TOKEN.test(text)) throw new TypeError(`invalid header name: ${JSON.stringify(text)}`);
  const key = text.toLowerCase();
  if (CHECKED_NAMES.size < MAX_CHECKED_NAMES && typeof name === "string")
    CHECKED_NAMES.set(name, key);
  return key;
}

function fieldValue(value: string): string {
  const text = String(value);
  const trimmed =
    text.length > 0 && (isEdgeSpace(text, 0) || isEdgeSpace(text, text.length - 1))
      ? text.replace(EDGE_WHITESPACE, "")
      : text;
  if (FORBIDDEN_IN_VALUE.test(trimmed)) throw new TypeError("invalid header value");
  return trimmed;
}

/** A lower-case token and a value that needs no trimming and holds nothing forbidden. */
function inShape(name: string, value: string): boolean {
  return LOWER_TOKEN.test(name) && valueInShape(value);
}

function valueInShape(value: string): boolean {
  return (
    !FORBIDDEN_IN_VALUE.test(value) &&
    (value.length === 0 || (!isEdgeSpace(value, 0) && !isEdgeSpace(value, value.length - 1)))
  );
}

// Lower-case names a parser's record held, already found to be tokens: every request of a
// browser brings a dozen, the same ones each time. Bounded like CHECKED_NAMES, never evicted.
const PARSED_NAMES = new Set<string>();

/** A lower-case token other than `set-cookie`, which `Headers` keeps apart. */
function isParsedName(name: string): boolean {
  if (PARSED_NAMES.has(name)) return true;
  if (!LOWER_TOKEN.test(name) || name === "set-cookie") return false;
  if (PARSED_NAMES.size < MAX_CHECKED_NAMES) PARSED_NAMES.add(name);
  return true;
}

/** Header fields as a server's parser records them. */
type ParsedFields = Readonly<Record<string, string | readonly string[] | undefined>>;

function isEdgeSpace(text: string, index: number): boolean {
  const code = text.charCodeAt(index);
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}
