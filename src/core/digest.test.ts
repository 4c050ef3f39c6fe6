import { describe, expect, it } from "vitest";
import { sha256, sha256Base64url, sha256Base64urlNow, sha256Hex } from "./digest.ts";
import { base64url } from "./encoding.ts";

const webCrypto = async (text: string) =>
  new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));

describe("sha256", () => {
  it.each([
    "",
    "abc",
    "report-bot:k5Qm2YbV0tXw9JrE3sLc7HuN1aPzGd8fKoRi4TyWqUe",
    "pässwörd ✓ 𝄞",
    "lone \ud800 surrogate",
    "x".repeat(10_000),
  ])("answers Web Crypto's digest for %j, however it is taken", async (text) => {
    const expected = await webCrypto(text);
    expect(await sha256(text)).toEqual(expected);
    expect(await sha256(new TextEncoder().encode(text))).toEqual(expected);
    expect(await sha256Base64url(text)).toBe(base64url(expected));
    expect(sha256Base64urlNow(text) ?? base64url(expected)).toBe(base64url(expected));
    expect(await sha256Hex(text)).toBe(Buffer.from(expected).toString("hex"));
  });

  it("answers a plain Uint8Array", async () => {
    expect(Object.getPrototypeOf(await sha256("abc"))).toBe(Uint8Array.prototype);
  });
});
