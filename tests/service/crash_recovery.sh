#!/usr/bin/env bash
# Integration test with real processes: start `berth serve` on the embedded
# store on a loopback port, burst submissions, SIGKILL the daemon mid-burst,
# restart it on the same store, and check that every acknowledged job is
# present exactly once (and that retrying every submission duplicates none).
# Also checks auth (401 without the token) and readiness.
# Usage: crash_recovery.sh BERTH LOADGEN
set -euo pipefail
BERTH="$1"
LOADGEN="$2"
WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill "$SERVER_PID"; wait "$SERVER_PID" || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
echo "secret-token-123" > "$WORK/token"
COUNT=5000

start_server() {  # $1: log file. Sets SERVER_PID and URL.
  "$BERTH" serve --listen 127.0.0.1:0 --store "sqlite:$WORK/data/berth.db" --cluster "64x8:H100/leaf=8" \
    --token-file "$WORK/token" 2> "$1" &
  SERVER_PID=$!
  local port=""
  for _ in $(seq 1 200); do
    port=$(grep -o '"event":"listening"[^}]*' "$1" 2>/dev/null | grep -o '"port":[0-9]*' | cut -d: -f2 || true)
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || { echo "server did not start"; cat "$1"; exit 1; }
  URL="http://127.0.0.1:$port"
  for _ in $(seq 1 100); do
    curl -sf "$URL/readyz" > /dev/null && return 0
    sleep 0.05
  done
  echo "server not ready"; exit 1
}

start_server "$WORK/serve1.log"
# Writes need the token; reads do not.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{"name":"x","groups":[{"count":1}]}' "$URL/v1/jobs")
[ "$code" = 401 ] || { echo "expected 401 without a token, got $code"; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/jobs")
[ "$code" = 200 ] || { echo "expected open reads, got $code"; exit 1; }

# Burst, and kill -9 the daemon once a few hundred submissions are acknowledged.
"$LOADGEN" --server "$URL" --token "$(cat "$WORK/token")" --count "$COUNT" --concurrency 8 --prefix crash \
  --acked "$WORK/acked" --max-seconds 120 --max-conn-errors 5 > "$WORK/load1.json" &
LOAD_PID=$!
for _ in $(seq 1 600); do
  [ -f "$WORK/acked" ] && [ "$(wc -l < "$WORK/acked")" -ge 300 ] && break
  sleep 0.02
done
kill -9 "$SERVER_PID"
wait "$SERVER_PID" || true
SERVER_PID=""
wait "$LOAD_PID"
echo "before the crash: $(cat "$WORK/load1.json")"
ACKED=$(wc -l < "$WORK/acked")
[ "$ACKED" -ge 300 ] || { echo "too few acknowledged before the kill: $ACKED"; exit 1; }
[ "$ACKED" -lt "$COUNT" ] || { echo "the kill came after the burst ended; nothing was tested"; exit 1; }

start_server "$WORK/serve2.log"
grep '"event":"recovered"' "$WORK/serve2.log"
"$LOADGEN" --server "$URL" --token "$(cat "$WORK/token")" --verify --count "$COUNT" --prefix crash --acked "$WORK/acked"
kill "$SERVER_PID"
wait "$SERVER_PID"
SERVER_PID=""
echo "crash recovery: OK ($ACKED acknowledged before SIGKILL, all present once)"
