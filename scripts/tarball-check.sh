#!/usr/bin/env bash
# Installs the packed package into a fresh project outside the repository, the
# way a new user would, compiles the README's quick starts (the example files)
# with strict TypeScript (exactOptionalPropertyTypes, no DOM lib), runs each
# server and calls a public, a protected and an admin route. Fails when a
# dependency is missing from the package or a quick start stops compiling. The Next.js example
# is built with `next build` and served with `next start` against the installed package.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

(cd "$repo" && npm pack --pack-destination "$work" >/dev/null)
tarball="$(ls "$work"/portcullis-*.tgz)"

project="$work/project"
mkdir -p "$project/examples"
cp -r "$repo/examples/shared" "$repo/examples/express" "$repo/examples/fastify" \
  "$repo/examples/koa" "$repo/examples/node" "$repo/examples/quickstart" "$project/examples/"
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
    "lib": ["ES2023"],
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
  typescript@5 tsx @types/node@20 @types/express@5 @types/koa@3 @types/react@19 >/dev/null

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
