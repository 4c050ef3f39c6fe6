import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

// The same as `npx next dev examples/next -H 127.0.0.1`, started like the other examples.
const dir = fileURLToPath(new URL(".", import.meta.url));
const port = process.env.PORT ?? "3000";
const url = `http://127.0.0.1:${port}`;
console.log(`Portcullis on Next.js: ${url}`);
console.log(
  "!! DEMO ACCOUNTS, FOR LOCAL USE ONLY: alice / demo-alice, sam / demo-sam, ada / demo-ada !!",
);
console.log(`  curl ${url}/public/hello                 # 200, anyone`);
console.log(`  curl ${url}/nothing/here                 # 401, unmatched paths are denied`);
console.log(`  curl -u alice:demo-alice ${url}/          # 200, any signed-in user`);
console.log(`  curl -u sam:demo-sam ${url}/admin/panel  # 403, the route's literal ADMIN guard`);
console.log(`  curl -u ada:demo-ada ${url}/admin/panel  # 200`);
console.log(`  curl -u sam:demo-sam ${url}/api/me       # 200, the principal from withChain`);
console.log(
  `  curl -H 'x-middleware-subrequest: proxy:proxy:proxy:proxy:proxy' ${url}/api/me  # still 401`,
);

const bin = createRequire(import.meta.url).resolve("next/dist/bin/next");
const child = spawn(process.execPath, [bin, "dev", dir, "-H", "127.0.0.1", "-p", port], {
  stdio: "inherit",
  env: { NEXT_TELEMETRY_DISABLED: "1", ...process.env },
});
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
child.on("exit", (code) => process.exit(code ?? 0));
