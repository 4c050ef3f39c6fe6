#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests when it is missing.
# playwright-core drives it; no browser is downloaded by any npm package.
set -euo pipefail

browser=${PORTCULLIS_CHROMIUM:-/usr/bin/chromium}
if [ -x "$browser" ]; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "Chromium is missing at $browser and apt-get is not available; install Chromium and set PORTCULLIS_CHROMIUM" >&2
  exit 1
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi

echo "installing Debian's chromium for the browser tests"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq >/dev/null
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null
[ -x "$browser" ] || { echo "chromium did not install at $browser" >&2; exit 1; }
