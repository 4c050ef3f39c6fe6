/**
 * Text a client supplies that the consent page shows (its name): one check
 * for every source of client metadata, documents and registrations alike.
 */

/** Longest client name shown. */
export const MAX_CLIENT_NAME_LENGTH = 200;

// Control, format (bidirectional overrides, zero-width) and line-separator characters would let
// a name spoof the consent page.
const UNSHOWABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/** Whether `text` holds a character that must never reach a page. */
export function hasUnshowable(text: string): boolean {
  return UNSHOWABLE.test(text);
}

/** Whether `name` can be shown as a client's name: not blank, bounded, nothing unshowable. */
export function isShowableName(name: unknown): name is string {
  return (
    typeof name === "string" &&
    name.trim() !== "" &&
    name.length <= MAX_CLIENT_NAME_LENGTH &&
    !hasUnshowable(name)
  );
}
