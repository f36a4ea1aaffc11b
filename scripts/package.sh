#!/usr/bin/env bash
# Builds the Debian package of Berth from the release build:
#   scripts/package.sh        -> build/release/package/berth_<version>_<arch>.deb (its path is printed)
# (cmake/Packaging.cmake has the layout.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh release >/dev/null
rm -rf build/release/package
(cd build/release && cpack -G DEB >/dev/null)
ls build/release/package/berth_*.deb
