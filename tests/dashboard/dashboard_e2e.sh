#!/usr/bin/env bash
# The dashboard in Debian's Chromium, driven by playwright-core (e2e.mjs):
#   dashboard_e2e.sh BERTH SOURCE_DIR OUT_DIR
# Installs playwright-core from package-lock.json (npm ci) when node_modules
# lacks it; skips (77) only when chromium or node/npm are absent. Screenshots
# go to OUT_DIR.
set -euo pipefail
BERTH="$1"
SRC="$2"
OUT="$3"
HERE="$SRC/tests/dashboard"
CHROMIUM="${BERTH_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ]; then echo "SKIP: no $CHROMIUM (apt-get install chromium)"; exit 77; fi
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then echo "SKIP: no node/npm"; exit 77; fi
if [ ! -f "$HERE/node_modules/playwright-core/package.json" ]; then
  echo "installing playwright-core (npm ci in $HERE)"
  (cd "$HERE" && timeout 300 npm ci --no-audit --no-fund --loglevel=error)
fi
mkdir -p "$OUT"
exec timeout 420 node "$HERE/e2e.mjs" --berth "$BERTH" --src "$SRC" --out "$OUT" --chromium "$CHROMIUM"
