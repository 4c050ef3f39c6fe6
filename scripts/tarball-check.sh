#!/usr/bin/env bash
# Packs the package from a fresh copy of the repository (its tracked files, never
# built: `npm pack` must build), installs the tarball into a fresh project outside
# the repository, the way a new user would, and checks:
# - every export imports at run time, and its declarations compile with Node's
#   types alone (lib ES2022, no DOM lib, exactOptionalPropertyTypes);
# - the example files the README and docs/ show compile with that strict
#   TypeScript, each server runs and answers a public, a protected and an admin route;
# - the agents quick start runs end to end in Chromium: the agent's URL, sign-in,
#   Approve, the agent's calls;
# - the Next.js example builds with `next build` and serves with `next start`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
mkdir -p "$repo/scratch"
# Inside the repository, so the copy finds node_modules one level up, as a clone that ran
# `npm install` has it; the copy holds no dist/ whatever the working tree holds.
fresh="$(mktemp -d "$repo/scratch/pack-XXXXXX")"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work" "$fresh"' EXIT

echo "== packing from a copy that was never built"
(cd "$repo" && git ls-files -z | while IFS= read -r -d '' file; do
  [ -e "$file" ] && printf '%s\0' "$file"
done | tar -cf - --null -T -) | tar -xf - -C "$fresh"
[ ! -e "$fresh/dist" ] || { echo "the fresh copy holds a dist/" >&2; exit 1; }
(cd "$fresh" && npm pack --pack-destination "$work" >/dev/null)
tarball="$(ls "$work"/portcullis-*.tgz)"
tar -tzf "$tarball" >"$work/contents"
grep -qx 'package/dist/index.js' "$work/contents" || { echo "the tarball ships no dist/index.js" >&2; exit 1; }
# The packed package.json must carry no "source" condition (it points at src/*.ts).
mkdir -p "$work/unpacked" && tar -xzf "$tarball" -C "$work/unpacked" package/package.json
node -e '
const pkg = require(process.argv[1]);
for (const [path, entry] of Object.entries(pkg.exports))
  if (entry && typeof entry === "object" && "source" in entry) {
    console.error(`the packed export ${path} carries the source condition`);
    process.exit(1);
  }
' "$work/unpacked/package/package.json"

project="$work/project"
mkdir -p "$project/examples"
cp -r "$repo/examples/shared" "$repo/examples/express" "$repo/examples/fastify" \
  "$repo/examples/koa" "$repo/examples/node" "$repo/examples/quickstart" \
  "$repo/examples/agents-quickstart" "$repo/examples/device" "$repo/examples/recipes" \
  "$repo/examples/stores" "$project/examples/"
# The Next.js app as the repository tracks it (no build output), with a config of its own: the
# repository's points Portcullis at src/, an installed app needs nothing of the kind.
mkdir -p "$project/next-app"
(cd "$repo/examples/next" && git ls-files | grep -v -e '^next.config.mjs$' -e '^server.ts$' -e '^tsconfig.json$' |
  while read -r file; do mkdir -p "$project/next-app/$(dirname "$file")"; cp "$file" "$project/next-app/$file"; done)
mkdir -p "$project/shared" && cp "$repo/examples/shared/"*.ts "$project/shared/"
cd "$project"
cat > package.json <<'JSON'
{ "name": "portcullis-newcomer", "private": true, "type": "module" }
JSON
cat > tsconfig.json <<'JSON'
{
  "compilerOptions": {
    "target": "ES2022",
    "lib": ["ES2022"],
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "types": ["node"],
    "strict": true,
    "exactOptionalPropertyTypes": true,
    "noUncheckedIndexedAccess": true,
    "allowImportingTsExtensions": true,
    "noEmit": true,
    "skipLibCheck": true
  },
  "include": ["examples"]
}
JSON
cat > next-app/next.config.mjs <<'JS'
import { fileURLToPath } from "node:url";
export default {
  poweredByHeader: false,
  turbopack: { root: fileURLToPath(new URL("..", import.meta.url)) },
};
JS
cat > next-app/tsconfig.json <<'JSON'
{
  "compilerOptions": {
    "target": "ES2022",
    "lib": ["dom", "dom.iterable", "esnext"],
    "strict": true,
    "exactOptionalPropertyTypes": true,
    "noEmit": true,
    "module": "esnext",
    "moduleResolution": "bundler",
    "allowImportingTsExtensions": true,
    "isolatedModules": true,
    "skipLibCheck": true,
    "jsx": "react-jsx",
    "plugins": [{ "name": "next" }]
  },
  "include": ["**/*.ts", ".next/types/**/*.ts"],
  "exclude": ["node_modules", ".next"]
}
JSON
echo "== installing the tarball with the frameworks a user brings"
npm install --no-audit --no-fund --loglevel=error "$tarball" \
  express@5 fastify@5 koa@3 hono@4 @hono/node-server next@16 react@19 react-dom@19 \
  openid-client@6 redis@5 pg@8 @modelcontextprotocol/server@2 \
  typescript@5 tsx @types/node@20 @types/express@5 @types/koa@3 @types/react@19 @types/pg@8 >/dev/null

echo "== importing every export"
node -e '
const pkg = require("portcullis/package.json");
(async () => {
  for (const path of Object.keys(pkg.exports)) {
    if (path === "./package.json") continue;
    await import(path === "." ? "portcullis" : `portcullis/${path.slice(2)}`);
  }
  console.log(`${Object.keys(pkg.exports).length - 1} exports imported`);
})().catch((error) => { console.error(error); process.exit(1); });
'

echo "== compiling every export's declarations (lib ES2022 + @types/node, no DOM lib)"
mkdir -p types-check
node -e '
const pkg = require("portcullis/package.json");
const lines = Object.keys(pkg.exports).filter((p) => p !== "./package.json").map((p, i) =>
  `export * as m${i} from "${p === "." ? "portcullis" : `portcullis/${p.slice(2)}`}";`);
require("node:fs").writeFileSync("types-check/index.ts", `${lines.join("\n")}\n`);
'
# Options a user computes may be undefined: under exactOptionalPropertyTypes the types must say so.
cat > types-check/optional.ts <<'TS'
import { authz, basicAuth, createPasswordEncoder, login, newHandler, passwordCredentials, sessions } from "portcullis";
const production: boolean | undefined = process.env.NODE_ENV === "production" ? true : undefined;
const realm: string | undefined = process.env.REALM;
const credentials = passwordCredentials({ findUser: () => undefined, passwordEncoder: createPasswordEncoder() });
export const handler = newHandler(() => new Response("ok"), {
  session: sessions({ secure: production }),
  authentication: basicAuth({ credentials, realm, required: false }),
  login: login({ credentials, successRedirect: process.env.HOME_PAGE }),
  trustProxy: process.env.BEHIND_PROXY ? 1 : undefined,
  authorization: authz.routes([authz.anyRequest().authenticated()]),
});
TS
cat > types-check/tsconfig.json <<'JSON'
{
  "extends": "../tsconfig.json",
  "compilerOptions": { "noUncheckedIndexedAccess": false, "skipLibCheck": false },
  "include": ["index.ts", "optional.ts"]
}
JSON
# Only Portcullis's declarations are judged: some frameworks' own need the DOM lib.
if npx tsc -p types-check/tsconfig.json | grep -e '^node_modules/portcullis/' -e '^types-check/'; then
  echo "the shipped declarations do not compile without the DOM lib, or refuse undefined options" >&2
  exit 1
fi

echo "== compiling the quick starts"
npx tsc -p tsconfig.json

status() { curl -s -o /dev/null -w "%{http_code}" "$@" || true; }
check() {
  local name=$1 file=$2 port=$3
  PORT=$port node --import tsx "$file" >"$work/$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 100); do
    [ "$(status "http://127.0.0.1:$port/public/hello")" != "000" ] && break
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$name: the server exited" >&2
      cat "$work/$name.log" >&2
      exit 1
    fi
    sleep 0.2
  done
  local public protected anonymous admin refused
  public=$(status "http://127.0.0.1:$port/public/hello")
  protected=$(status -u alice:demo-alice "http://127.0.0.1:$port/")
  anonymous=$(status "http://127.0.0.1:$port/")
  admin=$(status -u ada:demo-ada "http://127.0.0.1:$port/admin/panel")
  refused=$(status -u alice:demo-alice "http://127.0.0.1:$port/admin/panel")
  kill "$pid" 2>/dev/null || true
  echo "$name: public $public, signed in $protected, anonymous $anonymous, admin $admin, admin refused $refused"
  if [ "$public" != 200 ] || [ "$protected" != 200 ] || [ "$anonymous" != 401 ] || [ "$admin" != 200 ] || [ "$refused" != 403 ]; then
    cat "$work/$name.log" >&2
    exit 1
  fi
}
# The Hono quick start: its own user and routes.
PORT=3300 node --import tsx examples/quickstart/server.ts >"$work/quickstart.log" 2>&1 &
for _ in $(seq 1 100); do [ "$(status http://127.0.0.1:3300/public/hello)" != "000" ] && break; sleep 0.2; done
quick="$(status http://127.0.0.1:3300/public/hello) $(status -u ada:change-me-ada http://127.0.0.1:3300/) $(status http://127.0.0.1:3300/) $(status -u ada:change-me-ada http://127.0.0.1:3300/billing/invoices)"
echo "hono quick start: public, signed in, anonymous, billing without BILLING: $quick"
[ "$quick" = "200 200 401 403" ] || { cat "$work/quickstart.log" >&2; exit 1; }

grep -q PORTCULLIS_NO_CLIENT_ADDRESS "$work/quickstart.log" && { cat "$work/quickstart.log" >&2; exit 1; }

echo "== the agents quick start, approved in Chromium"
(cd "$repo" && node --import tsx test/support/agents-quickstart-cli.ts "$project")

check express examples/express/server.ts 3301
check fastify examples/fastify/server.ts 3302
check koa examples/koa/server.ts 3303
check node examples/node/server.ts 3304

echo "== building the Next.js example against the package (next build, strict TypeScript)"
NEXT_TELEMETRY_DISABLED=1 npx next build next-app >"$work/next-build.log" 2>&1 || { cat "$work/next-build.log" >&2; exit 1; }
NEXT_TELEMETRY_DISABLED=1 npx next start next-app -H 127.0.0.1 -p 3305 >"$work/next.log" 2>&1 &
for _ in $(seq 1 150); do [ "$(status http://127.0.0.1:3305/public/hello)" != "000" ] && break; sleep 0.2; done
next="$(status http://127.0.0.1:3305/public/hello) $(status -u alice:demo-alice http://127.0.0.1:3305/) $(status http://127.0.0.1:3305/) $(status -u ada:demo-ada http://127.0.0.1:3305/admin/panel) $(status -u alice:demo-alice http://127.0.0.1:3305/admin/panel)"
echo "next: public, signed in, anonymous, admin, admin refused: $next"
[ "$next" = "200 200 401 200 403" ] || { cat "$work/next.log" >&2; exit 1; }
echo "tarball check passed"
