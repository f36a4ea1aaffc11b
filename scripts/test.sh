#!/usr/bin/env bash
# Install, build and run every test (unit, scenario, integration). This is
# what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/kube-control-plane.sh build   # once per machine: kube-apiserver/kube-scheduler v1.20.2, cached
scripts/build.sh release
ctest --preset release -j "$(nproc)" --timeout 600
# Coverage-guided fuzzing of the parsers of untrusted input (clang, ASan,
# UBSan; its own build dir): 15 s per target, failing on any crash.
scripts/fuzz.sh 15
# The Debian package: built with CPack, installed, run from /usr/bin (version,
# a simulation from an empty directory, the service as its systemd unit starts
# it, systemd-analyze verify), then purged.
scripts/package-test.sh
