#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan in their own
# build directory, then runs each for a bounded time; fails on any crash,
# leak, timeout or out-of-memory.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 20)
# The corpus each run grows is kept in build/fuzz/corpus/NAME (seeds:
# fuzz/corpus/NAME); a crashing input is written to build/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-20}"
BUILD=build/fuzz
TARGETS=(fuzz_job_json fuzz_extender_json fuzz_cluster_yaml fuzz_queue_yaml fuzz_http_request)
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DBERTH_FUZZ=ON -DBERTH_BUILD_TESTS=OFF -DBERTH_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$BUILD" --target "${TARGETS[@]}" -j "$(nproc)"
mkdir -p "$BUILD/artifacts"
status=0
for t in "${TARGETS[@]}"; do
  name="${t#fuzz_}"
  corpus="$BUILD/corpus/$name"
  mkdir -p "$corpus"
  echo "fuzz: $t for ${SECONDS_PER_TARGET}s"
  if ! "$BUILD/fuzz/$t" "$corpus" "fuzz/corpus/$name" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 \
      -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$name-" \
      >"$BUILD/$t.log" 2>&1; then
    echo "fuzz: $t FAILED (log: $BUILD/$t.log)"
    grep -E "ERROR|SUMMARY|Test unit written" "$BUILD/$t.log" | head -5 || true
    status=1
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$BUILD/$t.log" | tr '\n' ' ' || true
  grep -E "^#[0-9]+.*(DONE|cov:)" "$BUILD/$t.log" | tail -1 || true
done
exit $status
