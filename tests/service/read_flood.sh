#!/usr/bin/env bash
# Integration test with real processes: a read flood must not hurt scheduling.
# Starts `berth serve` with 1,250 virtual nodes on a loopback port, submits a
# few thousand jobs (most run, some wait), then 16 clients read job lists,
# nodes, queues and metrics for 10 s while a trickle of submissions keeps the
# scheduler busy. Checks: no node marked down, no job requeued, every read
# answered, the daemon still serving; and the admin API (token required).
# Usage: read_flood.sh BERTH LOADGEN [NODES JOBS READERS SECONDS]
set -euo pipefail
BERTH="$1"
LOADGEN="$2"
NODES="${3:-1250}"
JOBS="${4:-6000}"
READERS="${5:-16}"
SECONDS_FLOOD="${6:-10}"
. "$(dirname "$0")/serve_lib.sh"
# Every client here shares the address 127.0.0.1: the per-client connection
# limit (64 by default) is raised so that the readers and the submitter fit.
serve_start "$BERTH" flood-token-456 --cluster "${NODES}x8:H100/leaf=32" --virtual-nodes --max-connections-per-client 1024

metric() { curl -sf "$URL/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }

"$LOADGEN" --server "$URL" --token "$TOKEN" --count "$JOBS" --concurrency 8 --prefix flood --max-seconds 120
# A trickle of submissions during the flood keeps passes running over the queue.
"$LOADGEN" --server "$URL" --token "$TOKEN" --count 1000000 --concurrency 1 --prefix trickle \
  --max-seconds "$SECONDS_FLOOD" > "$WORK/trickle.json" &
TRICKLE_PID=$!
"$LOADGEN" --server "$URL" --concurrency "$READERS" --max-seconds "$SECONDS_FLOOD" \
  --read "/v1/jobs?limit=10000,/v1/jobs?state=running&limit=10000,/v1/nodes,/v1/queues,/metrics,/v1/jobs/1/why" \
  > "$WORK/flood.json"
wait "$TRICKLE_PID"
echo "flood: $(cat "$WORK/flood.json")"
echo "trickle: $(cat "$WORK/trickle.json")"

down=$(metric berth_node_failures_total)
requeued=$(metric berth_jobs_requeued_total)
late=$(metric berth_heartbeats_late_total)
up=$(metric berth_nodes_up)
running=$(metric 'berth_queue_running_jobs{queue="q0"}')
echo "nodes down: $down, requeued: $requeued, late heartbeats: $late, nodes up: $up, running in q0: $running"
[ "$down" = 0 ] || { echo "FAIL: nodes were marked down during the read flood"; grep node_down "$WORK/serve.log" | head; exit 1; }
[ "$requeued" = 0 ] || { echo "FAIL: jobs were requeued during the read flood"; exit 1; }
[ "$up" = "$NODES" ] || { echo "FAIL: $up of $NODES nodes up"; exit 1; }
reads=$(grep -o '"reads":[0-9]*' "$WORK/flood.json" | cut -d: -f2)
errors=$(grep -o '"errors":[0-9]*' "$WORK/flood.json" | cut -d: -f2)
[ "$reads" -gt 0 ] && [ "$errors" = 0 ] || { echo "FAIL: reads $reads, errors $errors"; exit 1; }
curl -sf "$URL/healthz" > /dev/null || { echo "FAIL: not serving after the flood"; exit 1; }

# The admin API: the token is required; the list shows no unhealthy node.
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/admin/nodes")
[ "$code" = 401 ] || { echo "FAIL: admin list without a token: $code"; exit 1; }
body=$(curl -sf -H "Authorization: Bearer $TOKEN" "$URL/v1/admin/nodes")
echo "$body" | grep -q '"down":0' || { echo "FAIL: admin list: $body"; exit 1; }
code=$(curl -s -o /dev/null -w "%{http_code}" -X POST -d "" -H "Authorization: Bearer $TOKEN" \
  "$URL/v1/admin/nodes/no-such-node/unquarantine")
[ "$code" = 404 ] || { echo "FAIL: unquarantine of an unknown node: $code"; exit 1; }
grep -q '"event":"admin_action"' "$WORK/serve.log" || { echo "FAIL: no audit line"; exit 1; }
kill "$SERVER_PID"
wait "$SERVER_PID"
SERVER_PID=""
echo "read flood: OK"
