/** RFC 8628 §6.1: consonants only, so no word is spelt and no letter is mistaken for a digit. */
export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
export const USER_CODE_LENGTH = 8;

/** Eight characters drawn uniformly from the alphabet (20^8, about 34.3 bits). */
export function generateUserCode(): string {
  let code = "";
  while (code.length < USER_CODE_LENGTH) {
    for (const byte of crypto.getRandomValues(new Uint8Array(16))) {
      // 240 = 12 × 20: bytes at or above it would favour the first letters.
      if (byte < 240 && code.length < USER_CODE_LENGTH) code += USER_CODE_ALPHABET[byte % 20];
    }
  }
  return code;
}

/**
 * The code a human typed, upper-cased, with dashes and spaces dropped;
 * `undefined` unless it is eight letters of the alphabet.
 */
export function normalizeUserCode(input: unknown): string | undefined {
  if (typeof input !== "string" || input.length > 32) return undefined;
  const typed = input.replace(/[\s-]/g, "");
  // Checked as ASCII before upper-casing: Unicode upper-cases "ß" to "SS" and "ſ" to "S".
  if (!/^[A-Za-z]{8}$/.test(typed)) return undefined;
  const code = typed.toUpperCase();
  for (const char of code) if (!USER_CODE_ALPHABET.includes(char)) return undefined;
  return code;
}

/** `BCDF-GHJK`: how a code is shown and sent. */
export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}
