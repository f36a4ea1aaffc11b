#!/usr/bin/env bash
# Configures and builds one preset (default: release). Usage: scripts/build.sh [release|debug|asan]
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET="${1:-release}"
# ccache keys on paths relative to the clone, so every clone on a machine shares one cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
cmake --preset "$PRESET" >/dev/null
cmake --build --preset "$PRESET" -j "$(nproc)"
