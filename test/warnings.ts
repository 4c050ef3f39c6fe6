import { afterEach } from "vitest";
import { onWarning, type PortcullisWarning, resetWarnings } from "../src/index.ts";

/**
 * Collects set-up warnings for the tests of one file: the array fills while
 * a test runs and is emptied, with the once-per-process memory, after each.
 * The listener stays for the file: vitest gives each file its own modules.
 */
export function captureWarnings(): PortcullisWarning[] {
  const warnings: PortcullisWarning[] = [];
  onWarning((warning) => warnings.push(warning));
  afterEach(() => {
    warnings.length = 0;
    resetWarnings();
  });
  return warnings;
}
