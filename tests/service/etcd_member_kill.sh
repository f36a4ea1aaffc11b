#!/usr/bin/env bash
# One etcd member's death is not a Berth failover. A 3-member etcd cluster
# with etcd's default raft timing (heartbeat 100 ms, election 1 s) on
# loopback; two `berth serve` replicas, the leader A talking first to the
# member that leads etcd (the worst case: etcd must elect a new leader too).
# A client submits jobs to A one after the other; the etcd leader member is
# SIGKILLed. Checks: A never steps down and stays ready, B stays a standby,
# writes resume, every acknowledged job is there once. Prints etcd's own
# election time (until a surviving member names a new leader) and the
# longest gap between two acknowledged submissions around the kill (the
# write unavailability Berth users see).
# Ports are random free ones; every process started here is killed and the
# temp folder removed on exit. Without etcd this fails, unless
# BERTH_SKIP_ETCD=1 (then it skips: status 77).
# Usage: etcd_member_kill.sh BERTH
set -euo pipefail
BERTH="$1"

source "$(dirname "$0")/etcd_cluster.sh"
require_etcd

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "--- $f (last lines)"; tail -n 15 "$f"; }; done
  exit 1
}
now() { date +%s.%N; }

ETCD_TIMING="--heartbeat-interval 100 --election-timeout 1000" start_etcd_cluster 3
IFS=, read -r -a EPS <<< "$ENDPOINTS"
# member_id and leader of one member's view (hex-free decimal strings from the gateway).
status_of() { curl -s --max-time 1 -X POST -d '{}' "$1/v3/maintenance/status" || true; }
field() { grep -o "\"$1\":\"[0-9]*\"" | head -n 1 | cut -d'"' -f4; }
LEADER_IDX=""
for _ in $(seq 1 100); do
  for i in 0 1 2; do
    st=$(status_of "${EPS[$i]}")
    id=$(echo "$st" | grep -o '"member_id":"[0-9]*"' | cut -d'"' -f4)
    lead=$(echo "$st" | grep -o '"leader":"[0-9]*"' | cut -d'"' -f4)
    if [ -n "$id" ] && [ "$id" = "$lead" ]; then LEADER_IDX=$i; LEADER_ID=$id; break 2; fi
  done
  sleep 0.1
done
[ -n "$LEADER_IDX" ] || fail "no etcd leader found"
ORDERED="${EPS[$LEADER_IDX]}"
for i in 0 1 2; do [ "$i" = "$LEADER_IDX" ] || ORDERED+=",${EPS[$i]}"; done
echo "etcd: 3 members; member $LEADER_IDX (${EPS[$LEADER_IDX]}) leads etcd and is the first endpoint"

REPLICA_STORE="$ORDERED"
REPLICA_CLUSTER="16x8:H100/leaf=4"
start_replica A
wait_ready "$URL_A" 20 || fail "A did not become ready"
start_replica B
sleep 0.5
[ "$(readyz "$URL_B")" = 503 ] || fail "B should be a standby"

# Sequential submissions for a bounded time: "end_time code id" per line.
(
  end=$(( $(date +%s) + 14 ))
  i=0
  while [ "$(date +%s)" -lt "$end" ]; do
    i=$((i + 1))
    out=$(curl -s -w ' %{http_code}' --max-time 10 -X POST \
      -d "{\"name\":\"mk-$i\",\"idempotency_key\":\"mk-$i\",\"groups\":[{\"count\":1,\"gpus\":1}]}" \
      "$URL_A/v1/jobs" || echo " 000")
    code=${out##* }
    id=$(echo "$out" | grep -o '"id":[0-9]*' | cut -d: -f2 || true)
    echo "$(now) $code ${id:-0} mk-$i"
    sleep 0.02
  done
) > "$WORK/submits" &
LOOP=$!
PIDS+=("$LOOP")
sleep 4
KILLED=${ETCD_PIDS[$LEADER_IDX]}
kill -9 "$KILLED"
T0=$(now)
# etcd's own election: until a surviving member names another leader.
ELECTED=""
for _ in $(seq 1 200); do
  for i in 0 1 2; do
    [ "$i" = "$LEADER_IDX" ] && continue
    lead=$(status_of "${EPS[$i]}" | grep -o '"leader":"[0-9]*"' | cut -d'"' -f4 || true)
    if [ -n "$lead" ] && [ "$lead" != 0 ] && [ "$lead" != "$LEADER_ID" ]; then ELECTED=$(now); break 2; fi
  done
  sleep 0.05
done
[ -n "$ELECTED" ] || fail "etcd elected no new leader"
ETCD_ELECTION=$(awk -v a="$T0" -v b="$ELECTED" 'BEGIN { printf "%.2f", b - a }')
wait "$LOOP" || true

grep -q '"event":"stepp' "$WORK/A.log" && fail "A stepped down after one etcd member died: $(grep '"event":"stepp' "$WORK/A.log")"
kill -0 "$PID_A" 2>/dev/null || fail "A exited"
[ "$(readyz "$URL_A")" = 200 ] || fail "A is not ready after the member kill"
[ "$(readyz "$URL_B")" = 503 ] || fail "B took over: a Berth failover happened"
TOTAL=$(wc -l < "$WORK/submits")
OK=$(awk '$2 == 201 || $2 == 200' "$WORK/submits" | wc -l)
BAD=$(awk '$2 != 201 && $2 != 200' "$WORK/submits" | wc -l)
AFTER=$(awk -v t="$T0" '$1 > t + 0 && ($2 == 201 || $2 == 200)' "$WORK/submits" | wc -l)
[ "$AFTER" -ge 5 ] || fail "writes did not resume after the kill ($AFTER acknowledged after it)"
# The longest wait between two acknowledgements that spans the kill.
GAP=$(awk -v t="$T0" '($2 == 201 || $2 == 200) { if (prev != "" && $1 > t && $1 - prev > max) max = $1 - prev; prev = $1 } END { printf "%.2f", max }' "$WORK/submits")
# Every acknowledged job is there, once.
MISSING=0
while read -r _ code id name; do
  case "$code" in 200|201) ;; *) continue ;; esac
  got=$(curl -s --max-time 5 "$URL_A/v1/jobs/$id" | grep -o "\"name\":\"$name\"" || true)
  [ -n "$got" ] || MISSING=$((MISSING + 1))
done < "$WORK/submits"
[ "$MISSING" = 0 ] || fail "$MISSING acknowledged jobs are missing"
echo "member kill: etcd elected a new leader after $ETCD_ELECTION s; Berth leader A stayed (no step-down, B standby);" \
  "$OK of $TOTAL submissions acknowledged ($BAD refused), $AFTER after the kill; longest gap between acknowledgements" \
  "after the kill: $GAP s; every acknowledged job present"
