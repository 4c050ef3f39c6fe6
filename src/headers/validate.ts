import { InvalidOptionsError } from "../core/errors.ts";

/** `scriptSrc` → `script-src`; names already in kebab-case pass through. */
export function kebabCase(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`);
}

/** Printable ASCII, space and tab only: no CR/LF (header injection) and no other controls. */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

/** Throws unless `value` can be sent as `name`'s value as it is. */
export function headerValue(option: string, value: string): string {
  if (typeof value !== "string" || !HEADER_VALUE.test(value) || value.trim() !== value) {
    throw new InvalidOptionsError(
      `securityHeaders: ${option} must be printable ASCII without line breaks or edge spaces`,
    );
  }
  return value;
}

/** `value` if it is one of `allowed`, else throws. */
export function oneOf<T extends string>(option: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw new InvalidOptionsError(
      `securityHeaders: ${option} must be one of ${allowed.join(", ")} or false`,
    );
  }
  return value as T;
}
