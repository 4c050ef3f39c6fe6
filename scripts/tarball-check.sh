#!/usr/bin/env bash
# Packs the package from a fresh copy of the repository (its tracked files, never
# built: `npm pack` must build), installs the tarball into projects outside the
# repository made the way users make them, and checks:
# - every export imports at run time, and its declarations compile with Node's
#   types alone (lib ES2022, no DOM lib, exactOptionalPropertyTypes);
# - `npm init -y` (CommonJS): the README's quick start, the framework examples and the
#   recipes run with `npx tsx` as the guides show them, each answering as documented;
# - `npm init -y` + `npm pkg set type=module` + `tsc --init` (its defaults, `types: ["node"]`):
#   every guide's file compiles with `npx tsc --noEmit`; the agents quick start runs end to
#   end in Chromium (Approve, then Deny), the device flow and the Redis store example serve;
# - `create-next-app`: the Next.js guide's files build with `next build` and serve;
# - the first-hour messages: a missing optional peer is one line naming the package, an
#   Express route before the chain warns, a dropped Secure cookie explains itself outside
#   production, and on Next.js the client-address warning names trustProxy.
# The CommonJS and ES module projects share one install, in the folder above them.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
mkdir -p "$repo/scratch"
# Inside the repository, so the copy finds node_modules one level up, as a clone that ran
# `npm install` has it; the copy holds no dist/ whatever the working tree holds.
fresh="$(mktemp -d "$repo/scratch/pack-XXXXXX")"
# Every server runs in a session of its own (npx, tsx and node under it), stopped as a whole.
servers=()
stop_servers() {
  for group in "${servers[@]}"; do kill -- "-$group" 2>/dev/null || true; done
  servers=()
}
trap 'stop_servers; rm -rf "$work" "$fresh"' EXIT
export NEXT_TELEMETRY_DISABLED=1 npm_config_audit=false npm_config_fund=false npm_config_loglevel=error
started=$SECONDS
lap() { echo "   ($(( SECONDS - started )) s)"; }

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
lap

status() { curl -s -o /dev/null -w "%{http_code}" "$@" || true; }
# serve <name> <dir> <port> <command...>: starts a server in <dir> and waits until it listens.
serve() {
  local name=$1 dir=$2 port=$3
  shift 3
  if [ "$(status "http://127.0.0.1:$port/")" != "000" ]; then
    echo "$name: port $port already answers: something else listens there" >&2
    exit 1
  fi
  PORT=$port setsid sh -c 'cd "$1" && shift && exec "$@"' sh "$dir" "$@" >"$work/$name.log" 2>&1 &
  local pid=$!
  servers+=("$pid")
  for _ in $(seq 1 150); do
    [ "$(status "http://127.0.0.1:$port/")" != "000" ] && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$name: the server exited" >&2
      cat "$work/$name.log" >&2
      exit 1
    fi
    sleep 0.2
  done
  echo "$name: the server did not listen" >&2
  cat "$work/$name.log" >&2
  exit 1
}
# expect <name> <wanted> <got>: fails with the server's log when they differ.
expect() {
  echo "$1: $3"
  [ "$2" = "$3" ] || { echo "$1: wanted $2" >&2; cat "$work/${1%% *}.log" >&2; exit 1; }
}

echo "== one install for the npm init -y projects: the tarball, the frameworks a user brings, tsx, typescript"
projects="$work/projects"
mkdir -p "$projects" && cd "$projects" && npm init -y >/dev/null
npm install "$tarball" \
  express@5 fastify@5 koa@3 hono@4 @hono/node-server next@16 openid-client@6 redis@5 pg@8 \
  @modelcontextprotocol/server@2 \
  tsx typescript@5 @types/node@20 @types/express@5 @types/koa@3 @types/pg@8 >/dev/null
lap

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
cat > types-check/package.json <<'JSON'
{ "type": "module" }
JSON
cat > types-check/tsconfig.json <<'JSON'
{
  "compilerOptions": {
    "target": "ES2022",
    "lib": ["ES2022"],
    "module": "NodeNext",
    "types": ["node"],
    "strict": true,
    "exactOptionalPropertyTypes": true,
    "noEmit": true
  },
  "include": ["index.ts", "optional.ts"]
}
JSON
# Only Portcullis's declarations are judged: some frameworks' own need the DOM lib.
npx tsc -p types-check/tsconfig.json >"$work/types-check.log" || true
if grep -e 'node_modules/portcullis/' -e '^index.ts' -e '^optional.ts' "$work/types-check.log"; then
  echo "the shipped declarations do not compile without the DOM lib, or refuse undefined options" >&2
  exit 1
fi
lap

echo "== npm init -y (CommonJS): the quick start, the framework examples and the recipes with npx tsx"
cjs="$projects/cjs"
mkdir -p "$cjs" && cd "$cjs" && npm init -y >/dev/null
[ "$(npm pkg get type)" = '"commonjs"' ] || { echo "npm init -y wrote no type commonjs" >&2; exit 1; }
cp "$repo/examples/quickstart/server.ts" server.ts
cp -r "$repo/examples/shared" "$repo/examples/express" "$repo/examples/fastify" \
  "$repo/examples/koa" "$repo/examples/node" "$repo/examples/recipes" .
serve quickstart "$cjs" 3300 npx tsx server.ts
expect "quickstart (public, signed in, anonymous, billing without BILLING)" "200 200 401 403" \
  "$(status http://127.0.0.1:3300/public/hello) $(status -u ada:change-me-ada http://127.0.0.1:3300/) $(status http://127.0.0.1:3300/) $(status -u ada:change-me-ada http://127.0.0.1:3300/billing/invoices)"
! grep -q PORTCULLIS_NO_CLIENT_ADDRESS "$work/quickstart.log" || { cat "$work/quickstart.log" >&2; exit 1; }
port=3301
for framework in express fastify koa node; do
  serve "$framework" "$cjs" $port npx tsx "$framework/server.ts"
  expect "$framework (public, signed in, anonymous, admin, admin refused)" "200 200 401 200 403" \
    "$(status http://127.0.0.1:$port/public/hello) $(status -u alice:demo-alice http://127.0.0.1:$port/) $(status http://127.0.0.1:$port/) $(status -u ada:demo-ada http://127.0.0.1:$port/admin/panel) $(status -u alice:demo-alice http://127.0.0.1:$port/admin/panel)"
  ! grep -q PORTCULLIS_ROUTE_BEFORE_CHAIN "$work/$framework.log" || { cat "$work/$framework.log" >&2; exit 1; }
  port=$((port + 1))
done
serve csp "$cjs" 3310 npx tsx recipes/csp.ts
expect "csp (a page with its policy)" "200" "$(status http://127.0.0.1:3310/)"
serve session-data "$cjs" 3311 npx tsx recipes/session-data.ts
expect "session-data (the page)" "200" "$(status http://127.0.0.1:3311/)"
serve sign-in "$cjs" 3312 npx tsx recipes/sign-in.ts
expect "sign-in (anonymous)" "401" "$(status http://127.0.0.1:3312/)"
serve basic-auth "$cjs" 3313 npx tsx recipes/basic-auth.ts
expect "basic-auth (sam, anonymous)" "200 401" \
  "$(status -u sam:change-me-sam http://127.0.0.1:3313/reports) $(status http://127.0.0.1:3313/reports)"
serve api-key "$cjs" 3314 env REPORTING_KEY=a-reporting-key-for-the-check npx tsx recipes/api-key.ts
expect "api-key (the key, none)" "200 401" \
  "$(status -H 'x-api-key: a-reporting-key-for-the-check' http://127.0.0.1:3314/reports) $(status http://127.0.0.1:3314/reports)"
stop_servers
lap

echo "== the first-hour messages, from the package as installed"
mkdir -p checks
cat > checks/route-before-chain.ts <<'TS'
import express from "express";
import { authz, newChain } from "portcullis";
import { expressMiddleware } from "portcullis/adapters/express";
const app = express();
app.get("/reports", (_req, res) => res.send("every report")); // before the chain: answers anyone
app.use(expressMiddleware(newChain({ authorization: authz.routes([]) })));
const server = app.listen(0, "127.0.0.1", async () => {
  const { port } = server.address() as { port: number };
  await fetch(`http://127.0.0.1:${port}/nothing`);
  server.close();
});
TS
npx tsx checks/route-before-chain.ts >"$work/route-before-chain.log" 2>&1
grep -q "PORTCULLIS_ROUTE_BEFORE_CHAIN: GET /reports was registered before expressMiddleware" "$work/route-before-chain.log" ||
  { echo "an Express route before the chain did not warn" >&2; cat "$work/route-before-chain.log" >&2; exit 1; }
echo "express: a route before the chain warns"
cat > checks/dropped-cookie.ts <<'TS'
import { authz, csrf, csrfToken, login, newHandler, passwordCredentials, createPasswordEncoder } from "portcullis";
const credentials = passwordCredentials({ findUser: () => undefined, passwordEncoder: createPasswordEncoder() });
const handler = newHandler(async (request) => new Response(await csrfToken(request)), {
  csrf: csrf(),
  login: login({ credentials }),
  browserDenials: { signInPath: "/login" },
  authorization: authz.routes([authz.match("GET", "/login").permitAll()]),
});
async function main() {
  const token = await (await handler(new Request("http://intranet.example:3000/login"))).text();
  // The browser dropped the Secure cookie on plain HTTP: the form comes back without it.
  const page = await handler(new Request("http://intranet.example:3000/login", {
    method: "POST",
    headers: { "sec-fetch-mode": "navigate", "sec-fetch-site": "same-origin", "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: token, username: "alice", password: "pw" }),
  }));
  console.log(page.status, (await page.text()).includes("secure: false") ? "explained" : "silent");
}
main();
TS
expect "dropped Secure cookie (development, production)" "403 explained 403 silent" \
  "$(npx tsx checks/dropped-cookie.ts 2>>"$work/dropped.log") $(NODE_ENV=production npx tsx checks/dropped-cookie.ts 2>>"$work/dropped.log")"
# A project with the package alone: the peers Portcullis loads itself are missing.
bare="$work/bare"
mkdir -p "$bare" && cd "$bare" && npm init -y >/dev/null && npm install "$tarball" >/dev/null
node -e '
try { require("portcullis/stores/redis").createRedisClient("redis://127.0.0.1:6379"); }
catch (error) { console.log(`${error.code} ${error.message}`); }
' >"$work/bare-redis.log" 2>&1
expect "missing redis" "ERR_MISSING_PEER portcullis/stores/redis needs redis, which is not installed: npm install redis" \
  "$(cat "$work/bare-redis.log")"
cat > mcp.mjs <<'JS'
import { agentAuth } from "portcullis/agentauth";
import { mcpEndpoint } from "portcullis/mcp";
import { MemoryClientStore } from "portcullis/oauth2";
const agents = await agentAuth({
  issuer: "http://127.0.0.1:3000",
  clients: new MemoryClientStore(),
  capabilities: [{ name: "noop", description: "Nothing.", handler: () => ({}) }],
  mcp: {},
});
try {
  await mcpEndpoint(agents);
  console.log("built");
} catch (error) {
  console.log(`${error.code} ${error.message}`);
}
JS
node mcp.mjs >"$work/bare-mcp.log" 2>"$work/bare-mcp.err"
expect "missing MCP SDK (the error building the endpoint)" "ERR_MISSING_PEER portcullis/mcp needs @modelcontextprotocol/server, which is not installed: npm install @modelcontextprotocol/server" \
  "$(cat "$work/bare-mcp.log")$(cat "$work/bare-mcp.err")"
lap

echo "== npm init -y + type module + tsc --init: every guide's file compiles with TypeScript's defaults"
esm="$projects/esm"
mkdir -p "$esm" && cd "$esm" && npm init -y >/dev/null && npm pkg set type=module
npx tsc --init >/dev/null
# The one change the new page asks for: Node's types (the guides read process.env).
node -e '
const fs = require("node:fs");
const text = fs.readFileSync("tsconfig.json", "utf8");
if (!/"types": \[\]/.test(text)) { console.error("tsc --init wrote no \"types\": []"); process.exit(1); }
fs.writeFileSync("tsconfig.json", text.replace(/"types": \[\]/, "\"types\": [\"node\"]"));
'
mkdir -p examples
cp -r "$repo/examples/quickstart" "$repo/examples/shared" "$repo/examples/express" \
  "$repo/examples/fastify" "$repo/examples/koa" "$repo/examples/node" "$repo/examples/recipes" \
  "$repo/examples/agents-quickstart" "$repo/examples/device" "$repo/examples/stores" examples/
npx tsc --noEmit
echo "tsc --noEmit: $(find examples -name '*.ts' | wc -l | tr -d ' ') files compiled"
lap

echo "== the agents quick start, approved and denied in Chromium (an ES module project)"
(cd "$repo" && node --import tsx test/support/agents-quickstart-cli.ts "$esm")
lap

echo "== the device flow and the Redis store example (an ES module project, top-level await)"
serve device "$esm" 3321 npx tsx examples/device/server.ts
expect "device (metadata, the approval page anonymous)" "200 401" \
  "$(status http://127.0.0.1:3321/.well-known/oauth-authorization-server) $(status http://127.0.0.1:3321/device)"
serve stores-redis "$esm" 3320 npx tsx examples/stores/redis.ts
expect "stores-redis (anonymous)" "401" "$(status http://127.0.0.1:3320/)"
stop_servers
lap

echo "== create-next-app: the Next.js guide's files, next build, next start"
cd "$work"
# --empty: the default template's fonts come from Google, which this machine cannot reach.
npx --yes create-next-app@16 next-app --ts --app --no-eslint --no-tailwind --no-src-dir \
  --use-npm --disable-git --no-agent-feedback --yes --empty --skip-install >/dev/null
cd next-app
npm install "$tarball" >/dev/null
mkdir -p lib app/api/me app/admin/panel
cp "$repo/examples/next/lib/security.ts" lib/security.ts
cp "$repo/examples/next/proxy.ts" proxy.ts
cp "$repo/examples/next/app/api/me/route.ts" app/api/me/route.ts
cp "$repo/examples/next/app/admin/panel/route.ts" app/admin/panel/route.ts
# The guide: where `/` is a page, the matcher's `.+` becomes `.*`.
sed -i 's#|_next/image).+)#|_next/image).*)#' proxy.ts
grep -q '_next/image).\*)' proxy.ts || { echo "the proxy's matcher changed: update this check" >&2; exit 1; }
npx next build >"$work/next-build.log" 2>&1 || { cat "$work/next-build.log" >&2; exit 1; }
lap
serve next "$work/next-app" 3330 npx next start -H 127.0.0.1 -p 3330
expect "next (/ anonymous, / alice, unmatched, api/me anonymous, api/me sam, admin sam, admin ada)" \
  "401 200 401 401 200 403 200" \
  "$(status http://127.0.0.1:3330/) $(status -u alice:demo-alice http://127.0.0.1:3330/) $(status http://127.0.0.1:3330/nothing/here) $(status http://127.0.0.1:3330/api/me) $(status -u sam:demo-sam http://127.0.0.1:3330/api/me) $(status -u sam:demo-sam http://127.0.0.1:3330/admin/panel) $(status -u ada:demo-ada http://127.0.0.1:3330/admin/panel)"
# A wrong password reaches the login throttle, which has no client address on Next.js.
status -u alice:wrong http://127.0.0.1:3330/api/me >/dev/null
for _ in $(seq 1 25); do grep -q PORTCULLIS_NO_CLIENT_ADDRESS "$work/next.log" && break; sleep 0.2; done
grep -q "PORTCULLIS_NO_CLIENT_ADDRESS.*on Next.js.*trustProxy" "$work/next.log" &&
  ! grep -q nodeServerClientAddress "$work/next.log" ||
  { echo "the client-address warning on Next.js does not name trustProxy" >&2; cat "$work/next.log" >&2; exit 1; }
echo "next: the client-address warning names trustProxy"
echo "tarball check passed in $(( SECONDS - started )) s"
