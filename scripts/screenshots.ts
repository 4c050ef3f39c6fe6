/**
 * `npm run screenshots`: takes the pictures of the example app's agent pages
 * again, into docs/images/, from the example served on port 3000 as `npm
 * start` serves it (another port when 3000 is taken).
 */
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PICTURES, takeScreenshots } from "../test/support/screenshots.ts";

const dir = fileURLToPath(new URL("../docs/images/", import.meta.url));
mkdirSync(dir, { recursive: true });
await takeScreenshots(dir, 3000);
console.log(`written to docs/images/: ${Object.values(PICTURES).join(", ")}`);
