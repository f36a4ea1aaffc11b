#!/usr/bin/env bash
# Measures what a read flood does to scheduling and node health, at full size:
# `berth serve` with NODES virtual nodes (8 GPUs each) on loopback, JOBS jobs
# submitted (1 or 2 GPUs each, an hour long, run SPEEDUP times faster (default
# 30: two minutes), so jobs keep ending and waiting ones start), then two
# windows of SECONDS each with the same trickle of submissions (so passes run
# over the waiting queue): a quiet one, and one with READERS clients reading
# job lists (10,000 per page), nodes, queues and metrics. Prints one JSON line
# per window: passes, pass p50/p99 (histogram bucket bounds) of wall and CPU
# time, loop turns (p99, the longest so far, slow turns logged), passes
# preempted / blocked / page-faulted, nodes marked down,
# requeues, late heartbeats, graces, the longest heartbeat gap, and the readers'
# figures. Needs curl and python3.
# Usage: scripts/read-flood.sh [NODES JOBS READERS SECONDS]   (default 12500 100000 64 60)
# SPEEDUP=1: no job ends in the windows, so the passes of both windows do the
# same work (one submission that does not fit): the fair comparison of pass times.
# SERVE_ARGS adds flags to `berth serve` (e.g. SERVE_ARGS="--scheduler-nice 0").
set -euo pipefail
cd "$(dirname "$0")/.."
NODES="${1:-12500}"
JOBS="${2:-100000}"
READERS="${3:-64}"
WINDOW="${4:-60}"
SPEEDUP="${SPEEDUP:-30}"
BERTH="${BERTH:-build/release/apps/berth/berth}"
LOADGEN="${LOADGEN:-build/release/tests/berth_loadgen}"
. "tests/service/serve_lib.sh"
# Every client here shares the address 127.0.0.1: the per-client connection
# limit (64 by default) is raised so that the readers and the submitter fit.
serve_start "$BERTH" read-flood-token --cluster "${NODES}x8:H100/leaf=32" --virtual-nodes --speedup "$SPEEDUP" --max-connections-per-client 1024 ${SERVE_ARGS:-}

echo "submitting $JOBS jobs to $NODES nodes..." >&2
"$LOADGEN" --server "$URL" --token "$TOKEN" --count "$JOBS" --concurrency 16 --prefix flood --max-seconds 600 >&2
sleep 10  # let the queue settle

window() {  # $1: name, $2: readers (0: none)
  curl -sf "$URL/metrics" > "$WORK/before"
  "$LOADGEN" --server "$URL" --token "$TOKEN" --count 1000000 --concurrency 1 --prefix "trickle-$1" \
    --max-seconds "$WINDOW" > "$WORK/trickle" &
  local trickle=$!
  if [ "$2" -gt 0 ]; then
    "$LOADGEN" --server "$URL" --concurrency "$2" --max-seconds "$WINDOW" \
      --read "/v1/jobs?limit=10000,/v1/jobs?state=running&limit=10000,/v1/jobs?state=pending&limit=10000,/v1/nodes,/v1/queues,/metrics,/v1/jobs/1/why" \
      > "$WORK/readers"
  else
    echo '{}' > "$WORK/readers"
  fi
  wait "$trickle"
  curl -sf "$URL/metrics" > "$WORK/after"
  python3 - "$1" "$WORK/before" "$WORK/after" "$WORK/trickle" "$WORK/readers" <<'PY'
import json, sys
name, before, after, trickle, readers = sys.argv[1:]
def parse(path):
    m = {}
    for line in open(path):
        if line.startswith('#') or not line.strip(): continue
        k, v = line.rsplit(' ', 1)
        m[k] = float(v)
    return m
b, a = parse(before), parse(after)
d = lambda k: a.get(k, 0) - b.get(k, 0)
buckets = sorted((float(k.split('le="')[1].split('"')[0]) if 'Inf' not in k else float('inf'), d(k))
                 for k in a if k.startswith('berth_scheduling_pass_seconds_bucket'))
count = d('berth_scheduling_pass_seconds_count')
def hist(name):
    return sorted((float(k.split('le="')[1].split('"')[0]) if 'Inf' not in k else float('inf'), d(k))
                  for k in a if k.startswith(name + '_bucket'))
cpu_buckets = hist('berth_scheduling_pass_cpu_seconds')
turn_buckets = hist('berth_loop_turn_seconds')
turns = d('berth_loop_turn_seconds_count')
def tq(p):
    for bound, cum in turn_buckets:
        if turns and cum >= p * turns: return bound
    return None
def q(p, bs=None):
    for bound, cum in (buckets if bs is None else bs):
        if count and cum >= p * count: return bound
    return None
print(json.dumps({
    'window': name, 'passes': int(count), 'pass_splits': int(d('berth_scheduling_pass_splits_total')),
    'pass_p50_s_le': q(0.5), 'pass_p99_s_le': q(0.99),
    'pass_mean_s': d('berth_scheduling_pass_seconds_sum') / count if count else None,
    'pass_cpu_p50_s_le': q(0.5, cpu_buckets), 'pass_cpu_p99_s_le': q(0.99, cpu_buckets),
    'turns': int(turns), 'turn_p99_s_le': tq(0.99), 'turn_max_s': a.get('berth_loop_turn_max_seconds'),
    'slow_turns': int(d('berth_loop_turns_slow_total')),
    'passes_preempted': int(d('berth_scheduling_passes_preempted_total')),
    'passes_blocked': int(d('berth_scheduling_passes_blocked_total')),
    'passes_faulted': int(d('berth_scheduling_passes_faulted_total')),
    'nodes_marked_down': int(d('berth_node_failures_total')), 'requeues': int(d('berth_jobs_requeued_total')),
    'late_heartbeats': int(d('berth_heartbeats_late_total')), 'graces': int(d('berth_heartbeat_graces_total')),
    'heartbeat_gap_max_s': a.get('berth_heartbeat_gap_max_seconds'), 'nodes_up': int(a.get('berth_nodes_up', 0)),
    'running': int(sum(v for k, v in a.items() if k.startswith('berth_queue_running_jobs'))),
    'pending': int(sum(v for k, v in a.items() if k.startswith('berth_queue_pending_jobs'))),
    'decisions': int(d('berth_decisions_total')), 'finished': int(d('berth_jobs_finished_total{outcome="succeeded"}')),
    'trickle': json.load(open(trickle)), 'readers': json.load(open(readers))}))
PY
}
window quiet 0
window flood "$READERS"
grep -c '"event":"node_down"' "$WORK/serve.log" | sed 's/^/node_down lines in the log: /' >&2 || true
