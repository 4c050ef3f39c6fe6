/**
 * A differential test of the input-schema interpreter: seeded random schemas
 * and arguments whose answers (each verdict, error list or refusal, as a
 * digest) were recorded from an earlier version of the interpreter. A change
 * made for speed must keep every answer. After a deliberate change of answers:
 * PORTCULLIS_UPDATE_SCHEMA_VERDICTS=1 npx vitest run test/schema-verdicts.test.ts
 */
import { readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { compileSchema } from "../src/agentauth/schema.ts";
import { digest, generateCase } from "./support/schema-cases.ts";

const FILE = new URL("fixtures/schema-verdicts.json", import.meta.url);
const CASES = 2000;

function answer(index: number): string {
  const { schema, values } = generateCase(index);
  let check: ReturnType<typeof compileSchema>;
  try {
    check = compileSchema("t", schema);
  } catch (error) {
    return `refused:${digest((error as Error).message)}`;
  }
  return values
    .map((value) => {
      const errors = check(value);
      return errors.length === 0 ? "ok" : digest(JSON.stringify(errors));
    })
    .join(" ");
}

describe("input schemas: answers on seeded random schemas and arguments", () => {
  it("gives the recorded verdicts, errors and refusals", () => {
    const answers = Array.from({ length: CASES }, (_, i) => answer(i));
    if (process.env.PORTCULLIS_UPDATE_SCHEMA_VERDICTS === "1")
      writeFileSync(FILE, `${JSON.stringify(answers, null, 2)}\n`);
    const recorded = JSON.parse(readFileSync(FILE, "utf8")) as string[];
    expect(recorded).toHaveLength(CASES);
    const differing = answers.flatMap((got, i) => (got === recorded[i] ? [] : [i]));
    // Name the first cases that differ, so that they can be generated and looked at.
    expect(differing.slice(0, 5).map((i) => ({ i, ...generateCase(i) }))).toEqual([]);
    // The generator exercises all three outcomes.
    expect(recorded.some((a) => a.startsWith("refused"))).toBe(true);
    expect(recorded.some((a) => a.includes("ok"))).toBe(true);
    expect(recorded.some((a) => /[0-9a-f]{8}/.test(a.replace(/refused:\w+/, "")))).toBe(true);
  });
});
