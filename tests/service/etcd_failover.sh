#!/usr/bin/env bash
# High availability with real processes: a 3-member etcd cluster on loopback
# and two `berth serve` replicas on it.
#  1. A leads; B is a standby: /readyz 503 naming A, writes 503.
#  2. A burst of submissions to A; SIGKILL A mid-burst. B takes over (the
#     seconds are printed) and holds every job A acknowledged, exactly once.
#  3. A is restarted (A2, a standby). SIGSTOP B, the leader, mid-burst: its
#     lease expires and A2 takes over. Submissions sent to B while it is
#     stopped are answered only after SIGCONT: none may be acknowledged (B's
#     writes are refused by the fence), B must step down (exit status 3), and
#     A2 must hold none of them but every job B acknowledged. In etcd, the
#     log's terms never go back.
#  4. SIGTERM the leader A2: it resigns, and a standby takes over at once.
# Ports are random free ones; data lives in a temp folder; every process
# started here is killed and the folder removed on exit, also on failure.
# Without etcd this fails, unless BERTH_SKIP_ETCD=1 (then it skips: status 77).
# Usage: etcd_failover.sh BERTH LOADGEN
set -euo pipefail
BERTH="$1"
LOADGEN="$2"

source "$(dirname "$0")/etcd_cluster.sh"
require_etcd

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do
    kill -CONT "$p" 2>/dev/null || true
    kill -9 "$p" 2>/dev/null || true
  done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
[ -n "${BERTH_KEEP_LOGS:-}" ] && trap 'cp "$WORK"/*.log "$BERTH_KEEP_LOGS"/ 2>/dev/null; cleanup' EXIT
fail() {
  echo "FAIL: $*"
  for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "--- $f (last lines)"; tail -n 15 "$f"; }; done
  exit 1
}
# Drops a process that has ended from the cleanup list.
forget() {
  local keep=() p
  for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}
now() { date +%s.%N; }
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# --- a 3-member etcd cluster
start_etcd_cluster 3
echo "etcd: 3 members at $ENDPOINTS"

# --- replicas
REPLICA_STORE="$ENDPOINTS"
REPLICA_CLUSTER="64x8:H100/leaf=8"
submit() {  # URL NAME [BODY_FILE] -> HTTP status
  curl -s -o "${3:-/dev/null}" -w '%{http_code}\n' --max-time 20 -X POST \
    -d "{\"name\":\"$2\",\"idempotency_key\":\"$2\",\"groups\":[{\"count\":1,\"gpus\":1}]}" "$1/v1/jobs" || true
}

start_replica A
wait_ready "$URL_A" 20 || fail "A did not become ready"
start_replica B
sleep 0.5
[ "$(readyz "$URL_B")" = 503 ] || fail "standby B answers readyz $(readyz "$URL_B"), expected 503"
curl -s "$URL_B/readyz" | grep -q "$URL_A" || fail "standby B does not name the leader A ($URL_A): $(curl -s "$URL_B/readyz")"
[ "$(submit "$URL_B" to-standby)" = 503 ] || fail "a write to standby B was not refused with 503"
echo "A leads at $URL_A; B is a standby at $URL_B (readyz: $(curl -s "$URL_B/readyz"))"

# --- SIGKILL the leader mid-burst
COUNT=3000
"$LOADGEN" --server "$URL_A" --count "$COUNT" --concurrency 8 --prefix ha --acked "$WORK/acked" \
  --max-seconds 60 --max-conn-errors 5 > "$WORK/load1.json" &
LOAD_PID=$!
PIDS+=("$LOAD_PID")
for _ in $(seq 1 1000); do
  [ -f "$WORK/acked" ] && [ "$(wc -l < "$WORK/acked")" -ge 300 ] && break
  sleep 0.01
done
kill -9 "$PID_A"
T0=$(now)
wait "$PID_A" 2>/dev/null || true
forget "$PID_A"
wait "$LOAD_PID" || true
forget "$LOAD_PID"
ACKED=$(wc -l < "$WORK/acked")
[ "$ACKED" -ge 300 ] || fail "too few acknowledged before the kill: $ACKED"
[ "$ACKED" -lt "$COUNT" ] || fail "the kill came after the burst ended; nothing was tested"
wait_ready "$URL_B" 20 || fail "B did not take over within 20 s of SIGKILL"
TAKEOVER_KILL=$(seconds_since "$T0")
echo "SIGKILL of the leader after $ACKED acknowledged submissions: B ready after $TAKEOVER_KILL s"
grep -o '"event":"recovered"[^}]*' "$WORK/B.log" || true
"$LOADGEN" --server "$URL_B" --verify --count "$COUNT" --prefix ha --acked "$WORK/acked" \
  || fail "acknowledged jobs lost or duplicated after the takeover"

# --- SIGSTOP the leader mid-burst: its lease expires, A2 takes over, B is fenced
start_replica A2
sleep 0.3
[ "$(readyz "$URL_A2")" = 503 ] || fail "restarted A2 should be a standby"
"$LOADGEN" --server "$URL_B" --count 20000 --concurrency 8 --prefix dep --acked "$WORK/acked-dep" \
  --max-seconds 40 --max-conn-errors 3 > "$WORK/load2.json" &
LOAD_PID=$!
PIDS+=("$LOAD_PID")
for _ in $(seq 1 1000); do
  [ -f "$WORK/acked-dep" ] && [ "$(wc -l < "$WORK/acked-dep")" -ge 200 ] && break
  sleep 0.01
done
kill -STOP "$PID_B"
T1=$(now)
ACKED_BEFORE_STOP=$(wc -l < "$WORK/acked-dep")
wait_ready "$URL_A2" 20 || fail "A2 did not take over within 20 s of SIGSTOP of B"
TAKEOVER_STOP=$(seconds_since "$T1")
echo "SIGSTOP of the leader B after $ACKED_BEFORE_STOP acknowledged submissions: A2 ready after $TAKEOVER_STOP s (lease TTL 4 s)"
# Submissions to the deposed B while it is stopped: answered after SIGCONT.
DEPOSED=5
CURLS=()
for i in $(seq 1 "$DEPOSED"); do
  submit "$URL_B" "deposed-$i" "$WORK/deposed-$i.body" > "$WORK/deposed-$i.code" &
  CURLS+=($!)
  PIDS+=($!)
done
sleep 0.5
kill -CONT "$PID_B"
wait_exit=""
for _ in $(seq 1 300); do
  if ! kill -0 "$PID_B" 2>/dev/null; then wait_exit=1; break; fi
  sleep 0.05
done
[ -n "$wait_exit" ] || fail "deposed B did not step down (still running 15 s after SIGCONT)"
set +e
wait "$PID_B"
B_STATUS=$?
set -e
forget "$PID_B"
[ "$B_STATUS" = 3 ] || fail "deposed B exited with status $B_STATUS, expected 3 (stepped down)"
grep -q '"event":"stepping_down"' "$WORK/B.log" || fail "B did not log stepping_down"
for p in "${CURLS[@]}"; do
  wait "$p" || true
  forget "$p"
done
for i in $(seq 1 "$DEPOSED"); do
  code=$(cat "$WORK/deposed-$i.code")
  case "$code" in 200 | 201) fail "deposed B acknowledged deposed-$i (HTTP $code)" ;; esac
done
echo "deposed B: HTTP status of the submissions sent to it while stopped (000 = closed as it exited):" \
  $(cat "$WORK"/deposed-*.code)
cat "$WORK"/deposed-*.body 2>/dev/null | sort | uniq -c || true
# Whether B's own writes reach etcd before it notices the lapsed lease is a
# race; when they do, the fence refuses them.
echo "deposed B: writes refused by the fence in etcd: $(grep -c '"error":"fenced: ' "$WORK/B.log" || true)"
grep -o '"event":"\(stepped_down\|stepping_down\)"[^}]*' "$WORK/B.log" || true
wait "$LOAD_PID" || true
forget "$LOAD_PID"
echo "burst to B: $(cat "$WORK/load2.json")"
LISTED=$(curl -s "$URL_A2/v1/jobs?limit=10000")
if echo "$LISTED" | grep -q '"name":"deposed-'; then fail "a submission to the deposed leader reached the store"; fi
ATTEMPTED=$(grep -o '"attempted":[0-9]*' "$WORK/load2.json" | cut -d: -f2)
ACKED_DEP=$(wc -l < "$WORK/acked-dep")
"$LOADGEN" --server "$URL_A2" --verify --count "$ATTEMPTED" --prefix dep --acked "$WORK/acked-dep" \
  || fail "jobs acknowledged by B lost or duplicated after the second takeover"
"$LOADGEN" --server "$URL_A2" --verify --count "$COUNT" --prefix ha --acked "$WORK/acked" \
  || fail "acknowledged jobs lost or duplicated after the second takeover"
# The log in etcd: terms never go back in revision order, so nothing was
# written under B's term after A2's began.
TERMS=$(ETCDCTL_API=3 "$ETCDCTL" --endpoints="$ENDPOINTS" get --prefix /berth/log/ --print-value-only |
  awk '/^[1-5] -?[0-9]+ -?[0-9]+ [0-9]+ [0-9]+$/ {
         n++; if ($4 < last) back++;
         if ($4 != last) { order = order (order == "" ? "" : ", ") $4; last = $4 }
         count[$4]++ }
       END { printf "%d records, %d out of term order; terms in log order:", n, back + 0;
             split(order, t, ", "); for (i = 1; i in t; i++) printf " %s (%d records)", t[i], count[t[i]] }')
echo "log in etcd: $TERMS"
case "$TERMS" in *", 0 out of term order;"*) ;; *) fail "records out of term order: $TERMS" ;; esac

# --- a clean stop hands over at once
start_replica B2
sleep 0.3
[ "$(readyz "$URL_B2")" = 503 ] || fail "B2 should be a standby"
kill -TERM "$PID_A2"
T2=$(now)
wait_ready "$URL_B2" 20 || fail "B2 did not take over after A2 stopped"
TAKEOVER_TERM=$(seconds_since "$T2")
set +e
wait "$PID_A2"
A2_STATUS=$?
set -e
forget "$PID_A2"
[ "$A2_STATUS" = 0 ] || fail "A2 exited with status $A2_STATUS after SIGTERM"
echo "SIGTERM of the leader A2: B2 ready after $TAKEOVER_TERM s"

echo "etcd failover: OK (takeover after SIGKILL ${TAKEOVER_KILL} s, after SIGSTOP ${TAKEOVER_STOP} s," \
  "after SIGTERM ${TAKEOVER_TERM} s;" \
  "$ACKED + $ACKED_DEP acknowledged, all present once; the deposed leader acknowledged nothing after its" \
  "successor took over and exited 3)"
