// Apart from field-list.ts: the shipped declarations reach this class, and FieldList's (a
// subclass of the runtime's Headers) compiles only against the DOM lib.
import { checkedName, checkedValue } from "./field-list.ts";

/**
 * Header fields a leg sends on every answer, checked and normalized once when
 * the leg is built, so adding them per request is map work only. `Set-Cookie`
 * is refused: cookies are never constant.
 */
export class CheckedFields {
  readonly names: readonly string[];
  readonly values: readonly string[];
  /** Each value by its (lower-case) name. */
  readonly byName: ReadonlyMap<string, string>;

  constructor(fields: Iterable<readonly [string, string]>) {
    const names: string[] = [];
    const values: string[] = [];
    for (const [name, value] of fields) {
      const key = checkedName(name);
      if (key === "set-cookie" || names.includes(key))
        throw new TypeError(`not a constant, single field: ${key}`);
      names.push(key);
      values.push(checkedValue(value));
    }
    this.names = Object.freeze(names);
    this.values = Object.freeze(values);
    this.byName = new Map(names.map((name, i) => [name, values[i] as string]));
  }
}
