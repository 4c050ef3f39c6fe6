import { describe, expect, it } from "vitest";
import { timingSafeEqual } from "./timing-safe.ts";

describe("timingSafeEqual", () => {
  it("is true for equal strings", async () => {
    await expect(timingSafeEqual("s3cret-value", "s3cret-value")).resolves.toBe(true);
  });

  it("is false for strings that differ in one character", async () => {
    await expect(timingSafeEqual("s3cret-value", "s3cret-valuf")).resolves.toBe(false);
    await expect(timingSafeEqual("s3cret-value", "S3cret-value")).resolves.toBe(false);
  });

  it("is false for strings of different lengths, including a prefix", async () => {
    await expect(timingSafeEqual("secret", "secret-and-more")).resolves.toBe(false);
    await expect(timingSafeEqual("secret-and-more", "secret")).resolves.toBe(false);
  });

  it("handles empty inputs", async () => {
    await expect(timingSafeEqual("", "")).resolves.toBe(true);
    await expect(timingSafeEqual("", "x")).resolves.toBe(false);
    await expect(timingSafeEqual("x", "")).resolves.toBe(false);
  });

  it("compares bytes, so a string and its UTF-8 encoding are equal", async () => {
    const text = "pässwörd";
    await expect(timingSafeEqual(text, new TextEncoder().encode(text))).resolves.toBe(true);
    await expect(
      timingSafeEqual(new Uint8Array([1, 2, 3]), new Uint8Array([1, 2, 4])),
    ).resolves.toBe(false);
  });
});
