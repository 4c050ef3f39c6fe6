// The "source" export condition points this repository's tests and tools at
// src/*.ts. A consumer whose bundler honours a "source" condition would get
// the TypeScript sources instead of the build, so the packed package.json
// carries none: `strip` before packing, `restore` after. `npm pack` builds first
// (prepack), so a clone that never ran `npm run build` still ships dist/.
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";

const [action] = process.argv.slice(2);
const saved = "package.json.unpacked";
if (action === "strip") {
  copyFileSync("package.json", saved);
  const pkg = JSON.parse(readFileSync("package.json", "utf8"));
  for (const entry of Object.values(pkg.exports)) {
    if (typeof entry === "object" && entry !== null) delete entry.source;
  }
  writeFileSync("package.json", `${JSON.stringify(pkg, null, 2)}\n`);
} else if (action === "restore") {
  if (existsSync(saved)) renameSync(saved, "package.json");
} else {
  console.error("usage: node scripts/pack-exports.mjs strip|restore");
  process.exit(2);
}
