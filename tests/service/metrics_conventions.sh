#!/usr/bin/env bash
# /metrics of a real `berth serve` (virtual nodes, a job run and a 404 served)
# against Prometheus' conventions: `promtool check metrics` (Debian's
# prometheus package) when it is installed, and these checks in any case:
# every sample has HELP and TYPE; `_total` only on counters and every
# counter ends in `_total`; no gauge named like a counter; the labels the
# docs promise (gpu_type, method/handler/code, outcome, build_info); every
# metric deploy/grafana-berth.json queries exists.
#   tests/service/metrics_conventions.sh BERTH_BINARY
set -euo pipefail
BERTH="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=serve_lib.sh
. "$HERE/serve_lib.sh"
serve_start "$BERTH" metrics-token --cluster 4x8:H100/leaf=2 --virtual-nodes --speedup 1000
echo '{"name":"m","duration_s":10,"groups":[{"count":1,"gpus":2}]}' |
  "$BERTH" submit --server "$URL" --token-file "$WORK/token" - >/dev/null
curl -s "$URL/no/such/path" >/dev/null || true
for _ in $(seq 1 100); do
  curl -s "$URL/metrics" | grep -q 'berth_jobs_finished_total{outcome="succeeded"} 1' && break
  sleep 0.1
done
curl -s "$URL/metrics" > "$WORK/metrics"
python3 - "$WORK/metrics" "$HERE/../../deploy/grafana-berth.json" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
types, helps, problems = {}, set(), []
for line in text.splitlines():
    if line.startswith("# TYPE "):
        _, _, name, kind = line.split(" ", 3)
        types[name] = kind
    elif line.startswith("# HELP "):
        helps.add(line.split(" ", 3)[2])
for line in text.splitlines():
    if not line or line.startswith("#"):
        continue
    name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    family = name if name in types else base
    if family not in types:
        problems.append("no TYPE for " + name)
        continue
    if family not in helps:
        problems.append("no HELP for " + family)
for name, kind in types.items():
    if kind == "counter" and not name.endswith("_total"):
        problems.append("counter without _total: " + name)
    if kind != "counter" and name.endswith("_total"):
        problems.append(kind + " named like a counter: " + name)
for want in ['berth_build_info{version="', 'berth_gpus_capacity{gpu_type="H100"} 32',
             'berth_gpus_allocated{gpu_type="H100"}', 'berth_jobs_finished_total{outcome="succeeded"} 1',
             'berth_http_requests_total{method="POST",handler="/v1/jobs",code="201"} 1',
             'berth_http_requests_total{method="GET",handler="none",code="404"} 1',
             'berth_admission_wait_seconds_count 1', 'process_resident_memory_bytes ', 'process_cpu_seconds_total ',
             '# TYPE berth_queue_guaranteed_gpus gauge', 'berth_queue_used_gpus{queue="', 'berth_queue_borrowed_gpus{queue="',
             'berth_queue_pending_jobs{queue="']:
    if want not in text:
        problems.append("missing: " + want)
# Every metric the Grafana dashboard queries exists.
dash = json.load(open(sys.argv[2]))
names = set(re.findall(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)", text, re.M)) | set(types)
for panel in dash["panels"]:
    for t in panel["targets"]:
        for m in re.findall(r"\b((?:berth|process)_[a-z0-9_]+)", t["expr"]):
            if m not in names:
                problems.append("dashboard panel '%s' queries %s, which /metrics lacks" % (panel["title"], m))
for p in problems:
    print("FAIL " + p)
print("metrics: %d families, %d problems" % (len(types), len(problems)))
sys.exit(1 if problems else 0)
PY
if command -v promtool >/dev/null; then
  if ! promtool check metrics < "$WORK/metrics" > "$WORK/promtool.txt" 2>&1; then
    cat "$WORK/promtool.txt"
    echo "FAIL promtool check metrics"
    exit 1
  fi
  echo "promtool check metrics: ok"
else
  echo "promtool not installed: its check skipped"
fi
echo "ok"
