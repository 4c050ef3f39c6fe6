import { InvalidOptionsError } from "./errors.ts";

/**
 * Throws when `options` has an own key outside `known`, naming it: a misspelt
 * option (`mathc` for `match`) must fail when the middleware is built, not be
 * ignored and leave the protection it meant to configure off.
 */
export function rejectUnknownKeys(
  where: string,
  options: object | undefined,
  known: readonly string[],
): void {
  if (options === undefined || options === null) return;
  if (typeof options !== "object")
    throw new InvalidOptionsError(`${where}: options must be an object`);
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new InvalidOptionsError(
        `${where}: unknown option ${JSON.stringify(key)} (known: ${known.join(", ")})`,
      );
    }
  }
}

/**
 * The options of an adapter entry point (`{ onError }`, plus `also`): a
 * misspelt key (`{ onErr }`) or an `onError` that is no function throws when
 * the entry point is called, so errors are never silently left unreported.
 */
export function checkAdapterOptions(
  where: string,
  options: object | undefined,
  also: readonly string[] = [],
): void {
  rejectUnknownKeys(where, options, ["onError", ...also]);
  const onError = (options as { onError?: unknown } | undefined)?.onError;
  if (onError !== undefined && typeof onError !== "function")
    throw new InvalidOptionsError(`${where}: onError must be a function`);
}

/** The longest delay a timer takes (2^31 - 1 ms, about 24.8 days): a longer one fires at once. */
export const MAX_TIMEOUT_MS = 2_147_483_647;

/** A timeout in milliseconds, or `fallback` when undefined; throws unless 1 to `MAX_TIMEOUT_MS`. */
export function timeoutOption(
  where: string,
  name: string,
  value: unknown,
  fallback: number,
): number {
  const what = `a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`;
  return integerUpTo(where, name, value ?? fallback, MAX_TIMEOUT_MS, what);
}

/** `value`, or `fallback` when it is undefined; throws unless it is a positive safe integer. */
export function positiveInteger(
  where: string,
  name: string,
  value: unknown,
  fallback: number,
): number {
  return integerUpTo(where, name, value ?? fallback, Number.MAX_SAFE_INTEGER, "a positive integer");
}

/** `value`, or `fallback` when it is undefined; throws unless a whole number from `min` to `max`. */
export function integerOption(
  where: string,
  name: string,
  value: unknown,
  fallback: number,
  min: number,
  max: number,
): number {
  const checked = value ?? fallback;
  if (
    typeof checked !== "number" ||
    !Number.isSafeInteger(checked) ||
    checked < min ||
    checked > max
  )
    throw new InvalidOptionsError(`${where}: ${name} must be a whole number from ${min} to ${max}`);
  return checked;
}

/**
 * The largest body an endpoint reads (`maxBodyBytes`), or `fallback`: a whole
 * number, `min` or more (enough for the smallest request it must take).
 */
export function bodyLimitOption(
  where: string,
  value: unknown,
  fallback: number,
  min: number,
  name = "maxBodyBytes",
): number {
  const checked = value ?? fallback;
  if (typeof checked !== "number" || !Number.isSafeInteger(checked) || checked < min)
    throw new InvalidOptionsError(`${where}: ${name} must be a whole number, ${min} or more`);
  return checked;
}

/** Throws unless each of `names` in `options` is a function (or absent, unless `required`). */
export function functionOptions(
  where: string,
  options: object,
  names: readonly string[],
  required: readonly string[] = [],
): void {
  for (const name of names) {
    const value = (options as Record<string, unknown>)[name];
    if ((value !== undefined || required.includes(name)) && typeof value !== "function")
      throw new InvalidOptionsError(`${where}: ${name} must be a function`);
  }
}

function integerUpTo(where: string, name: string, value: unknown, max: number, what: string) {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1 || value > max)
    throw new InvalidOptionsError(`${where}: ${name} must be ${what}`);
  return value;
}

// An absolute path of plain segments: where an endpoint is mounted. Segments are checked one by
// one: a single pattern over the whole path would nest quantifiers and backtrack.
const MOUNT_SEGMENT = /^[A-Za-z0-9._~!$&'()*+,;=:@-]*$/;

/** `value` when it is an absolute path with no dot segments, for mounting an endpoint; throws naming `name`. */
export function mountPathOption(where: string, name: string, value: unknown): string {
  if (
    typeof value !== "string" ||
    !value.startsWith("/") ||
    value.includes("//") ||
    !value.split("/").every((segment) => MOUNT_SEGMENT.test(segment)) ||
    /\/\.{1,2}(\/|$)/.test(value)
  )
    throw new InvalidOptionsError(`${where}: ${name} must be an absolute path`);
  return value;
}
