#!/usr/bin/env bash
# Bounded load on `berth serve` over etcd (loopback): for each client
# concurrency, a fresh etcd cluster of MEMBERS members and a fresh replica,
# COUNT distinct submissions from berth_loadgen, then one markdown row:
# submissions/s, p50/p99/max latency, records per commit, mean commit ms.
# Not run by ctest (it takes a minute or more); the figures are in
# docs/results/service.md.
# Usage: etcd_load.sh BERTH LOADGEN [MEMBERS=1] [COUNT=10000] [CONCURRENCIES="1 8 16 32"]
#        [CLUSTER=512x8:H100/leaf=32]
set -euo pipefail
BERTH="$1"
LOADGEN="$2"
MEMBERS="${3:-1}"
COUNT="${4:-10000}"
CONCURRENCIES="${5:-1 8 16 32}"
CLUSTER="${6:-512x8:H100/leaf=32}"

source "$(dirname "$0")/etcd_cluster.sh"
require_etcd

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}
trap 'cleanup; rm -rf "$WORK"' EXIT
fail() {
  echo "FAIL: $*"
  for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "--- $f (last lines)"; tail -n 5 "$f"; }; done
  exit 1
}
# One value of a Prometheus text exposition (first sample of NAME).
metric() { awk -v n="$1" '$1 == n { print $2; exit }' "$WORK/metrics"; }

echo "| etcd members | client threads | submissions/s | p50 ms | p99 ms | max ms | records per commit | mean commit ms |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for C in $CONCURRENCIES; do
  start_etcd_cluster "$MEMBERS"
  "$BERTH" serve --listen 127.0.0.1:0 --store "etcd:$ENDPOINTS" --cluster "$CLUSTER" 2> "$WORK/serve.log" &
  PIDS+=($!)
  port=""
  for _ in $(seq 1 200); do
    port=$(grep -o '"event":"listening"[^}]*' "$WORK/serve.log" | grep -o '"port":[0-9]*' | cut -d: -f2 || true)
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || fail "berth serve did not start: $(tail -n 5 "$WORK/serve.log")"
  URL="http://127.0.0.1:$port"
  for _ in $(seq 1 200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/readyz")" = 200 ] && break
    sleep 0.05
  done
  "$LOADGEN" --server "$URL" --count "$COUNT" --concurrency "$C" --prefix "c$C" --max-seconds 300 > "$WORK/load.json"
  curl -s "$URL/metrics" > "$WORK/metrics"
  awk -v m="$MEMBERS" -v c="$C" \
    -v rs="$(metric berth_store_commit_records_sum)" -v rc="$(metric berth_store_commit_records_count)" \
    -v cs="$(metric berth_store_commit_seconds_sum)" -v cc="$(metric berth_store_commit_seconds_count)" \
    -v j="$(cat "$WORK/load.json")" 'BEGIN {
      split(j, kv, /[,{}]/)
      for (i in kv) { split(kv[i], p, ":"); gsub(/"/, "", p[1]); v[p[1]] = p[2] }
      if (v["acked"] + 0 != v["attempted"] + 0) printf "(only %d of %d acknowledged) ", v["acked"], v["attempted"]
      printf "| %d | %d | %.0f | %.1f | %.1f | %.0f | %.1f | %.1f |\n", m, c, v["submissions_per_s"],
        v["latency_p50_ms"], v["latency_p99_ms"], v["latency_max_ms"], (rc > 0 ? rs / rc : 0), (cc > 0 ? 1000 * cs / cc : 0)
    }'
  cleanup
done
