#!/usr/bin/env bash
# Integration test with real processes: GPU-level failure reports and the
# admin node actions (docs/agent.md "GPU failures", docs/service.md "Admin
# API"). `berth serve` on a free loopback port with one `berth agent` (4 fake
# GPUs, --gpu-health-file). A running job's GPU is reported failed: the job is
# requeued and runs again on the node's other GPUs; the server is SIGKILLed
# and restarted on its store mid-run, learns the failed GPU again from the
# next heartbeat, and the job still finishes. Then drain, quarantine and the
# return to service through the CLI. Everything started is stopped by PID.
# Usage: gpu_health_e2e.sh BERTH
set -euo pipefail
BERTH="$1"
WORK=$(mktemp -d)
SPID="" APID=""
cleanup() {
  [ -n "$APID" ] && kill "$APID" 2>/dev/null || true
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- serve.log"; tail -20 "$WORK/serve.log" || true; echo "--- agent.log"; tail -20 "$WORK/agent.log" || true; exit 1; }
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
echo user-token-e2e > "$WORK/token"
echo node-token-e2e > "$WORK/node.token"
cat > "$WORK/node.yaml" <<Y
name: gpu-a
cpu_milli: 8000
memory_mib: 16384
gpus:
  - {index: 0, type: H100, memory_mib: 81920}
  - {index: 1, type: H100, memory_mib: 81920}
  - {index: 2, type: H100, memory_mib: 81920}
  - {index: 3, type: H100, memory_mib: 81920}
Y
serve() {
  "$BERTH" serve --listen "127.0.0.1:$PORT" --store "sqlite:$WORK/berth.db" --token-file "$WORK/token" \
    --node-token-file "$WORK/node.token" --heartbeat-interval 0.2s --heartbeat-timeout 5s >> "$WORK/serve.log" 2>&1 &
  SPID=$!
  for _ in $(seq 100); do curl -sf "$URL/readyz" > /dev/null && return 0; sleep 0.1; done
  fail "berth serve did not become ready"
}
# wait_for SECONDS CMD...: polls CMD every 0.1 s.
wait_for() {
  local n=$(( $1 * 10 )); shift
  for _ in $(seq "$n"); do "$@" > /dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}
job() { curl -sf "$URL/v1/jobs/$1"; }
field() { python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"; }
export BERTH_SERVER="$URL" BERTH_TOKEN_FILE="$WORK/token"

serve
"$BERTH" agent --server "$URL" --node-token-file "$WORK/node.token" --config "$WORK/node.yaml" \
  --work-dir "$WORK/agent" --gpu-health-file "$WORK/failed-gpus" > "$WORK/agent.log" 2>&1 &
APID=$!
wait_for 20 sh -c "curl -sf $URL/v1/nodes | grep -q gpu-a" || fail "the agent did not register"

echo '{"name":"train","groups":[{"count":1,"gpus":2}],"command":["sleep","6"]}' > "$WORK/a.json"
A=$("$BERTH" submit "$WORK/a.json")
wait_for 20 sh -c "curl -sf $URL/v1/jobs/$A | grep -q '\"state\":\"running\"'" || fail "job $A did not start"
BAD=$(job "$A" | field 'j["placements"][0]["gpus"][0]')
echo "job $A runs on GPUs $(job "$A" | field 'j["placements"][0]["gpus"]'); GPU $BAD fails"
echo "$BAD" > "$WORK/failed-gpus"
requeued_elsewhere() {
  job "$A" | field "'ok' if j['requeues'] == 1 and j['state'] == 'running' and $BAD not in j['placements'][0]['gpus'] else exit(1)"
}
wait_for 20 requeued_elsewhere || fail "job $A was not requeued onto healthy GPUs: $(job "$A")"
echo "job $A requeued and running on GPUs $(job "$A" | field 'j["placements"][0]["gpus"]')"
[ "$(curl -sf "$URL/v1/nodes" | field 'j["nodes"][0]["failed_gpus"]')" = "[$BAD]" ] || fail "failed_gpus not shown"
# (Captured first: grep -q closing the pipe early would fail curl under pipefail.)
metrics=$(curl -sf "$URL/metrics")
grep -q '^berth_gpu_failures_total 1$' <<< "$metrics" || fail "berth_gpu_failures_total is not 1"

# The server dies mid-run and comes back on its store: nothing is lost.
kill -9 "$SPID"; wait "$SPID" 2>/dev/null || true
serve
has_failed_gpu() { [ "$(curl -sf "$URL/v1/nodes" | field 'j["nodes"][0]["failed_gpus"]')" = "[$BAD]" ]; }
wait_for 20 has_failed_gpu || fail "the restarted server did not learn the failed GPU again"
wait_for 30 sh -c "curl -sf $URL/v1/jobs/$A | grep -q '\"state\":\"succeeded\"'" || fail "job $A did not finish: $(job "$A")"
echo "after a server restart: job $A $(job "$A" | field 'j["state"]'), requeues $(job "$A" | field 'j["requeues"]')"
[ "$(job "$A" | field 'j["requeues"]')" = 1 ] || fail "job $A was requeued again"
: > "$WORK/failed-gpus"
healed() { [ "$(curl -sf "$URL/v1/nodes" | field 'j["nodes"][0]["failed_gpus"]')" = "[]" ]; }
wait_for 20 healed || fail "the GPU did not come back"

# Drain: no new work; returning the node lets the waiting job start.
out=$("$BERTH" drain gpu-a) && grep -q "draining" <<< "$out" || fail "berth drain"
echo '{"name":"b","groups":[{"count":1,"gpus":1}],"command":["sleep","30"]}' > "$WORK/b.json"
B=$("$BERTH" submit "$WORK/b.json")
sleep 1
[ "$(job "$B" | field 'j["state"]')" = pending ] || fail "job $B started on a draining node"
out=$("$BERTH" nodes --unhealthy) && grep -q "1 draining" <<< "$out" || fail "berth nodes --unhealthy does not show the drain"
out=$("$BERTH" nodes unquarantine gpu-a) && grep -q "drain lifted" <<< "$out" || fail "berth nodes unquarantine"
wait_for 20 sh -c "curl -sf $URL/v1/jobs/$B | grep -q '\"state\":\"running\"'" || fail "job $B did not start after the drain"
# Quarantine: the running job goes back to the queue at once.
out=$("$BERTH" quarantine gpu-a) && grep -q "quarantined" <<< "$out" || fail "berth quarantine"
wait_for 20 sh -c "curl -sf $URL/v1/jobs/$B | grep -q '\"requeues\":1'" || fail "job $B was not requeued by the quarantine"
[ "$(job "$B" | field 'j["state"]')" = pending ] || fail "job $B runs on a quarantined node"
out=$("$BERTH" unquarantine gpu-a) && grep -q "quarantine lifted" <<< "$out" || fail "berth unquarantine"
wait_for 20 sh -c "curl -sf $URL/v1/jobs/$B | grep -q '\"state\":\"running\"'" || fail "job $B did not start again"
# Bad input and no token: refused, nothing changes.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer user-token-e2e" -d '{"deadline_s":-1}' \
  "$URL/v1/admin/nodes/gpu-a/drain")
[ "$code" = 400 ] || fail "a negative deadline: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/v1/admin/nodes/gpu-a/quarantine")
[ "$code" = 401 ] || fail "a quarantine without the token: $code"
[ "$(job "$B" | field 'j["state"]')" = running ] || fail "job $B stopped"
grep -q '"action":"quarantine"' "$WORK/serve.log" || fail "no audit line for the quarantine"
echo "gpu health e2e: OK"
