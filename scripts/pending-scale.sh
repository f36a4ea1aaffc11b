#!/usr/bin/env bash
# The service with a standing queue, at full size: `berth serve` with NODES
# virtual nodes (8 GPUs each, SQLite store on loopback, --speedup 1 so no job
# ends during the run), under POLICY (default the service's default,
# topology). Two windows of SECONDS each, both with CLIENTS submitters
# (`berth_loadgen`, jobs of 1 or 2 GPUs, an hour long) and two readers, one
# that GETs /metrics and one /v1/jobs (the default page), again and again:
#   empty    - on the empty cluster (every submission starts at once);
#   pending  - after JOBS more submissions have filled the cluster and left the
#              rest pending: the same submitters, with the queue standing.
# Prints one JSON line per window: submissions/s and latency, pass count and
# p50/p99 (histogram bucket bounds) of wall and CPU time, pending and running
# jobs, each reader's p50/p99/max latency, and the daemon's RSS.
# Usage: scripts/pending-scale.sh [NODES JOBS SECONDS CLIENTS]   (default 12500 170000 30 16)
# With the default sizes about 150,000 jobs are pending in the second window.
# POLICY=fairshare etc. picks the policy; SERVE_ARGS adds flags to `berth serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
NODES="${1:-12500}"
JOBS="${2:-170000}"
WINDOW="${3:-30}"
CLIENTS="${4:-16}"
POLICY="${POLICY:-topology}"
BERTH="${BERTH:-build/release/apps/berth/berth}"
LOADGEN="${LOADGEN:-build/release/tests/berth_loadgen}"
. "tests/service/serve_lib.sh"
serve_start "$BERTH" pending-scale-token --cluster "${NODES}x8:H100/leaf=32/spine=16" --virtual-nodes --speedup 1 \
  --policy "$POLICY" --max-connections-per-client 1024 ${SERVE_ARGS:-}

window() {  # $1: name
  curl -sf "$URL/metrics" > "$WORK/before"
  "$LOADGEN" --server "$URL" --token "$TOKEN" --count 1000000 --concurrency "$CLIENTS" --prefix "$1" \
    --max-seconds "$WINDOW" > "$WORK/submits" &
  local submitters=$!
  "$LOADGEN" --server "$URL" --concurrency 1 --max-seconds "$WINDOW" --read "/metrics" > "$WORK/metrics_reader" &
  local metrics_reader=$!
  "$LOADGEN" --server "$URL" --concurrency 1 --max-seconds "$WINDOW" --read "/v1/jobs" > "$WORK/jobs_reader"
  wait "$submitters" "$metrics_reader"
  curl -sf "$URL/metrics" > "$WORK/after"
  local rss
  rss=$(awk '/VmRSS/ { print $2 }' "/proc/$SERVER_PID/status")
  python3 - "$1" "$WORK/before" "$WORK/after" "$WORK/submits" "$WORK/metrics_reader" "$WORK/jobs_reader" "$rss" <<'PY'
import json, sys
name, before, after, submits, metrics_reader, jobs_reader, rss = sys.argv[1:]
def parse(path):
    m = {}
    for line in open(path):
        if line.startswith('#') or not line.strip(): continue
        k, v = line.rsplit(' ', 1)
        m[k] = float(v)
    return m
b, a = parse(before), parse(after)
d = lambda k: a.get(k, 0) - b.get(k, 0)
def hist(metric):
    return sorted((float(k.split('le="')[1].split('"')[0]) if 'Inf' not in k else float('inf'), d(k))
                  for k in a if k.startswith(metric + '_bucket'))
count = d('berth_scheduling_pass_seconds_count')
def q(p, bs):
    for bound, cum in bs:
        if count and cum >= p * count: return bound
    return None
wall, cpu = hist('berth_scheduling_pass_seconds'), hist('berth_scheduling_pass_cpu_seconds')
print(json.dumps({
    'window': name, 'submits': json.load(open(submits)), 'passes': int(count),
    'pass_p50_s_le': q(0.5, wall), 'pass_p99_s_le': q(0.99, wall),
    'pass_mean_s': d('berth_scheduling_pass_seconds_sum') / count if count else None,
    'pass_cpu_p99_s_le': q(0.99, cpu),
    'pending': int(sum(v for k, v in a.items() if k.startswith('berth_queue_pending_jobs'))),
    'running': int(sum(v for k, v in a.items() if k.startswith('berth_queue_running_jobs'))),
    'metrics_reader': json.load(open(metrics_reader)), 'jobs_reader': json.load(open(jobs_reader)),
    'rss_kb': int(rss)}))
PY
}
window empty
echo "submitting $JOBS jobs to $NODES nodes..." >&2
"$LOADGEN" --server "$URL" --token "$TOKEN" --count "$JOBS" --concurrency "$CLIENTS" --prefix fill --max-seconds 900 >&2
sleep 5  # let the queue settle
window pending
